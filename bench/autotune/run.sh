#!/bin/bash
# "Fast without tuning" (issue 25): resnet18 and digits served with the configs a user has —
# the shipped examples/models/<m>/config.pbtxt, and a config with no tuning fields at all (no
# dynamic_batching, no instance_group) — against the best direct libtorch run of the same
# model.pt (direct_sweep.py: as saved and optimized, batch 1-16, 1..N threads), at
# concurrency 1, 4 and 16 with batch-1 HTTP clients (infer-perf). Then the delay model with a
# GPU-like cost curve: adaptive batching against the best fixed max_batch_size
# (delay_adaptive.sh). Needs `make build models`. Writes docs/performance.md (section autotune).
#
# Ratios: at concurrency 1, inferd's images/s over the direct best batch-1 images/s (closed
# loop with one client, so this is the latency ratio); at 4 and 16, over the direct best
# throughput at any batch size and thread count.
source "$(dirname "$0")/../lib/common.sh"
HW=$(nproc)
SECONDS_PER_POINT="${SECONDS_PER_POINT:-3}"
INTERVAL_MS="${INTERVAL_MS:-4000}"
MODELS_LIST="${MODELS_LIST:-resnet18 digits}"
CONCURRENCIES="${CONCURRENCIES:-1 4 16}"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
TMP=$(mktemp -d); trap 'cleanup; rm -rf "$TMP"' EXIT
MODELS="$ROOT/examples/models"
THREADS=1; [ "$HW" -gt 1 ] && THREADS="1,$HW"

for m in $MODELS_LIST; do
  [ -f "$MODELS/$m/1/model.pt" ] || { echo "missing $MODELS/$m/1/model.pt: run make models"; exit 1; }
  echo "direct $m: batch 1-16, threads $THREADS, as saved and optimized..."
  /usr/bin/python3 "$ROOT/bench/autotune/direct_sweep.py" --model "$m" --threads "$THREADS" \
    --seconds "$SECONDS_PER_POINT" > "$TMP/direct_$m.json"
done

# repo VARIANT MODEL: a repository with MODEL's files and either the shipped config or a bare one.
repo() {
  local variant=$1 m=$2 dir="$TMP/repo_$1/$2"
  mkdir -p "$dir/1"
  cp "$MODELS/$m/1/model.pt" "$dir/1/model.pt"  # symlinks out of the repository are refused
  for f in "$MODELS/$m"/*.txt; do [ -f "$f" ] && cp "$f" "$dir/"; done
  if [ "$variant" = shipped ]; then
    cp "$MODELS/$m/config.pbtxt" "$dir/config.pbtxt"
  else  # the model's interface only: name, platform, batch limit, inputs, outputs
    /usr/bin/python3 - "$MODELS/$m/config.pbtxt" > "$dir/config.pbtxt" <<'PY'
import re, sys
text = re.sub(r"#.*", "", open(sys.argv[1]).read())
keep = []
for key in ("name", "platform", "max_batch_size"):
    keep += re.findall(r"^%s:.*$" % key, text, re.M)
for key in ("input", "output"):
    m = re.search(r"^%s\s*\[.*?^\]" % key, text, re.M | re.S)
    keep.append(re.sub(r"\s*label_filename:[^\n]*", "", m.group(0)))
print("\n".join(keep))
PY
  fi
}

ROWS=""
for variant in shipped bare; do
  for m in $MODELS_LIST; do
    repo "$variant" "$m"
    start_inferd "$TMP/inferd_${variant}_$m.log" --model-repository "$TMP/repo_$variant" \
      --model-control-mode=explicit --load-model="$m"
    for c in $CONCURRENCIES; do
      out="$TMP/${variant}_${m}_$c.json"
      # A warm-up window first: the adaptive parts settle under the new load before measuring.
      "$PERF" -m "$m" -u 127.0.0.1:$HTTP_PORT --concurrency-range "$c" --warmup-ms 6000 \
        --measurement-interval "$INTERVAL_MS" --max-trials 3 --json > "$out"
      curl -s -X POST "127.0.0.1:$HTTP_PORT/v2/repository/index" > "$TMP/index_${variant}_${m}_$c.json"
      ROWS+="$variant $m $c $out $TMP/index_${variant}_${m}_$c.json"$'\n'
      echo "$variant $m concurrency $c: $(json_field "$out" "round(d['results'][0]['throughput_infer_per_sec'],1)") infer/s"
    done
    kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true
  done
done

TABLE=$(/usr/bin/python3 - "$TMP" <<PY
import json, sys
tmp = sys.argv[1]
rows = """$ROWS""".strip().splitlines()
print("| model | config | concurrency | images/s | p99 (ms) | average batch | layout | vs direct |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
worst = {}
for line in rows:
    variant, m, c, out, index = line.split()
    r = json.load(open(out))["results"][0]
    d = json.load(open("%s/direct_%s.json" % (tmp, m)))
    peer = d["best_batch1"]["images_per_sec"] if int(c) == 1 else d["best"]["images_per_sec"]
    ratio = r["throughput_infer_per_sec"] / peer
    entry = next((e for e in json.load(open(index)) if e.get("name") == m), {})
    layout = ", ".join("%s %s" % (k, v) for k, v in sorted(entry.items())
                       if "layout" in k or "instance" in k) or "-"
    print("| %s | %s | %s | %.1f | %.1f | %.2f | %s | **%.2f** |" % (
        m, variant, c, r["throughput_infer_per_sec"], r["latency_p99_us"] / 1000.0,
        r.get("server_avg_batch", 0), layout, ratio))
print()
for m in sorted({line.split()[1] for line in rows}):
    d = json.load(open("%s/direct_%s.json" % (tmp, m)))
    b, b1 = d["best"], d["best_batch1"]
    print("Direct %s: best %.1f images/s (%s, %d thread(s), batch %d); best batch 1: %.1f "
          "images/s, %.2f ms (%s, %d thread(s))." % (
              m, b["images_per_sec"], b["form"], b["threads"], b["batch"],
              b1["images_per_sec"], b1["batch_latency_ms"], b1["form"], b1["threads"]))
PY
)
echo "$TABLE"

DELAY=""
if [ -x "$ROOT/bench/autotune/delay_adaptive.sh" ]; then
  DELAY=$("$ROOT/bench/autotune/delay_adaptive.sh" | tee /dev/stderr | sed -n '/^| /p')
fi

/usr/bin/python3 "$ROOT/bench/lib/update_perf_doc.py" autotune <<DOC
## Fast without tuning: shipped and bare configs against the best direct run (\`bench/autotune\`)

Command: \`bench/autotune/run.sh\` (measured $(date -u +%Y-%m-%d) on the $HW-core development
machine; \`infer-perf\` batch-1 HTTP clients on the same cores; load average at the start:
$LOAD_BEFORE, at the end: $(cut -d' ' -f1-3 /proc/loadavg)). Each point: a 6 s warm-up window
(the adaptive batcher and the layout tuner settle under the new load), then windows of
${INTERVAL_MS} ms until stable (at most 3). "shipped": \`examples/models/<m>/config.pbtxt\` as
in the repository; "bare": the model's interface only (name, platform, max_batch_size, inputs,
outputs), so every scheduling choice is inferd's. "vs direct": at concurrency 1 against the
direct best batch-1 run (one client in a closed loop: the latency ratio), at 4 and 16 against
the direct best throughput at any batch size, thread count and form (goal ≥ 0.95 for both).
The direct peer is \`bench/autotune/direct_sweep.py\`: the same \`model.pt\` in a Python loop
over the same libtorch, as saved and frozen through \`torch.jit.optimize_for_inference\`,
batch 1-16, 1..$HW threads, ${SECONDS_PER_POINT} s each.

$TABLE

$( [ -n "$DELAY" ] && printf 'The delay model with a GPU-like cost curve (bench/autotune/delay_adaptive.sh):\n\n%s\n' "$DELAY")
DOC
