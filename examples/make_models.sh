#!/bin/sh
# (Re)generates the example model repository in examples/models.
# The built-in models (simple, simple_int8, simple_string, simple_identity,
# identity) are plain configs kept in the repository; this script makes sure
# each has its version directory.
set -eu
cd "$(dirname "$0")/models"
for model in simple simple_int8 simple_string simple_identity identity; do
  [ -f "$model/config.pbtxt" ] || { echo "make_models: $model/config.pbtxt is missing" >&2; exit 1; }
  mkdir -p "$model/1"
done
echo "make_models: example repository ready in examples/models"
