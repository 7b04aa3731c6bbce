#!/bin/bash
# Packs inferd for a GPU machine that has CUDA, PyTorch, CMake and ninja but
# none of inferd's Debian libraries (bench/gpu/run.sh runs there).
#   bench/gpu/bundle.sh [--no-build] [DEST]     (DEST: <repo>/.gpu-bundle)
# DEST gets bin/ (inferd, infer-perf), backends/ (every built backend except
# pytorch, which run.sh builds there against that machine's CUDA libtorch),
# lib/ (the shared libraries those need, from ldd, minus the C and C++
# runtimes every Linux has), src/ (what building the pytorch backend needs),
# and MANIFEST. Binaries and libraries are stripped; the whole must stay
# under the device tool's 64 MiB (checked: the script fails above 60 MiB).
# Run with LD_LIBRARY_PATH=DEST/lib.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
BUILD_FIRST=1
if [ "${1:-}" = "--no-build" ]; then BUILD_FIRST=0; shift; fi
DEST="${1:-$ROOT/.gpu-bundle}"
LIMIT=$((60 * 1024 * 1024))

if [ "$BUILD_FIRST" = 1 ]; then
  export CCACHE_BASEDIR="$ROOT"
  [ -f "$BUILD/build.ninja" ] || cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release
  targets=(inferd infer-perf inferd_backend_identity)
  ninja -C "$BUILD" -t targets all 2>/dev/null | grep -q '^inferd_backend_onnx:' &&
    targets+=(inferd_backend_onnx)
  cmake --build "$BUILD" --target "${targets[@]}"
fi

rm -rf "$DEST"
mkdir -p "$DEST/bin" "$DEST/lib" "$DEST/backends" "$DEST/src"
cp "$BUILD/bin/inferd" "$BUILD/bin/infer-perf" "$DEST/bin/"
for b in "$BUILD"/lib/inferd/backends/libinferd_*.so; do
  case "$(basename "$b")" in
    # pytorch is built there against that machine's libtorch; the image backend's
    # OpenCV codecs pull in ~150 MiB of image libraries the GPU run does not use.
    libinferd_pytorch.so | libinferd_image.so) continue ;;
  esac
  cp "$b" "$DEST/backends/"
done

# Libraries every Linux machine has (glibc, the GCC runtimes): not copied.
SYSTEM_RE='/(ld-linux[^/]*|libc|libm|libpthread|libdl|librt|libresolv|libutil|libstdc\+\+|libgcc_s)\.so'
for elf in "$DEST"/bin/* "$DEST"/backends/*.so; do
  ldd "$elf" | awk '/=> \//{print $3}'
done | sort -u | grep -Ev "$SYSTEM_RE" | while read -r lib; do
  cp -L "$lib" "$DEST/lib/"
done
strip --strip-unneeded "$DEST"/bin/* "$DEST"/backends/*.so "$DEST"/lib/* 2>/dev/null || true

# Sources for building the pytorch backend on the GPU machine.
for d in include/inferd backends/common backends/pytorch bench/gpu/backend; do
  mkdir -p "$DEST/src/$d"
  cp -r "$ROOT/$d/." "$DEST/src/$d/"
done

{
  echo "inferd GPU bundle, made $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m)"
  echo "commit: $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo ' (with local changes)')"
  echo "libraries:"; find "$DEST/lib" -type f -printf "%f\n" | sort
} > "$DEST/MANIFEST"

size=$(du -sb "$DEST" | cut -f1)
echo "bundle: $DEST, $((size / 1024 / 1024)) MiB ($(ls "$DEST/lib" | wc -l) libraries)"
if [ "$size" -gt "$LIMIT" ]; then
  echo "bundle: larger than $((LIMIT / 1024 / 1024)) MiB; the device tool carries at most 64 MiB" >&2
  exit 1
fi
