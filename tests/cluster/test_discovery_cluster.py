#!/usr/bin/python3
"""Scale-out through inferd-discovery: three inferd hosts, the xDS control
plane and proxyless gRPC clients (infer-perf, and grpcio as a second,
independent xDS client), under load.

Hosts are network namespaces on a private bridge, as in test_cluster.py (the
same NetnsNetwork / Host; loopback addresses where namespaces cannot be
made). inferd-discovery runs in the root namespace with --hosts-file, which
the test rewrites as an operator (or a controller) would; clients find the
hosts only through xDS (GRPC_XDS_BOOTSTRAP, target xds:///inferd).

Each host serves `delay` (50 ms per execution, one instance, batch 1: at
most 20 inferences/s per host whatever the CPU) and `simple`, and the model
`moving` only where the test loads it.

Phases:
  1. Scale-out, one infer-perf process (closed loop, 4 outstanding requests
     per host at N = 3), windows of WINDOW_S: h1 alone, then h2 added to the
     hosts file, then h3. Throughput with 3 hosts >= 0.8 x 3 x one host's,
     and each new host receives traffic soon after it is added (measured).
  2. Drain: h1 gets SIGTERM (--drain-delay-secs) while infer-perf runs:
     0 failed requests; h1 exits 0.
  3. Model-aware routing (grpcio): `moving` is loaded on h2 only; calls with
     the `inferd-model` header all land on h2. Then it is loaded on h3 and
     unloaded on h2 (--model-unload-delay-secs): traffic follows to h3, no
     call fails.
  4. grpcio without the header: `delay` calls spread over every ready host.

Environment: INFERD_BIN, INFER_PERF_BIN, INFERD_DISCOVERY_BIN (default
build/bin/...); INFERD_CLUSTER_NETWORK=loopback forces the fallback;
INFERD_CLUSTER_KEEP=1 keeps the temporary directory; INFERD_CLUSTER_VERBOSE=1
prints logs on success too.
"""

import json
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_cluster as tc  # noqa: E402  (networks, hosts, gRPC without generated code)
import discovery_util as du  # noqa: E402  (tests/e2e, on the path through test_cluster)

harness = tc.harness
log = tc.log
DISCOVERY_BIN = du.DISCOVERY_BIN
POLL_MS = 250
DELAY_MS = 50               # one host: at most 1000 / DELAY_MS inferences/s
PER_HOST_CONCURRENCY = 4
WINDOW_S = 2.0
DRAIN_DELAY = 3
UNLOAD_DELAY = 2
# N hosts must give more than N - 1 hosts could (0.8 x 3 = 2.4 > 2): proof
# that the added host serves its share. Not 0.9: 2 s windows of a 50 ms model
# on 2 shared cores measured 0.89 x 3 once in CI (53.2 against 53.5 infer/s)
# with every host serving; how close to linear scale-out comes is the
# benchmark's figure (bench/scaleout, docs/performance.md), not a test's.
SCALE_GOAL = 0.8


def write_repository(root):
    tensor_in, tensor_out = [("INPUT0", "TYPE_INT32", [1])], [("OUTPUT0", "TYPE_INT32", [1])]
    for name, ms in (("delay", DELAY_MS), ("moving", 1)):
        harness.write_model(root, name, harness.model_config(
            name, "delay", tensor_in, tensor_out, max_batch_size=1, extra="""
            parameters { key: "execute_delay_ms" value { string_value: "%d" } }
            instance_group [ { kind: KIND_CPU count: 1 } ]
            """ % ms))
    harness.copy_test_models(root, ["simple"])


def eid(host):
    """The host's id in discovery's snapshot: HOST:GRPC_PORT."""
    return "%s:%d" % (host.addr, host.grpc_port)


def write_hosts(path, hosts):
    du.write_hosts(path, [eid(h) for h in hosts])


def inference_count(host, model):
    """Successful inferences of `model` on `host` (its HTTP statistics), or None."""
    try:
        status, body = tc.http_request(host.addr, host.http_port, "GET",
                                       "/v2/models/%s/stats" % model, timeout=2)
    except OSError:
        return None
    if status != 200:
        return 0
    return sum(m.get("inference_count", 0) for m in json.loads(body).get("model_stats", []))


def perf_run(discovery, concurrency, windows):
    """infer-perf over xds:///inferd, its -v window lines read as they come."""
    cmd = [tc.INFER_PERF_BIN, "-m", "delay", "-i", "grpc", "-u", "xds:///inferd",
           "--concurrency-range", str(concurrency),
           "--measurement-interval", str(int(WINDOW_S * 1000)),
           "--stability-percentage", "0", "--max-trials", str(windows),
           "--warmup-ms", "500", "-v", "--json"]
    return du.PerfWindows(cmd, discovery.env(), WINDOW_S)


def mean(xs):
    return sum(xs) / len(xs) if xs else 0.0


def wait_until(cond, timeout, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(step)
    return None


def scale_out(net_hosts, discovery, hosts_file, checks, results):
    """Phases 1 and 2."""
    h1, h2, h3 = net_hosts
    write_hosts(hosts_file, [h1])
    checks.check(wait_until(lambda: discovery.ready_hosts("delay") == [eid(h1)], 10),
                 "discovery publishes h1")
    phase = 4  # windows per phase
    perf = perf_run(discovery, PER_HOST_CONCURRENCY * 3, windows=3 * phase + 3)
    marks = {}
    # Phase boundaries: after `phase` windows, add a host; settle one window.
    for name, host, n in (("h2", h2, 2), ("h3", h3, 3)):
        if not wait_until(lambda: len(perf.windows) >= phase * (n - 1), phase * WINDOW_S * 3 + 30):
            break
        before = inference_count(host, "delay") or 0
        added = time.monotonic()
        write_hosts(hosts_file, [h1, h2, h3][:n])
        published = wait_until(lambda: eid(host) in discovery.ready_hosts("delay"), 10)
        t_pub = time.monotonic() if published else None
        got = wait_until(lambda: (inference_count(host, "delay") or 0) > before, 10, step=0.01)
        t_traffic = time.monotonic() if got else None
        marks[n] = added
        results["added_%s" % name] = {
            "published_ms": None if t_pub is None else round((t_pub - added) * 1000),
            "traffic_ms": None if t_traffic is None else round((t_traffic - added) * 1000)}
        log("%s added: published after %s ms, first inference after %s ms" % (
            name, results["added_%s" % name]["published_ms"],
            results["added_%s" % name]["traffic_ms"]))
        checks.check(t_traffic is not None, "%s receives traffic after it is added" % name)
    # Phase 2: drain h1 during the last windows.
    wait_until(lambda: len(perf.windows) >= 3 * phase, phase * WINDOW_S * 3 + 30)
    t_drain = time.monotonic()
    h1.drain()
    drained_out = wait_until(lambda: eid(h1) not in discovery.ready_hosts(), 5)
    results["drain_unpublished_ms"] = (round((time.monotonic() - t_drain) * 1000)
                                       if drained_out else None)
    checks.check(drained_out, "h1 leaves the assignment while draining")
    rc, out = perf.wait(120)
    checks.check(rc == 0, "infer-perf over xds:/// exits 0 (rc %s)" % rc)

    t1 = [w[1] for w in perf.between(0, marks.get(2, 0))]
    t2 = [w[1] for w in perf.between(marks.get(2, 0) + 1.0, marks.get(3, 0))]
    t3 = [w[1] for w in perf.between(marks.get(3, 0) + 1.0, t_drain)]
    errors = sum(w[3] for w in perf.windows)
    results.update(one_host=mean(t1[1:] or t1), two_hosts=mean(t2), three_hosts=mean(t3),
                   windows=[round(w[1], 1) for w in perf.windows], errors=errors)
    one = results["one_host"]
    log("throughput: 1 host %.1f, 2 hosts %.1f, 3 hosts %.1f infer/s (windows %s); %d errors" % (
        one, results["two_hosts"], results["three_hosts"], results["windows"], errors))
    checks.check(one > 0 and results["two_hosts"] >= SCALE_GOAL * 2 * one,
                 "2 hosts give >= %.1f x 2 x one host's throughput" % SCALE_GOAL)
    checks.check(one > 0 and results["three_hosts"] >= SCALE_GOAL * 3 * one,
                 "3 hosts give >= %.1f x 3 x one host's throughput" % SCALE_GOAL)
    checks.check(errors == 0, "no failed request through scale-out and drain (%d)" % errors)
    checks.check(len(perf.windows) >= 3 * phase, "infer-perf reported its windows")
    problem = h1.clean_exit(DRAIN_DELAY + tc.EXIT_TIMEOUT + 5)
    checks.check(problem is None, "drained h1 exited cleanly%s" % (
        "" if problem is None else ": " + problem))


class GrpcLoad:
    """grpcio through xds:///inferd: `threads` loops of ModelInfer on `model`."""

    def __init__(self, discovery, model, header, threads=4):
        os.environ["GRPC_XDS_BOOTSTRAP"] = discovery.bootstrap
        grpc = tc.grpc_module()
        self.grpc = grpc
        self.channel = grpc.insecure_channel("xds:///inferd")
        self.infer = self.channel.unary_unary("/inference.GRPCInferenceService/ModelInfer")
        self.model = model
        self.metadata = (("inferd-model", model),) if header else ()
        self.ok, self.errors = 0, []
        self.stop_flag = threading.Event()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._loop, args=(k,), daemon=True)
                        for k in range(threads)]

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def _loop(self, k):
        j = 0
        while not self.stop_flag.is_set():
            value = k * 1000000 + j
            j += 1
            try:
                resp = self.infer(tc.grpc_infer_request(self.model, value), timeout=10,
                                  metadata=self.metadata, wait_for_ready=True)
                good = tc.grpc_output_ok(resp, value)
                with self.lock:
                    if good:
                        self.ok += 1
                    else:
                        self.errors.append("unexpected response")
            except self.grpc.RpcError as e:
                with self.lock:
                    self.errors.append("%s %s" % (e.code(), e.details()))

    def stop(self):
        self.stop_flag.set()
        for t in self.threads:
            t.join(15)
        self.channel.close()


def model_routing(hosts, discovery, checks, results):
    """Phase 3: `moving` on h2 only, then moved to h3 under load."""
    _, h2, h3 = hosts
    load_model = lambda h: tc.http_request(h.addr, h.http_port, "POST",  # noqa: E731
                                           "/v2/repository/models/moving/load", timeout=30)[0]
    unload_model = lambda h: tc.http_request(h.addr, h.http_port, "POST",  # noqa: E731
                                             "/v2/repository/models/moving/unload", timeout=30)[0]
    checks.check(load_model(h2) == 200, "moving loads on h2")
    checks.check(wait_until(lambda: discovery.ready_hosts("moving") == [eid(h2)], 10),
                 "discovery publishes moving on h2 only")
    load = GrpcLoad(discovery, "moving", header=True).start()
    time.sleep(1.5)
    on_h2, on_h3 = inference_count(h2, "moving"), inference_count(h3, "moving") or 0
    checks.check(on_h2 and on_h2 > 10 and on_h3 == 0,
                 "every call for moving went to h2 (h2 %s, h3 %s)" % (on_h2, on_h3))
    checks.check(load_model(h3) == 200, "moving loads on h3")
    checks.check(wait_until(lambda: eid(h3) in discovery.ready_hosts("moving"), 10),
                 "discovery publishes moving on h3")
    t_unload = time.time()
    checks.check(unload_model(h2) == 200, "moving unloads on h2")
    left = wait_until(lambda: discovery.ready_hosts("moving") == [eid(h3)], 10)
    results["moving_unpublished_ms"] = round((time.time() - t_unload) * 1000) if left else None
    base_h3 = inference_count(h3, "moving") or 0
    time.sleep(1.5)
    after_h3 = inference_count(h3, "moving") or 0
    load.stop()
    results["moving_calls"], results["moving_errors"] = load.ok, len(load.errors)
    checks.check(after_h3 > base_h3, "traffic for moving follows it to h3")
    checks.check(not load.errors, "no call for moving failed (%d ok, errors: %s)" % (
        load.ok, sorted(set(load.errors))[:3]))


def fleet_spread(hosts, discovery, checks, results):
    """Phase 4: grpcio without the header on `simple` spreads over the ready hosts."""
    ready = [h for h in hosts if h.server.alive() and eid(h) in discovery.ready_hosts()]
    before = {h.name: inference_count(h, "delay") or 0 for h in ready}
    load = GrpcLoad(discovery, "delay", header=False).start()
    time.sleep(2.0)
    load.stop()
    gained = {h.name: (inference_count(h, "delay") or 0) - before[h.name] for h in ready}
    results["fleet_calls"] = load.ok
    checks.check(not load.errors, "grpcio calls to the fleet all succeed (%s)" % load.errors[:3])
    checks.check(len(ready) >= 2 and load.ok > 0 and all(v > 0 for v in gained.values()),
                 "calls without the header reach every ready host (%s)" % gained)


def main():
    for binary in (tc.INFERD_BIN, tc.INFER_PERF_BIN, DISCOVERY_BIN):
        if not os.access(binary, os.X_OK):
            print("SKIP: %s is not built" % binary)
            return 77
    if tc.grpc_module() is None:
        print("SKIP: python3-grpcio is missing")
        return 77
    tc.cleanup_stale_runs()
    tmp = tempfile.mkdtemp(prefix="%s%d-" % (tc.TMP_PREFIX, os.getpid()))
    checks = tc.Checks()
    net, hosts, discovery, results = None, [], None, {}
    try:
        net = tc.make_network()
        repo = os.path.join(tmp, "models")
        write_repository(repo)
        extra = ["--drain-delay-secs", str(DRAIN_DELAY), "--model-control-mode", "explicit",
                 "--load-model", "delay", "--load-model", "simple"]
        if "--model-unload-delay-secs" in tc.help_text():
            extra += ["--model-unload-delay-secs", str(UNLOAD_DELAY)]
        for i in (1, 2, 3):
            hosts.append(tc.Host(net, i, repo, tmp, extra).start())
        hosts_file = os.path.join(tmp, "hosts")
        write_hosts(hosts_file, [])
        discovery = du.Discovery(tmp, ["--hosts-file=" + hosts_file,
                                       "--poll-interval-ms=%d" % POLL_MS]).wait_ready()
        scale_out(hosts, discovery, hosts_file, checks, results)
        model_routing(hosts, discovery, checks, results)
        fleet_spread(hosts[1:], discovery, checks, results)
        metrics = discovery.metrics()
        checks.check(re.search(r'discovery_xds_nacks_total\{type="[a-z]+"\} 0', metrics)
                     is not None and not re.search(r'discovery_xds_nacks_total\{[^}]*\} [1-9]',
                                                   metrics),
                     "no client rejected a resource (NACK)")
        rc = discovery.stop()
        checks.check(rc == 0, "inferd-discovery exits 0 on SIGTERM (%s)" % rc)
        for h in hosts:
            if h.server.alive():
                h.server.send_signal(signal.SIGTERM)
        for h in hosts[1:]:
            problem = h.clean_exit(DRAIN_DELAY + tc.EXIT_TIMEOUT + 5)
            checks.check(problem is None, "%s exited cleanly%s" % (
                h.name, "" if problem is None else ": " + str(problem)))
    except Exception as e:  # noqa: BLE001
        import traceback
        traceback.print_exc()
        checks.check(False, "test ran to the end (%s)" % e)
    finally:
        log("results: " + json.dumps(results))
        if checks.failed or tc.VERBOSE:
            for h in hosts:
                print("---- %s log ----\n%s" % (h.name, h.log_text()[-3000:]))
            if discovery is not None:
                print("---- discovery log ----\n" + discovery.log()[-5000:])
        if discovery is not None:
            discovery.stop()
        for h in hosts:
            if h.server.alive():
                h.kill()
        if net is not None:
            log("network: %s" % net.describe())
            net.cleanup()
        if not tc.KEEP:
            shutil.rmtree(tmp, ignore_errors=True)
    if checks.failed:
        log("FAILED: %d check(s): %s" % (len(checks.failed), "; ".join(checks.failed)))
        return 1
    log("PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
