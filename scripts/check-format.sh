#!/bin/sh
# Fails if any of our C++ sources differs from clang-format's output.
set -eu
cd "$(dirname "$0")/.."
files=$(git ls-files -co --exclude-standard 'src/*.cc' 'src/*.h' 'tests/*.cc' 'tests/*.h' \
  'include/*.h' 'backends/*.cc' 'backends/*.h' 'client/*.cc' 'client/*.h' 'tools/*.cc' \
  'gateway/*.cc' 'gateway/*.h' 'bench/*.cc' 'fuzz/*.cc' 'fuzz/*.h')
# Only files that exist (a deleted file is still listed until committed).
files=$(for f in $files; do [ -f "$f" ] && echo "$f"; done)
[ -z "$files" ] && exit 0
clang-format --dry-run --Werror $files
echo "clang-format: $(echo "$files" | wc -w) files clean"
