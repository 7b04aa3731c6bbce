#!/bin/bash
# S3 model repositories against a throwaway Ceph RGW (bench/s3/s3_bench.py):
# resnet50 into READY from the bucket vs boto3's raw GETs and local disk, and a
# poll pass over 1,000 unchanged models. Needs `make build models` and the
# Ceph packages (scripts/install-deps.sh). Extra arguments go to s3_bench.py
# (--rounds, --models, --model).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
export INFERD_BIN="${INFERD_BIN:-$ROOT/build/bin/inferd}"
exec /usr/bin/python3 "$ROOT/bench/s3/s3_bench.py" "$@"
