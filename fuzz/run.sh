#!/bin/sh
# Runs one libFuzzer target for FUZZ_SECONDS (default 60) seconds.
# usage: run.sh <fuzzer> <seed corpus dir> <work corpus dir>
# New inputs go to the work directory (in the build tree); the seeds in the
# repository are only read. A crash leaves crash-* in the work directory's
# parent and fails the run.
set -eu
fuzzer=$1 seeds=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
cd "$(dirname "$work")"
# Every sanitizer report is a failure; third-party reports are suppressed
# in fuzz/ubsan.supp with the reason.
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$here/ubsan.supp"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
exec "$fuzzer" -max_total_time="${FUZZ_SECONDS:-60}" -timeout=10 -rss_limit_mb=4096 \
  -print_final_stats=1 "$work" "$seeds"
