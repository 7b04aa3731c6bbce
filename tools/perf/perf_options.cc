#include "perf_options.h"

#include <cstdlib>
#include <functional>
#include <iostream>
#include <sstream>

#include "inferd/client/routing.h"

namespace inferd::perf {

[[noreturn]] void Usage(const std::string& error) {
  if (!error.empty()) std::cerr << "infer-perf: " << error << "\n\n";
  std::cerr << R"(Usage: infer-perf -m MODEL [options]
  -m MODEL                       model name (required)
  -x VERSION                     model version (default: latest)
  -u HOST:PORT                   server (default localhost:8000; gRPC: localhost:8001);
                                 with -i grpc also xds:///NAME (hosts from the xDS
                                 control plane in $GRPC_XDS_BOOTSTRAP, e.g. inferd-discovery)
  -i http|grpc                   protocol (default http)
  -b N                           client batch size (default 1)
  --concurrency-range S[:E[:D]]  closed loop: S..E outstanding requests, step D (default 1)
  --request-rate-range S[:E[:D]] open loop: S..E requests per second, step D
  --request-distribution constant|poisson   arrivals in rate mode (default constant)
  --measurement-interval MS      window length (default 5000)
  --percentile P                 stabilise on the P-th latency percentile (default: average)
  --stability-percentage PCT     windows must agree within PCT% (default 10)
  --max-trials N                 windows per level before giving up on stability (default 10)
  --warmup-ms MS                 warm-up before measuring (default: one window)
  --max-threads N                workers in rate mode (default 64)
  --input-data random|zero|FILE  input values; FILE is JSON {"data":[{"INPUT0":[...]}]}
  --shape NAME:D1,D2             shape (without batch) for inputs with variable dims
  --streaming                    gRPC bidirectional streaming
  -f FILE                        write a CSV of the results
  --json                         print the results as JSON on stdout
  -v, --verbose                  a line on stderr for every measurement window
  --plot FILE.png|FILE.svg       latency against throughput through gnuplot
  --shared-memory none|system    system: inputs and outputs in a POSIX shared-memory region
                                 registered with the server (needs --allow-client-shm=true)
  --output-shared-memory-size B  bytes per output in the region (default: the largest output
                                 of one probe request)
TLS and headers (perf_analyzer's names; docs/clients.md):
  --ssl-grpc-use-ssl                        gRPC over TLS
  --ssl-grpc-root-certifications-file FILE  PEM CAs to trust (default: gRPC's roots)
  --ssl-grpc-certificate-chain-file FILE    client certificate chain (mutual TLS)
  --ssl-grpc-private-key-file FILE          its private key
  -u https://HOST:PORT                      HTTP over TLS; then:
  --ssl-https-ca-certificates-file FILE     PEM CAs to trust (default: the system's)
  --ssl-https-client-certificate-file FILE  client certificate (mutual TLS)
  --ssl-https-client-certificate-type PEM   (DER is not supported)
  --ssl-https-private-key-file FILE         its private key
  --ssl-https-private-key-type PEM          (DER is not supported)
  --ssl-https-verify-peer 0|1               check the server's certificate (default 1)
  --ssl-https-verify-host 0|1|2             check the name in it (default 2; 1 is 2)
  -H 'NAME:VALUE'                           header with every request, repeatable; also
                                            sent as gRPC metadata (name in lower case)
)" << LoadUsageText()
            << SearchUsageText();
  std::exit(2);
}

namespace {

void ParseRange(const std::string& s, double& a, double& b, double& step) {
  std::vector<double> parts;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ':')) parts.push_back(std::stod(item));
  if (parts.empty() || parts.size() > 3) Usage("bad range '" + s + "'");
  a = parts[0];
  b = parts.size() > 1 ? parts[1] : a;
  step = parts.size() > 2 ? parts[2] : 1;
  // An end of 0 sweeps until the latency threshold (-l) is exceeded.
  if (a <= 0 || (b < a && b != 0) || step <= 0) Usage("bad range '" + s + "'");
}

// --shape NAME:D1,D2: the dims (without batch) of input NAME.
void AddShape(const std::string& s, Options& o) {
  const auto colon = s.find(':');
  if (colon == std::string::npos) Usage("--shape needs NAME:D1,D2");
  std::vector<int64_t> dims;
  std::stringstream ss(s.substr(colon + 1));
  std::string d;
  while (std::getline(ss, d, ',')) dims.push_back(std::stoll(d));
  o.shapes[s.substr(0, colon)] = dims;
}

// Applies a TLS or header flag (perf_analyzer's names) to `c`; false when
// `a` is not one.
bool ParseConnectionFlag(const std::string& a, const std::function<std::string()>& value,
                         ConnectionOptions& c) {
  client::TlsOptions& g = c.grpc.tls;
  client::TlsOptions& h = c.http.tls;
  auto pem_only = [&](const std::string& type) {
    if (type == "DER") Usage(a + "=DER is not supported (convert to PEM with openssl)");
    if (type != "PEM") Usage(a + " must be PEM");
  };
  auto bit = [&](int max) {
    const int v = std::stoi(value());
    if (v < 0 || v > max) Usage(a + " must be 0.." + std::to_string(max));
    return v;
  };
  if (a == "--ssl-grpc-use-ssl")
    g.enabled = true;
  else if (a == "--ssl-grpc-root-certifications-file")
    g.ca_file = value();
  else if (a == "--ssl-grpc-certificate-chain-file")
    g.cert_file = value();
  else if (a == "--ssl-grpc-private-key-file")
    g.key_file = value();
  else if (a == "--ssl-https-ca-certificates-file")
    h.ca_file = value();
  else if (a == "--ssl-https-client-certificate-file")
    h.cert_file = value();
  else if (a == "--ssl-https-private-key-file")
    h.key_file = value();
  else if (a == "--ssl-https-client-certificate-type" || a == "--ssl-https-private-key-type")
    pem_only(value());
  else if (a == "--ssl-https-verify-peer")
    h.verify_peer = bit(1) == 1;
  else if (a == "--ssl-https-verify-host")
    h.verify_host = bit(2);
  else if (a == "-H") {
    client::Header header;
    const client::ClientStatus st = client::ParseHeader(value(), header);
    if (!st.ok) Usage("-H: " + st.message);
    c.http.headers.push_back(header);
    c.grpc.headers.push_back(std::move(header));
  } else
    return false;
  return true;
}

// The TLS and header flags against the protocol and URL: flags that would
// otherwise be ignored are refused.
void CheckConnection(const Options& o) {
  const client::TlsOptions& g = o.connection.grpc.tls;
  const client::TlsOptions& h = o.connection.http.tls;
  const bool grpc_files = !g.ca_file.empty() || !g.cert_file.empty() || !g.key_file.empty();
  if (grpc_files && !g.enabled) Usage("--ssl-grpc-*-file flags need --ssl-grpc-use-ssl");
  if ((g.enabled || grpc_files) && o.protocol != "grpc") Usage("--ssl-grpc-* flags need -i grpc");
  const bool https_flags = !h.ca_file.empty() || !h.cert_file.empty() || !h.key_file.empty() ||
                           !h.verify_peer || h.verify_host != 2;
  if (https_flags && o.protocol == "http" && o.url.rfind("https://", 0) != 0)
    Usage("--ssl-https-* flags need -u https://HOST:PORT");
  const client::ClientStatus st =
      client::CheckOptions(o.connection.For(o.protocol), o.protocol == "grpc");
  if (!st.ok) Usage(st.message);
}

// Applies flag `a` to `o`; `value` returns the flag's value (and ends the
// process when it has none). Unknown flags and bad values end the process
// through Usage; std::sto* throw invalid_argument or out_of_range.
void ApplyFlag(const std::string& a, const std::function<std::string()>& value, Options& o,
               bool& url_set) {
  if (ParseConnectionFlag(a, value, o.connection))
    return;
  else if (a == "-m")
    o.model = value();
  else if (a == "-x")
    o.version = value();
  else if (a == "-u") {
    o.url = value();
    url_set = true;
  } else if (a == "-i")
    o.protocol = value();
  else if (a == "-b")
    o.batch = std::stoi(value());
  else if (a == "--concurrency-range") {
    double s, e, d;
    ParseRange(value(), s, e, d);
    o.c_start = int(s);
    o.c_end = int(e);
    o.c_step = int(d);
    o.concurrency_set = true;
  } else if (a == "--request-rate-range") {
    ParseRange(value(), o.r_start, o.r_end, o.r_step);
    o.rate_mode = true;
    o.rate_set = true;
  } else if (a == "--request-distribution") {
    const std::string d = value();
    if (d != "constant" && d != "poisson")
      Usage("--request-distribution must be constant or poisson");
    o.poisson = d == "poisson";
  } else if (a == "--measurement-interval" || a == "-p")
    o.interval_ms = std::stoi(value());
  else if (a == "--percentile")
    o.percentile = std::stod(value());
  else if (a == "--stability-percentage" || a == "-s")
    o.stability = std::stod(value()) / 100;
  else if (a == "--max-trials" || a == "-r")
    o.max_trials = std::stoi(value());
  else if (a == "--warmup-ms")
    o.warmup_ms = std::stoi(value());
  else if (a == "--max-threads")
    o.max_threads = std::stoi(value());
  else if (a == "--input-data")
    o.input_data = value();
  else if (a == "--shape")
    AddShape(value(), o);
  else if (a == "--streaming")
    o.streaming = true;
  else if (a == "-f")
    o.csv = value();
  else if (a == "--json")
    o.json = true;
  else if (a == "-v" || a == "--verbose")
    o.verbose = true;
  else if (a == "--plot")
    o.plot = value();
  else if (a == "--shared-memory") {
    o.shared_memory = value();
    if (o.shared_memory != "none" && o.shared_memory != "system")
      Usage("--shared-memory must be none or system");
  } else if (a == "--output-shared-memory-size")
    o.output_shm_size = std::stoull(value());
  else if (a == "-h" || a == "--help" || a == "-?")
    Usage("");
  else if (!ApplyLoadFlag(a, value, o))
    Usage("unknown flag '" + a + "'");
}

// What must hold across flags, and the defaults that depend on others.
void CheckOptions(Options& o, bool url_set) {
  if (o.model.empty()) Usage("-m MODEL is required");
  if (o.protocol != "http" && o.protocol != "grpc") Usage("-i must be http or grpc");
  if (o.protocol == "grpc" && !url_set) o.url = "localhost:8001";
  if (o.streaming && o.protocol != "grpc") Usage("--streaming needs -i grpc");
  if (client::IsXdsTarget(o.url) && o.protocol != "grpc") Usage("-u xds:///NAME needs -i grpc");
  if (client::IsXdsTarget(o.url) && o.shared_memory == "system")
    Usage("--shared-memory system needs one server (-u HOST:PORT), not an xds: target");
  if (o.batch < 1 || o.interval_ms < 100 || o.percentile < 0 || o.percentile > 100) {
    Usage("bad -b, --measurement-interval or --percentile");
  }
  if (o.warmup_ms < 0) o.warmup_ms = o.interval_ms;
  CheckConnection(o);
  CheckLoadOptions(o);
}

}  // namespace

Options ParseOptions(int argc, char** argv) {
  Options o;
  bool url_set = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string v;
    if (auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      v = a.substr(eq + 1);
      a = a.substr(0, eq);
    }
    auto value = [&]() -> std::string {
      if (!v.empty()) return v;
      if (i + 1 >= argc) Usage("flag " + a + " needs a value");
      return argv[++i];
    };
    try {
      ApplyFlag(a, value, o, url_set);
    } catch (const std::invalid_argument&) {
      Usage("flag " + a + " needs a number");
    } catch (const std::out_of_range&) {
      Usage("flag " + a + " is out of range");
    }
  }
  CheckOptions(o, url_set);
  return o;
}

}  // namespace inferd::perf
