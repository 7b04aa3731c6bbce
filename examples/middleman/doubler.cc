// A middleman in a page (docs/gateway.md): GET /v1/double/{n} has inferd's
// `simple` model (add_sub) add n to itself and answers {"double": 2n}, with
// health, metrics, cancellation and a pool of channels from the middleman
// library. Built as `middleman-doubler` to keep the example compiling.
//   middleman-doubler INFERD_GRPC_URL [HTTP_PORT]
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "middleman/inferd_pool.h"
#include "middleman/service.h"

using namespace inferd;
using Async = middleman::InferdStub::async_interface;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: middleman-doubler INFERD_GRPC_URL [HTTP_PORT]\n";
    return 2;
  }
  middleman::Service::BlockShutdownSignals();
  middleman::Service service(
      {.name = "doubler",
       .http_port = static_cast<uint16_t>(argc > 2 ? std::atoi(argv[2]) : 9000)});
  middleman::InferdPool inferd({.url = argv[1], .channels = 2}, &service.metrics());

  service.Route("GET", "/v1/double/{}", [&](middleman::Request req, middleman::Responder out) {
    const int32_t n = std::atoi(req.params[0].c_str());
    inference::ModelInferRequest r;
    r.set_model_name("simple");
    for (const char* name : {"INPUT0", "INPUT1"}) {
      auto* in = r.add_inputs();
      in->set_name(name);
      in->set_datatype("INT32");
      in->add_shape(1);
      in->add_shape(16);
      std::string* data = r.add_raw_input_contents();
      data->assign(64, '\0');
      std::memcpy(data->data(), &n, 4);
    }
    inferd.Call<inference::ModelInferRequest, inference::ModelInferResponse>(
        &Async::ModelInfer, std::move(r), {.cancelled = req.http.cancelled},
        [&service, out](const grpc::Status& s, inference::ModelInferResponse& resp) {
          if (!s.ok()) return out->Send(middleman::ErrorResponse(middleman::FromGrpc(s)));
          int32_t twice = 0;
          std::memcpy(&twice, resp.raw_output_contents(0).data(), 4);
          service.Compute([out, twice] {  // compute-bound work belongs on this pool
            out->Send({200, "application/json", {}, "{\"double\":" + std::to_string(twice) + "}"});
          });
        });
  });
  if (!service.Start().ok()) return 1;
  std::cerr << "doubler: HTTP listening on " << service.http_port() << std::endl;
  middleman::Service::WaitForShutdownSignal();
  service.Stop();
}
