#!/usr/bin/python3
"""Markdown for docs/performance.md (section batcher) from bench/batcher/run.sh's results.

Input: a TSV with one line per infer-perf run (round, path, model, proto, clients, throughput,
p50_us, p99_us, server_batch). Figures are medians over the rounds; the batcher/direct ratio is
the median of the per-round ratios, each taken between two runs of the same round, so that a
slow phase of the shared machine moves both sides of a ratio alike."""

import argparse
import csv
import statistics

# CPU per inference of each tier, microseconds (run.sh): the load generator, the batcher (the
# clients' namespace without infer-perf), nginx, inferd.
CPU_FIELDS = ("cpu_perf_us", "cpu_cli_us", "cpu_lb_us", "cpu_srv_us")


def load(path):
    with open(path) as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    for r in rows:
        for k in CPU_FIELDS + ("throughput", "p50_us", "p99_us", "server_batch"):
            r[k] = float(r[k])
        r["clients"] = int(r["clients"])
    return rows


def med(values):
    return statistics.median(values) if values else float("nan")


def summarize(rows):
    """{(model, proto, clients): {path: {...medians}, "ratio": [...], "p99_ratio": [...]}}."""
    out = {}
    for r in rows:
        k = (r["model"], r["proto"], r["clients"])
        out.setdefault(k, {}).setdefault(r["path"], []).append(r)
    summary = {}
    for k, by_path in out.items():
        s = {}
        for path, rs in by_path.items():
            s[path] = {f: med([r[f] for r in rs])
                       for f in CPU_FIELDS + ("throughput", "p50_us", "p99_us", "server_batch")}
        if "direct" in by_path and "batcher" in by_path:
            a = {r["round"]: r for r in by_path["direct"]}
            b = {r["round"]: r for r in by_path["batcher"]}
            rounds = sorted(set(a) & set(b))
            s["ratio"] = [b[i]["throughput"] / a[i]["throughput"] for i in rounds if a[i]["throughput"] > 0]
            s["p99_ratio"] = [b[i]["p99_us"] / a[i]["p99_us"] for i in rounds if a[i]["p99_us"] > 0]
        summary[k] = s
    return summary


def ms(us):
    return "%.2f" % (us / 1000)


def order_key(k):
    model, proto, clients = k
    return (proto != "grpc", model != "simple", -clients)


def spread(values):
    return "%.2f-%.2f" % (min(values), max(values)) if len(values) > 1 else "-"


def table_both(summary):
    lines = ["| model | protocol | clients | direct (infer/s) | batcher (infer/s) | batcher / direct "
             "| round ratios | direct p50 / p99 (ms) | batcher p50 / p99 (ms) | inferd's batch direct / batcher |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for k in sorted(summary, key=order_key):
        s = summary[k]
        if "ratio" not in s:
            continue
        a, b = s["direct"], s["batcher"]
        lines.append("| %s | %s | %d | %.0f | %.0f | **%.2f** | %s | %s / %s | %s / %s | %.2f / %.2f |" % (
            k[0], k[1], k[2], a["throughput"], b["throughput"], med(s["ratio"]), spread(s["ratio"]),
            ms(a["p50_us"]), ms(a["p99_us"]), ms(b["p50_us"]), ms(b["p99_us"]),
            a["server_batch"], b["server_batch"]))
    return lines


def table_direct(summary):
    lines = ["| model | protocol | clients | direct (infer/s) | p50 (ms) | p99 (ms) | inferd's batch |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for k in sorted(summary, key=order_key):
        a = summary[k].get("direct")
        if a:
            lines.append("| %s | %s | %d | %.0f | %s | %s | %.2f |" % (
                k[0], k[1], k[2], a["throughput"], ms(a["p50_us"]), ms(a["p99_us"]), a["server_batch"]))
    return lines


def table_cpu(summary):
    lines = ["| model | protocol | clients | path | infer-perf | infer-batcher | nginx | inferd | total |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for k in sorted(summary, key=order_key):
        for path in ("direct", "batcher"):
            c = summary[k].get(path)
            if c:
                cells = ["-" if f == "cpu_cli_us" and path == "direct" else "%.0f" % c[f] for f in CPU_FIELDS]
                lines.append("| %s | %s | %d | %s | %s | %s |" % (
                    k[0], k[1], k[2], path, " | ".join(cells),
                    "%.0f" % sum(c[f] for f in CPU_FIELDS)))
    return lines


def conclusions(summary, batcher_args="", far_cpu=""):
    out = []
    grpc = {k: s for k, s in summary.items() if k[1] == "grpc" and "ratio" in s}
    if not grpc:
        return out
    top = max(k[2] for k in grpc)
    goal = grpc.get(("simple", "grpc", top))
    if goal:
        r, p = med(goal["ratio"]), med(goal["p99_ratio"])
        met = r >= 3 and p <= 1
        out.append("Goal (>= 3x throughput for `simple` at %d clients, p99 not higher): **%s**: %.2fx the "
                   "throughput, p99 %.2fx the direct path's (%s ms against %s ms)." % (
                       top, "met" if met else "not met", r, p, ms(goal["batcher"]["p99_us"]),
                       ms(goal["direct"]["p99_us"])))
    for model in sorted({k[0] for k in grpc}, key=lambda m: m != "simple"):
        levels = sorted(k[2] for k in grpc if k[0] == model)
        parts = []
        for c in levels:
            s = grpc[(model, "grpc", c)]
            parts.append("%d client%s %.2fx (p99 %.2fx)" % (c, "" if c == 1 else "s", med(s["ratio"]), med(s["p99_ratio"])))
        losing = [c for c in levels if med(grpc[(model, "grpc", c)]["ratio"]) < 1.0]
        paying = [c for c in levels if med(grpc[(model, "grpc", c)]["ratio"]) >= 1.1]
        if losing and paying:
            verdict = ("it pays from %d clients and costs throughput at %s: it stops paying somewhere "
                       "between %d and %d clients" % (min(paying), " and ".join(map(str, losing)),
                                                      max(losing), min(paying)))
        elif losing:
            verdict = "it does not pay at any measured client count"
        elif paying:
            verdict = "it pays at %s clients" % ", ".join(map(str, paying))
        else:
            verdict = "it makes no difference worth a hop (within 10%)"
        out.append("`%s` over gRPC, batcher / direct: %s; %s." % (model, "; ".join(parts), verdict))
    low = min(k[2] for k in grpc)
    one = grpc.get(("simple", "grpc", low))
    if one:
        waits = "--max-inflight-batches 0" in batcher_args or "--max-inflight-batches=0" in batcher_args
        how = ("each request waits alone for `--max-delay-us` before it is sent and pays one more gRPC hop"
               if waits else "a request that finds its model idle is sent at once "
               "(`--max-inflight-batches`), so what it pays is one more gRPC hop and the batcher's CPU")
        out.append("With %d client%s nothing merges (inferd's batch %.2f): %s; the batcher adds "
                   "%.2f ms at the median for `simple` (%s against %s ms)." % (
                       low, "" if low == 1 else "s", one["batcher"]["server_batch"], how,
                       (one["batcher"]["p50_us"] - one["direct"]["p50_us"]) / 1000,
                       ms(one["batcher"]["p50_us"]), ms(one["direct"]["p50_us"])))
    http = [k for k, s in summary.items() if k[1] == "http" and "ratio" in s]
    for k in http:
        s = summary[k]
        a = s["direct"]
        out.append("Over HTTP (`%s`, %d clients) the batcher gives %.2fx: the direct path is cheap already "
                   "(nginx + inferd %.0f µs per inference over HTTP/1.1, against %s over gRPC), so there is "
                   "little to save beyond what the extra hop costs." % (
                       k[0], k[2], med(s["ratio"]), a["cpu_lb_us"] + a["cpu_srv_us"],
                       "%.0f µs" % (grpc[(k[0], "grpc", k[2])]["direct"]["cpu_lb_us"]
                                    + grpc[(k[0], "grpc", k[2])]["direct"]["cpu_srv_us"])
                       if (k[0], "grpc", k[2]) in grpc else "more"))
    for model in sorted({k[0] for k in grpc}, key=lambda m: m != "simple"):
        s = grpc.get((model, "grpc", top))
        if not s:
            continue
        a, b = s["direct"], s["batcher"]
        far_a, far_b = a["cpu_lb_us"] + a["cpu_srv_us"], b["cpu_lb_us"] + b["cpu_srv_us"]
        near_a, near_b = a["cpu_perf_us"], b["cpu_perf_us"] + b["cpu_cli_us"]
        if far_b > 0:
            out.append(
                "Where the CPU goes, `%s` at %d clients (per inference): the far side (nginx + inferd) "
                "spends %.0f µs direct and %.0f µs behind the batcher, **%.1fx less**; the clients' side "
                "spends %.0f µs direct (infer-perf) and %.0f µs with the batcher (infer-perf %.0f + "
                "infer-batcher %.0f). On this machine both sides share the same 2 cores, so the "
                "measured throughput follows the totals (%.0f against %.0f µs); where the clients and the "
                "batcher run on their own machines, as in a remote fleet, the far side's %.1fx is the "
                "capacity a server-bound fleet gains (derived from the CPU figures, not measured as "
                "throughput here)." % (
                    model, top, far_a, far_b, far_a / far_b, near_a, near_b, b["cpu_perf_us"],
                    b["cpu_cli_us"], far_a + near_a, far_b + near_b, far_a / far_b)
                if not far_cpu else
                "Where the CPU goes, `%s` at %d clients (per inference): the far side (nginx + inferd, "
                "held to %s CPU) spends %.0f µs direct and %.0f µs behind the batcher, **%.1fx less**; "
                "the clients' side %.0f µs direct and %.0f µs with the batcher (infer-perf %.0f + "
                "infer-batcher %.0f), from the CPU the far side does not use." % (
                    model, top, far_cpu, far_a, far_b, far_a / far_b, near_a, near_b,
                    b["cpu_perf_us"], b["cpu_cli_us"]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("results")
    ap.add_argument("--command", required=True)
    ap.add_argument("--date", required=True)
    ap.add_argument("--cores", required=True)
    ap.add_argument("--load-before", required=True)
    ap.add_argument("--load-after", required=True)
    ap.add_argument("--mtu", default="?")
    ap.add_argument("--interval-ms", default="2000")
    ap.add_argument("--batcher-args", default="")
    ap.add_argument("--note", default="", help="a sentence on what else ran on the machine")
    ap.add_argument("--extra", default="", help="a paragraph after the figures")
    ap.add_argument("--far-cpu", default="", help="CPUs nginx + inferd were held to (FAR_CPU)")
    a = ap.parse_args()
    rows = load(a.results)
    summary = summarize(rows)
    rounds = len({r["round"] for r in rows})
    both = any("ratio" in s for s in summary.values())
    if a.far_cpu:
        print("## The batching service in front of a server-bound fleet (issue 28, FAR_CPU=%s)\n" % a.far_cpu)
    else:
        print("## The batching service in front of a remote fleet (issue 28)\n")
    sharing = ("Everything shares the same 2 cores, the load generator included." if not a.far_cpu else
               "nginx and inferd together are held to %s CPU by a cgroup CPU quota and the clients' side "
               "(infer-perf, infer-batcher) has the rest of the cores: the far side is the bottleneck, as "
               "in a fleet whose many clients run on machines of their own; the same paths, clients and "
               "rounds as the section above." % a.far_cpu)
    print(
        "Command: `%s` (measured %s on the %s-core development machine; load average %s before, %s "
        "after%s). Three network namespaces joined by veth pairs (MTU %s): the clients' (infer-perf, "
        "and infer-batcher for the batcher path), the balancer's (nginx with `deploy/nginx/inferd.conf`, "
        "TLS on both listeners with a CA and certificate made at run time by openssl, HTTP/2 gRPC proxy, "
        "upstream keep-alive) and the server's (inferd, `examples/models`: `simple` has "
        "`max_batch_size: 8` and no dynamic batching, `digits` `max_batch_size: 64` with "
        "`dynamic_batching { }`). Direct: each client → TLS → nginx → inferd. Batcher: each client → "
        "infer-batcher on the clients' loopback (plain text) → TLS → nginx → inferd; infer-batcher "
        "flags: `%s`. Load: `infer-perf` in concurrency mode, each client a thread with its own "
        "connection and one batch-1 request outstanding, random inputs, 1 s warm-up and three %s ms "
        "windows per run; %d rounds, the paths alternating (order reversed each round), every client "
        "count and model in every round; medians of the rounds. \"inferd's batch\" is inferd's own "
        "inferences / executions over the run (its statistics, read in the server's namespace). No "
        "added delay: this kernel has no netem, and with closed-loop clients a delay lengthens both "
        "paths' round trips alike; the distance here is the TLS and proxy hops, which cost CPU per "
        "request, and that cost is what the batcher saves. %s" % (
            a.command, a.date, a.cores, a.load_before, a.load_after, (": " + a.note) if a.note else "",
            a.mtu, a.batcher_args, a.interval_ms, rounds, sharing))
    print()
    if both:
        print("\n".join(table_both(summary)))
        print()
        for line in conclusions(summary, a.batcher_args, a.far_cpu):
            print(line + "\n")
    else:
        print("infer-batcher was not measured in this run (DIRECT_ONLY=1: not built yet); the direct "
              "path alone:\n")
        print("\n".join(table_direct(summary)))
        print()
    print("CPU per inference (microseconds of user + system time, medians of the rounds; each run "
          "whole, warm-up included; the 2 cores give 2,000,000 a second to share): what each tier "
          "spends, which is what a throughput on this machine trades against.\n")
    print("\n".join(table_cpu(summary)))
    print()
    if a.extra:
        print(a.extra)


if __name__ == "__main__":
    main()
