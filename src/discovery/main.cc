// inferd-discovery: the xDS control plane of an inferd fleet
// (docs/discovery.md). Flags are listed by --help.
#include <grpcpp/health_check_service_interface.h>
#include <unistd.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "core/log.h"
#include "discovery/ads_server.h"
#include "discovery/discovery_loop.h"
#include "discovery/discovery_options.h"
#include "discovery/host_sources.h"
#include "discovery/host_union.h"
#include "discovery/xds_metrics.h"
#include "middleman/service.h"

namespace {

using namespace inferd;
using namespace inferd::discovery;

[[noreturn]] void Usage(const std::string& problem) {
  std::cerr << "inferd-discovery: " << problem << "\n" << kDiscoveryUsage;
  std::exit(2);
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "inferd-discovery";
  return name;
}

}  // namespace

int main(int argc, char** argv) {
  middleman::Service::BlockShutdownSignals();
  auto parsed = ParseDiscoveryFlags(std::vector<std::string>(argv + 1, argv + argc));
  if (!parsed.ok()) Usage(parsed.status().message());
  DiscoveryOptions o = std::move(*parsed);
  if (o.help) {
    std::cout << kDiscoveryUsage;
    return 0;
  }
  auto sources = MakeHostSources(o.sources);
  if (!sources.ok()) Usage(sources.status().message());

  AdsServer ads({.control_plane_id = o.control_plane_id.empty() ? HostName() : o.control_plane_id});
  middleman::ServiceOptions so;
  so.name = "discovery";
  so.http_address = o.http_address;
  so.http_port = static_cast<uint16_t>(o.http_port);
  so.grpc_address = o.xds_address;
  so.grpc_port = o.xds_port;
  so.compute_threads = 1;
  // grpc.health.v1 on the xDS port: SERVING while the server runs.
  ::grpc::EnableDefaultHealthCheckService(true);
  middleman::Service service(so);
  service.AddGrpcService(&ads);

  std::unique_ptr<DiscoveryLoop> loop;
  HostUnion hosts(sources->size(), [&loop](const HostSet&) {
    if (loop) loop->Wake();
  });
  loop = std::make_unique<DiscoveryLoop>(
      o.loop, [&hosts] { return hosts.Current(); },
      [&ads, &service](std::shared_ptr<const XdsSnapshot> snapshot) {
        ads.Publish(std::move(snapshot));
        UpdateXdsMetrics(ads.Counters(), service.metrics());
      },
      &service.metrics());

  service.SetReadiness(
      [&loop](const std::function<void(bool)>& answer) { answer(loop->HasPolled()); });
  service.Route("GET", "/v1/snapshot",
                [&loop, &ads](const middleman::Request&, const middleman::Responder& r) {
                  http::HttpResponse response;
                  response.status = 200;
                  response.content_type = "application/json";
                  response.body = SnapshotJson(loop->DumpJson(), ads.Stats());
                  r->Send(std::move(response));
                });
  Status s = service.Start();
  if (!s.ok()) {
    std::cerr << "inferd-discovery: " << s.message() << "\n";
    return 1;
  }
  for (size_t i = 0; i < sources->size(); ++i) {
    (*sources)[i]->Start(hosts.SlotCallback(i));
  }
  loop->Start();
  std::cerr << "inferd-discovery: xDS (ADS) on " << so.grpc_address << ":" << service.grpc_port()
            << ", HTTP on " << so.http_address << ":" << service.http_port() << ", "
            << sources->size() << " host source(s), polling every " << o.loop.poll_interval.count()
            << " ms" << std::endl;

  const int sig = middleman::Service::WaitForShutdownSignal();
  std::cerr << "inferd-discovery: signal " << sig << ", stopping" << std::endl;
  for (auto& source : *sources) source->Stop();
  loop->Stop();
  ads.Shutdown();
  service.Stop(std::chrono::milliseconds(1000));
  return 0;
}
