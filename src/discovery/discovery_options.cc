#include "discovery/discovery_options.h"

#include <charconv>
#include <map>

#include "middleman/inferd_pool.h"

namespace inferd::discovery {

const char kDiscoveryUsage[] =
    "usage: inferd-discovery --xds-port=PORT SOURCE... [options]\n"
    "An xDS (ADS, state of the world) control plane for Envoy and proxyless gRPC\n"
    "clients: which inferd hosts are ready, which models each one serves, how loaded\n"
    "each one is (docs/discovery.md).\n"
    "Sources of inferd hosts (at least one, each repeatable; their union is used):\n"
    "  --hosts=HOST:GRPC_PORT[,...]     a fixed list\n"
    "  --hosts-file=FILE                one HOST:GRPC_PORT a line, reloaded on change\n"
    "  --dns=NAME:GRPC_PORT             every address of NAME (a headless Service),\n"
    "                                   re-resolved every poll interval\n"
    "  --kubernetes-service=NAMESPACE/NAME:PORT\n"
    "                                   the ready endpoints of a Service's EndpointSlices\n"
    "                                   (PORT: a number or the Service port's name)\n"
    "  --kubernetes-api=URL             API server (default: in-cluster, from\n"
    "                                   KUBERNETES_SERVICE_HOST/PORT)\n"
    "  --kubernetes-token-file=FILE     default: the pod's service-account token\n"
    "  --kubernetes-ca-file=FILE        default: the pod's service-account CA\n"
    "  --source-interval-ms=MS          re-read hosts files and DNS this often (default:\n"
    "                                   the poll interval)\n"
    "Serving:\n"
    "  --xds-port=PORT                  gRPC port of the ADS service and grpc.health.v1\n"
    "                                   (default 18000; 0 picks a free one)\n"
    "  --xds-address=ADDR               (default 0.0.0.0)\n"
    "  --http-port=PORT                 /health/live, /health/ready, /metrics, /v1/snapshot\n"
    "                                   (default 18080; 0 picks a free one)\n"
    "  --http-address=ADDR              (default 0.0.0.0)\n"
    "  --control-plane-id=ID            sent to clients (default: the host name)\n"
    "Probing and publishing:\n"
    "  --poll-interval-ms=MS            probe every host this often (default 1000)\n"
    "  --probe-timeout-ms=MS            a host that takes longer is not ready\n"
    "                                   (default: the poll interval, at most 2000)\n"
    "  --probe-header='NAME: VALUE'     metadata with every probe, e.g. a restricted\n"
    "                                   protocol's key (repeatable)\n"
    "  --fleet-name=NAME                listener, route and fleet cluster name; clients\n"
    "                                   dial xds:///NAME (default inferd)\n"
    "  --envoy-grpc-port=PORT           Envoy's gRPC listener (default 8001)\n"
    "  --inferd-http-port=PORT          the hosts' HTTP port: also publish HTTP routes\n"
    "                                   and clusters for Envoy (default: none)\n"
    "  --envoy-http-port=PORT           Envoy's HTTP listener (default 8000)\n"
    "  --zone=ZONE                      locality zone of the published endpoints\n"
    "  --linger-rounds=N                keep a vanished model's empty cluster this many\n"
    "                                   polls after its route is gone (default 5)\n";

namespace {

Status Bad(const std::string& flag, const std::string& why) {
  return InvalidArgument(flag + ": " + why);
}

Status Int(const std::string& flag, const std::string& value, long lo, long hi, long* out) {
  long v = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size() || v < lo ||
      v > hi) {
    return Bad(flag, "wants an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                         ", got '" + value + "'");
  }
  *out = v;
  return Status::Ok();
}

Status Apply(const std::string& flag, const std::string& v, DiscoveryOptions& o) {
  // The host sources' flags are theirs to parse (host_sources.h).
  auto source = ParseHostSourceFlag(flag + "=" + v, o.sources);
  if (!source.ok()) return source.status();
  if (*source) {
    if (flag == "--source-interval-ms") o.source_interval_set = true;
    return Status::Ok();
  }
  long n = 0;
  auto port = [&](int* target, long lo) -> Status {
    INFERD_RETURN_IF_ERROR(Int(flag, v, lo, 65535, &n));
    *target = static_cast<int>(n);
    return Status::Ok();
  };
  auto& snap = o.loop.snapshot;
  if (flag == "--xds-port") return port(&o.xds_port, 0);
  if (flag == "--http-port") return port(&o.http_port, 0);
  if (flag == "--xds-address") return o.xds_address = v, Status::Ok();
  if (flag == "--http-address") return o.http_address = v, Status::Ok();
  if (flag == "--control-plane-id") return o.control_plane_id = v, Status::Ok();
  if (flag == "--poll-interval-ms") {
    INFERD_RETURN_IF_ERROR(Int(flag, v, 10, 3600000, &n));
    o.loop.poll_interval = std::chrono::milliseconds(n);
    return Status::Ok();
  }
  if (flag == "--probe-timeout-ms") {
    INFERD_RETURN_IF_ERROR(Int(flag, v, 10, 600000, &n));
    o.loop.prober.timeout = std::chrono::milliseconds(n);
    return Status::Ok();
  }
  if (flag == "--probe-header") {
    std::pair<std::string, std::string> header;
    Status parsed = middleman::ParseInferdHeader(v, header);
    if (!parsed.ok()) return Bad(flag, parsed.message());
    o.loop.prober.metadata.push_back(std::move(header));
    return Status::Ok();
  }
  if (flag == "--fleet-name") {
    if (v.empty() || v.find_first_of("/ \t") != std::string::npos) {
      return Bad(flag, "wants a name without '/' or spaces");
    }
    snap.fleet_name = v;
    return Status::Ok();
  }
  int p = 0;
  if (flag == "--envoy-grpc-port") {
    INFERD_RETURN_IF_ERROR(port(&p, 1));
    snap.envoy_grpc_port = static_cast<uint32_t>(p);
    return Status::Ok();
  }
  if (flag == "--envoy-http-port") {
    INFERD_RETURN_IF_ERROR(port(&p, 1));
    snap.envoy_http_port = static_cast<uint32_t>(p);
    return Status::Ok();
  }
  if (flag == "--inferd-http-port") {
    INFERD_RETURN_IF_ERROR(port(&p, 1));
    snap.http_port = static_cast<uint32_t>(p);
    return Status::Ok();
  }
  if (flag == "--zone") return snap.zone = v, Status::Ok();
  if (flag == "--linger-rounds") {
    INFERD_RETURN_IF_ERROR(Int(flag, v, 0, 1000, &n));
    o.loop.linger_rounds = static_cast<int>(n);
    return Status::Ok();
  }
  return InvalidArgument("unknown flag " + flag);
}

}  // namespace

StatusOr<DiscoveryOptions> ParseDiscoveryFlags(const std::vector<std::string>& args) {
  DiscoveryOptions o;
  bool timeout_set = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    if (flag == "--help" || flag == "-h") {
      o.help = true;
      return o;
    }
    if (flag.rfind("--", 0) != 0) return InvalidArgument("unexpected argument '" + flag + "'");
    std::string value;
    const size_t eq = flag.find('=');
    if (eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    } else {
      if (i + 1 >= args.size()) return InvalidArgument("missing value after " + flag);
      value = args[++i];
    }
    if (flag == "--probe-timeout-ms") timeout_set = true;
    INFERD_RETURN_IF_ERROR(Apply(flag, value, o));
  }
  const HostSourceOptions& src = o.sources;
  if (src.hosts.empty() && src.hosts_files.empty() && src.dns.empty() &&
      src.kubernetes_services.empty()) {
    return InvalidArgument(
        "no source of hosts: give --hosts, --hosts-file, --dns or --kubernetes-service");
  }
  const auto& snap = o.loop.snapshot;
  if (snap.http_port != 0 && snap.envoy_http_port == snap.envoy_grpc_port) {
    return InvalidArgument("--envoy-http-port and --envoy-grpc-port are both " +
                           std::to_string(snap.envoy_grpc_port) +
                           ": Envoy's two listeners need two ports");
  }
  if (!o.source_interval_set) o.sources.interval = o.loop.poll_interval;
  if (!timeout_set) {
    o.loop.prober.timeout = std::min(o.loop.poll_interval, std::chrono::milliseconds(2000));
  }
  return o;
}

}  // namespace inferd::discovery
