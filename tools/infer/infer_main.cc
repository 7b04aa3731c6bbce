// infer: a command-line client for KServe v2 servers (inferd, Triton), on
// libinferclient. See Usage() below and docs/clients.md.
#include <cstdio>
#include <functional>
#include <iostream>

#include "infer_cli.h"
#include "inferd/client/routing.h"

namespace inferd::cli {
namespace {

void PrintUsage() {
  std::cerr << R"(Usage: infer [-u HOST:PORT] [-i http|grpc] [-x VERSION] [--json] COMMAND [ARGS]
Commands:
  health                 server liveness and readiness (exit 1 unless both)
  metadata [MODEL]       server metadata, or a model's
  config MODEL           a model's configuration
  infer MODEL --input NAME:DATATYPE:SHAPE:VALUES ... | --input-json FILE
                         VALUES is a JSON array ([1,2,3]) or @FILE with the raw
                         little-endian bytes; SHAPE is D1,D2,...; --input-json
                         takes a KServe v2 JSON request ({"inputs": [...]})
      [--output NAME]... [--classification N] [--id ID]
  index                  the model repository's index
  load MODEL | unload MODEL
  stats [MODEL]          inference statistics (all models without MODEL)
Options:
  -u HOST:PORT   server (default localhost:8000, or localhost:8001 with -i grpc);
                 with -i grpc also xds:///NAME: the host of each call comes from
                 the xDS control plane in $GRPC_XDS_BOOTSTRAP (inferd-discovery),
                 model commands go to a host serving the model
  -i http|grpc   protocol (default http)
  -x VERSION     model version (default: the server's choice)
  --json         machine-readable JSON on stdout
TLS and headers (a deployment with --http-use-ssl/--grpc-use-ssl or restricted APIs):
  --ssl                   TLS (also: -u https://HOST:PORT with -i http)
  --ca FILE               PEM certificate authorities to trust (default: the system's);
                          also --root-certificates, --ca-certs
  --cert FILE, --key FILE client certificate chain and private key (mutual TLS);
                          also --certificate-chain/--cert-file, --private-key/--key-file
  --server-name NAME      name the server's certificate must carry (default: the host)
  --insecure              HTTPS: accept any server certificate (gRPC always verifies)
  -H 'NAME: VALUE'        header sent with every request (gRPC: metadata, name in lower
                          case; a restricted gRPC API wants triton-grpc-protocol-<key>)
                          repeatable
Exit codes: 0 ok, 1 the server reported an error, 2 bad usage or input, 3 unreachable.
)";
}

// Applies a TLS or header flag; false when `a` is not one. --ca, --cert,
// --key and --server-name imply --ssl.
bool ParseConnectionFlag(const std::string& a, const std::function<std::string()>& value,
                         client::ClientOptions& c) {
  client::TlsOptions& tls = c.tls;
  if (a == "--ssl") {
    tls.enabled = true;
  } else if (a == "--ca" || a == "--root-certificates" || a == "--ca-certs") {
    tls.ca_file = value();
  } else if (a == "--cert" || a == "--certificate-chain" || a == "--cert-file") {
    tls.cert_file = value();
  } else if (a == "--key" || a == "--private-key" || a == "--key-file") {
    tls.key_file = value();
  } else if (a == "--server-name") {
    tls.server_name = value();
  } else if (a == "--insecure") {
    tls.verify_peer = false;
    tls.verify_host = 0;
  } else if (a == "-H" || a == "--header") {
    client::Header h;
    client::ClientStatus st = client::ParseHeader(value(), h);
    if (!st.ok) throw CliError{kUsage, "-H: " + st.message};
    c.headers.push_back(std::move(h));
  } else {
    return false;
  }
  if (a != "-H" && a != "--header") tls.enabled = true;
  return true;
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw CliError{kUsage, "flag " + a + " needs a value"};
      return argv[++i];
    };
    if (ParseConnectionFlag(a, value, o.connection))
      continue;
    else if (a == "-u" || a == "--url")
      o.url = value();
    else if (a == "-i" || a == "--protocol")
      o.protocol = value();
    else if (a == "-x" || a == "--model-version")
      o.version = value();
    else if (a == "--json")
      o.json = true;
    else if (a == "--input")
      o.inputs.push_back(value());
    else if (a == "--input-json")
      o.input_json = value();
    else if (a == "--output")
      o.outputs.push_back(value());
    else if (a == "--id")
      o.request_id = value();
    else if (a == "--classification") {
      const std::string v = value();
      try {
        o.classification = std::stoi(v);
      } catch (const std::exception&) {
        o.classification = -1;
      }
      if (o.classification <= 0) throw CliError{kUsage, "--classification needs a count > 0"};
    } else if (a == "-h" || a == "--help") {
      PrintUsage();
      std::exit(0);
    } else if (a.size() > 1 && a[0] == '-') {
      throw CliError{kUsage, "unknown flag '" + a + "'"};
    } else if (o.command.empty()) {
      o.command = a;
    } else {
      o.args.push_back(a);
    }
  }
  if (o.command.empty()) throw CliError{kUsage, "no command given"};
  if (o.protocol != "http" && o.protocol != "grpc")
    throw CliError{kUsage, "-i must be http or grpc, not '" + o.protocol + "'"};
  if (o.url.empty()) o.url = o.protocol == "grpc" ? "localhost:8001" : "localhost:8000";
  if (o.protocol != "grpc" && inferd::client::IsXdsTarget(o.url))
    throw CliError{kUsage, "-u xds:///NAME needs -i grpc"};
  if (o.protocol == "grpc" && o.url.rfind("https://", 0) == 0)
    throw CliError{kUsage, "-u https:// is for HTTP; with -i grpc use --ssl and HOST:PORT"};
  return o;
}

}  // namespace
}  // namespace inferd::cli

int main(int argc, char** argv) {
  using namespace inferd::cli;
  Options o;
  try {
    o = Parse(argc, argv);
  } catch (const CliError& e) {
    std::cerr << "infer: " << e.message << "\n\n";
    PrintUsage();
    return e.code;
  }
  std::string error;
  auto client = inferd::client::MakeClient(o.protocol, o.url, o.connection, error);
  if (!client) {
    std::cerr << "infer: " << error << "\n";
    return kUsage;
  }
  try {
    return RunCommand(o, *client);
  } catch (const CliError& e) {
    std::cerr << "infer: " << e.message << "\n";
    return e.code;
  }
}
