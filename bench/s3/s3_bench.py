#!/usr/bin/python3
"""bench/s3: what an s3:// model repository costs, against a real Ceph RGW.

1. Loading one model (resnet50 by default, about 100 MB) into READY, rounds
   alternating: raw GETs of the same objects by boto3 (one streamed GET per
   object, 4 at a time: what inferd does), inferd loading it from the bucket
   with an empty cache, from local disk, and from the bucket again with the
   cache of the previous s3 load (a restart). The figure to read is inferd's
   fetch throughput (its own inferd_repository_fetch_* counters) against
   boto3's, goal >= 0.8; the load times show what the download adds.
2. A poll pass over a repository of --models identity models with nothing
   changed: listings, objects downloaded and inferd's CPU time per pass (goal:
   one listing, no downloads), next to boto3 listing the same prefix.

The Ceph cluster is started and stopped here (tests/s3/ceph_rgw.py). Prints
JSON and a Markdown summary. bench/s3/run.sh runs it.
"""

import argparse
import concurrent.futures
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
CEPH_RGW = os.path.join(ROOT, "tests", "s3", "ceph_rgw.py")

import harness  # noqa: E402
import s3_util  # noqa: E402

PARALLEL_GETS = 4  # inferd's download pool (src/repository/s3_repository_source.h)


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def scrape(server):
    """{name: summed value} of the inferd_repository_* series of one scrape."""
    r = server.metrics_client().get("/metrics")
    assert r.status == 200, r
    out = {}
    for line in r.body.decode().splitlines():
        if line.startswith("inferd_repository_"):
            name = line.split("{", 1)[0].split(" ", 1)[0]
            out[name] = out.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
    return out


def upload_model_dir(bucket, prefix, model_dir):
    keys = s3_util.upload_tree(bucket, prefix, model_dir)
    for root, dirs, files in os.walk(model_dir):
        if not dirs and not files:  # empty version directories: a marker, as S3 tools make
            rel = os.path.relpath(root, model_dir).replace(os.sep, "/")
            s3_util.put(bucket, "%s/%s/" % (prefix, rel), b"")
    return keys


def raw_get(bucket, keys, out_dir):
    """Seconds for boto3 to stream every object to disk, PARALLEL_GETS at a time."""
    s3 = s3_util.client()

    def get(key):
        body = s3.get_object(Bucket=bucket, Key=key)["Body"]
        path = os.path.join(out_dir, key.replace("/", "_"))
        with open(path, "wb") as f:
            for chunk in body.iter_chunks(1 << 20):
                f.write(chunk)
        return os.path.getsize(path)

    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(PARALLEL_GETS) as pool:
        total = sum(pool.map(get, keys))
    seconds = time.monotonic() - t0
    s3.close()
    return seconds, total


def inferd_load(repo, model, cache_dir, env):
    """Seconds from the load request to its answer (READY), and the fetch counters."""
    server = harness.MetricsServer(
        repo, ["--model-control-mode=explicit", "--model-cache-dir=" + cache_dir], env=env,
        startup_timeout=60)
    server.start()
    try:
        client = server.client(timeout=300)
        before = scrape(server)
        t0 = time.monotonic()
        r = client.post("/v2/repository/models/%s/load" % model)
        seconds = time.monotonic() - t0
        if r.status != 200:
            raise RuntimeError("load %s from %s: %s\n%s" % (model, repo, r, server.log_tail()))
        after = scrape(server)
        return seconds, {k: after.get(k, 0) - before.get(k, 0) for k in after}
    finally:
        server.stop()


def bench_load(args, bucket, env, tmp):
    model_dir = os.path.join(ROOT, "examples", "models", args.model)
    if not os.path.isdir(model_dir):
        sys.exit("missing %s: run make models" % model_dir)
    keys = upload_model_dir(bucket, "repo/" + args.model, model_dir)
    file_keys = [k for k in keys if not k.endswith("/")]
    url = s3_util.repository_url(bucket, "repo")
    local_repo = os.path.dirname(model_dir)  # explicit mode loads only this model
    rows = []
    for i in range(args.rounds):
        get_dir = tempfile.mkdtemp(dir=tmp)
        raw_s, raw_bytes = raw_get(bucket, file_keys, get_dir)
        subprocess.run(["rm", "-rf", get_dir], check=True)
        cache = tempfile.mkdtemp(dir=tmp)
        cold_s, cold = inferd_load(url, args.model, cache, env)
        local_s, _ = inferd_load(local_repo, args.model, tempfile.mkdtemp(dir=tmp), env)
        warm_s, warm = inferd_load(url, args.model, cache, env)
        subprocess.run(["rm", "-rf", cache], check=True)
        fetch_s = cold.get("inferd_repository_fetch_duration_seconds_total", 0)
        fetch_bytes = cold.get("inferd_repository_fetch_bytes_total", 0)
        row = {
            "round": i + 1,
            "bytes": raw_bytes,
            "raw_get_s": raw_s,
            "raw_get_mb_s": raw_bytes / raw_s / 1e6,
            "inferd_fetch_s": fetch_s,
            "inferd_fetch_bytes": fetch_bytes,
            "inferd_fetch_mb_s": fetch_bytes / fetch_s / 1e6 if fetch_s else None,
            "load_s3_cold_s": cold_s,
            "load_local_s": local_s,
            "load_s3_cached_s": warm_s,
            "cached_objects_fetched": warm.get("inferd_repository_fetch_objects_total", 0),
            "cached_cache_hits": warm.get("inferd_repository_cache_hits_total", 0),
        }
        print(json.dumps(row), flush=True)
        rows.append(row)
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]
           if k != "round" and all(isinstance(r[k], (int, float)) for r in rows)}
    med["fetch_vs_raw"] = med["inferd_fetch_mb_s"] / med["raw_get_mb_s"]
    med["ready_vs_raw_then_local"] = (med["raw_get_s"] + med["load_local_s"]) / med["load_s3_cold_s"]
    return med


def bench_poll(args, bucket, env, tmp):
    prefix = "many"
    config = harness.identity_config("{name}", "TYPE_INT32", dims=(4,))

    def upload(i):
        name = "m%04d" % i
        s3_util.put(bucket, "%s/%s/config.pbtxt" % (prefix, name), config.replace("{name}", name))
        s3_util.put(bucket, "%s/%s/1/" % (prefix, name), b"")

    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        list(pool.map(upload, range(args.models)))
    upload_s = time.monotonic() - t0

    s3 = s3_util.client()
    t0 = time.monotonic()
    pages = objects = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/"):
        pages += 1
        objects += page.get("KeyCount", 0)
    boto3_list_s = time.monotonic() - t0
    s3.close()

    server = harness.MetricsServer(
        s3_util.repository_url(bucket, prefix),
        ["--model-control-mode=poll", "--repository-poll-secs=%d" % args.poll_secs,
         "--model-cache-dir=" + tempfile.mkdtemp(dir=tmp)], env=env, startup_timeout=600)
    t0 = time.monotonic()
    server.start()
    try:
        client = server.client(timeout=60)

        def all_ready():
            r = client.post("/v2/repository/index", body=b"{}")
            return r.status == 200 and sum(e.get("state") == "READY" for e in r.json()) == args.models

        if not harness.wait_until(all_ready, 600, 0.5):
            raise RuntimeError("not every model READY\n" + server.log_tail())
        start_s = time.monotonic() - t0
        time.sleep(args.poll_secs)  # the pass that may still run after the last load
        m0, c0 = scrape(server), cpu_seconds(server.proc.pid)
        time.sleep(args.poll_seconds)
        m1, c1 = scrape(server), cpu_seconds(server.proc.pid)
    finally:
        server.stop()
    passes = m1["inferd_repository_listings_total"] - m0["inferd_repository_listings_total"]
    return {
        "models": args.models,
        "objects": objects,
        "listing_pages": pages,
        "upload_s": upload_s,
        "start_to_all_ready_s": start_s,
        "boto3_list_s": boto3_list_s,
        "poll_passes": passes,
        "objects_fetched_per_pass": (m1["inferd_repository_fetch_objects_total"]
                                     - m0["inferd_repository_fetch_objects_total"]) / max(passes, 1),
        "cpu_ms_per_pass": (c1 - c0) * 1000 / max(passes, 1),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--models", type=int, default=1000, help="models in the poll benchmark")
    ap.add_argument("--poll-secs", type=int, default=1, help="inferd's --repository-poll-secs")
    ap.add_argument("--poll-seconds", type=int, default=10, help="how long passes are counted")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="inferd-s3-bench-")
    fixture_dir = os.path.join(tmp, "rgw")
    subprocess.run([sys.executable, CEPH_RGW, "start", fixture_dir], check=True)
    os.environ["INFERD_S3_FIXTURE"] = os.path.join(fixture_dir, "s3.json")
    try:
        env = s3_util.server_env()
        load = bench_load(args, s3_util.make_bucket("bench-load"), env, tmp)
        poll = bench_poll(args, s3_util.make_bucket("bench-poll"), env, tmp)
    finally:
        subprocess.run([sys.executable, CEPH_RGW, "stop", fixture_dir])
        subprocess.run(["rm", "-rf", tmp])
    print(json.dumps({"load": load, "poll": poll}, indent=1))
    print("\n| %s, medians of %d rounds | |\n| --- | --- |" % (args.model, args.rounds))
    print("| bytes | %d |" % load["bytes"])
    print("| boto3 GET, %d streams | %.2f s, %.0f MB/s |" % (PARALLEL_GETS, load["raw_get_s"],
                                                        load["raw_get_mb_s"]))
    print("| inferd fetch (its counters) | %.2f s, %.0f MB/s: **%.2f of boto3** |"
          % (load["inferd_fetch_s"], load["inferd_fetch_mb_s"], load["fetch_vs_raw"]))
    print("| load to READY from the bucket, empty cache | %.2f s |" % load["load_s3_cold_s"])
    print("| load to READY from local disk | %.2f s |" % load["load_local_s"])
    print("| load to READY from the bucket, cache of the previous run | %.2f s (%d objects "
          "fetched, %d cache hits) |" % (load["load_s3_cached_s"], load["cached_objects_fetched"],
                                         load["cached_cache_hits"]))
    print("| (boto3 GET + local load) / s3 load | %.2f |" % load["ready_vs_raw_then_local"])
    print("\n| poll, %d models (%d objects, %d pages) | |\n| --- | --- |"
          % (poll["models"], poll["objects"], poll["listing_pages"]))
    print("| passes counted | %d |" % poll["poll_passes"])
    print("| objects downloaded per pass | %.1f |" % poll["objects_fetched_per_pass"])
    print("| inferd CPU per pass | %.1f ms |" % poll["cpu_ms_per_pass"])
    print("| boto3 listing the same prefix | %.0f ms |" % (poll["boto3_list_s"] * 1000))
    print("| start to every model READY | %.1f s |" % poll["start_to_all_ready_s"])


if __name__ == "__main__":
    main()
