#!/bin/sh
# (Re)generates the example model repository in examples/models.
# The built-in models (simple, simple_int8, simple_string, simple_identity, repeat_int32,
# identity) and the image pipelines (digits_preprocess, digits_pipeline,
# resnet50_preprocess, resnet50_pipeline) are plain configs kept in the
# repository; this script makes sure
# each has its version directory. The framework models (digits, digits_onnx,
# resnet18, resnet18_onnx, resnet50) have their configs and labels in the
# repository and their model files built by make_models.py with Debian's
# python3-torch; files that exist are kept (FORCE=1, or --force, rebuilds them).
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/models"
for model in simple simple_int8 simple_string simple_identity identity repeat_int32 \
    digits_preprocess digits_pipeline resnet50_preprocess resnet50_pipeline; do
  [ -f "$model/config.pbtxt" ] || { echo "make_models: $model/config.pbtxt is missing" >&2; exit 1; }
  mkdir -p "$model/1"
done
force=""
if [ "${FORCE:-0}" = "1" ] || [ "${1:-}" = "--force" ]; then force="--force"; fi
/usr/bin/python3 "$here/make_models.py" $force
echo "make_models: example repository ready in examples/models"
