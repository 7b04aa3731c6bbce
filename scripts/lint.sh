#!/bin/bash
# clang-tidy (.clang-tidy's curated checks, every finding an error) and
# clang's -Wthread-safety analysis over our sources, from a build's
# compile_commands.json. `make test` runs it after the Release build.
#
#   scripts/lint.sh [BUILD_DIR]          every source file
#   scripts/lint.sh BUILD_DIR FILE...    just these
#
# A file whose inputs did not change since it last passed is not checked
# again: the key is the file, every header it includes (from ninja's
# dependency log), its compile command, .clang-tidy and clang-tidy's version;
# passing keys are kept in ${XDG_CACHE_HOME:-~/.cache}/inferd-lint (like
# ccache's objects, outside the checkout; a fresh machine checks everything).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
db="$build/compile_commands.json"
[ -f "$db" ] || { echo "lint: $db is missing: build first (make build)" >&2; exit 2; }
command -v clang-tidy >/dev/null || { echo "lint: clang-tidy is not installed" >&2; exit 2; }
cache=${XDG_CACHE_HOME:-$HOME/.cache}/inferd-lint
mkdir -p "$cache"

if [ $# -gt 0 ]; then
  files=("$@")
else
  # Left out: backends/pytorch/pytorch_backend.cc, because clang 14 cannot
  # compile Debian's libtorch 1.13 headers against GCC 12's libstdc++
  # (c10::IValue is incomplete where std::vector<IValue> is instantiated);
  # GCC's -Wall -Wextra -Werror still covers it.
  mapfile -t files < <(git ls-files 'src/*.cc' 'backends/*.cc' 'client/*.cc' 'tools/*.cc' |
    grep -v '^backends/pytorch/pytorch_backend.cc$' |
    while read -r f; do
      # Only what this build compiles (no CUDA file without a toolkit, no gRPC
      # file with INFERD_WITH_GRPC=OFF).
      grep -q "\"file\": \"$PWD/$f\"" "$db" && echo "$f"
    done)
fi

version=$(clang-tidy --version | tr -d '\n')
tidy_config=$(sha256sum .clang-tidy | cut -d' ' -f1)
# Headers each object depends on, from ninja's log of the compiler's -MD output.
deps=$(mktemp)
trap 'rm -f "$deps"' EXIT
ninja -C "$build" -t deps >"$deps" 2>/dev/null || true

# "<file> <key>" per file: sha256 of the checker's version and config, the
# compile command, the file and every non-system header it includes.
keys=$(LINT_VERSION="$version $tidy_config" python3 - "$build" "$deps" "${files[@]}" <<'PY'
import hashlib, json, os, sys
build, deps_file, files = sys.argv[1], sys.argv[2], sys.argv[3:]
db = {os.path.relpath(e["file"]): e for e in json.load(open(os.path.join(build, "compile_commands.json")))}
deps, current = {}, None
for line in open(deps_file):
    if line and not line[0].isspace() and ": #deps" in line:
        current = deps.setdefault(line.split(": #deps")[0], [])
    elif current is not None and line.strip():
        current.append(line.strip())
def digest(path):
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return "missing"
for f in files:
    e = db.get(f)
    h = hashlib.sha256(os.environ["LINT_VERSION"].encode())
    # The checkout's location is not part of the key: another clone of the
    # same sources (CI's) reuses what passed.
    h.update((e or {}).get("command", "").replace(os.getcwd(), "<checkout>").encode())
    h.update(digest(f).encode())
    for d in deps.get((e or {}).get("output", ""), []):
        if not d.startswith("/usr/"):
            h.update(d.encode() + digest(os.path.join(build, d)).encode())
    print(f, h.hexdigest())
PY
)

todo=()
while read -r f k; do
  [ -e "$cache/$k" ] || todo+=("$f:$k")
done <<<"$keys"
echo "lint: ${#files[@]} files, $((${#files[@]} - ${#todo[@]})) unchanged since they passed"
[ ${#todo[@]} -eq 0 ] && exit 0

check_one() {
  local f=${1%%:*} k=${1##*:} out
  # -Wno-ambiguous-reversed-operator: RapidJSON's iterators (C++20 rules
  # clang applies to a third-party header).
  if out=$(clang-tidy -p "$2" --quiet --extra-arg=-Wthread-safety \
      --extra-arg=-Wno-unknown-warning-option --extra-arg=-Wno-ambiguous-reversed-operator \
      "$f" 2>&1); then
    touch "$3/$k"
  else
    printf '%s\n' "$out" | grep -v "warnings generated\|^Suppressed\|^Use -header-filter" >&2
    echo "lint: $f: FAILED" >&2
    return 1
  fi
}
export -f check_one
printf '%s\n' "${todo[@]}" | xargs -P "$(nproc)" -I{} bash -c 'check_one "$@"' _ {} "$build" "$cache"
echo "lint: clean"
