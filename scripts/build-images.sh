#!/bin/sh
# Builds the OCI images of inferd, infer-gateway, infer-batcher and
# inferd-discovery from a
# release build and Debian 12 packages, with no network but the Debian mirror
# the host's apt already uses, and no base image from a registry
# (docs/images.md):
#
#   scripts/build-images.sh BUILD_DIR [OUT_DIR]      (`make image`)
#
# OUT_DIR (default BUILD_DIR/images) receives inferd.oci.tar,
# infer-gateway.oci.tar, infer-batcher.oci.tar and inferd-discovery.oci.tar.
# Each image is two layers:
#   1. one root filesystem shared by all four, made by mmdebstrap from the
#      Debian packages the programs need (derived from `ldd` + `dpkg -S` of
#      the installed files, plus what they dlopen), without docs, man pages
#      and locales, without apt, with the user inferd (10001:10001);
#      cached in IMAGE_CACHE (default /var/cache/inferd/images), keyed by a
#      hash of everything that decides its content, so a rebuild skips it;
#   2. the program's own files from `cmake --install BUILD_DIR`.
# They are assembled with buildah in a private store under OUT_DIR, which is
# removed afterwards.
#
# The default inferd image has every backend of the build but two whose
# Debian libraries would more than double it (docs/images.md, sizes): pytorch
# (libtorch) and image (OpenCV's imgcodecs, which links GDAL, Poppler, HDF5,
# GDCM, OpenEXR, libheif and x265 to decode JPEG and PNG).
# IMAGE_VARIANTS (space or comma separated) adds:
#   full     inferd-full.oci.tar: inferd with every backend of the build, on a
#            root filesystem that also holds libtorch and those libraries.
#   cuda     inferd-cuda.oci.tar: inferd from a CUDA build of BUILD_DIR, set up
#            for the NVIDIA container toolkit (the driver comes from the host).
# IMAGE_TAG (default: the project version) tags the images.
set -eu

die() {
  echo "build-images: $*" >&2
  exit 1
}

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  die "usage: $0 BUILD_DIR [OUT_DIR]"
fi
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=$(cd "$1" 2>/dev/null && pwd) || die "no build directory $1 (run \`make build\` first)"
OUT_DIR=${2:-$BUILD_DIR/images}
IMAGE_CACHE=${IMAGE_CACHE:-/var/cache/inferd/images}
IMAGE_VARIANTS=$(echo "${IMAGE_VARIANTS:-}" | tr ',' ' ')
SUITE=bookworm

for v in $IMAGE_VARIANTS; do
  case "$v" in
    full | cuda) ;;
    *) die "unknown IMAGE_VARIANTS entry '$v' (known: full, cuda)" ;;
  esac
done
want() {
  case " $IMAGE_VARIANTS " in *" $1 "*) return 0 ;; esac
  return 1
}

# mmdebstrap needs root here (its unshare mode needs subordinate ids, which a
# CI container does not have); buildah then uses the same identity.
[ "$(id -u)" -eq 0 ] || die "must run as root (mmdebstrap and buildah write files owned by other users)"
for tool in mmdebstrap:mmdebstrap buildah:buildah ldd:libc-bin dpkg-query:dpkg strip:binutils; do
  command -v "${tool%%:*}" >/dev/null 2>&1 ||
    die "${tool%%:*} not found (apt-get install ${tool#*:}; scripts/install-deps.sh installs it)"
done
cache_file="$BUILD_DIR/CMakeCache.txt"
[ -f "$cache_file" ] || die "$BUILD_DIR is not a CMake build directory (run \`make build\` first)"
grep -q '^CMAKE_BUILD_TYPE:STRING=Release$' "$cache_file" ||
  die "$BUILD_DIR is not a Release build (images ship what \`make build\` builds)"
if want cuda && ! grep -q '^CUDA_CUDART:FILEPATH=/' "$cache_file"; then
  die "IMAGE_VARIANTS=cuda needs a CUDA build of inferd: install the CUDA toolkit in /usr/local/cuda and rebuild $BUILD_DIR (docs/gpu.md)"
fi

VERSION=$(sed -n 's/^project(inferd VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
[ -n "$VERSION" ] || die "no project version in $SRC/CMakeLists.txt"
IMAGE_TAG=${IMAGE_TAG:-$VERSION}
REVISION=$(git -C "$SRC" rev-parse HEAD 2>/dev/null || echo unknown)
if [ "$REVISION" != unknown ] && [ -n "$(git -C "$SRC" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  REVISION="$REVISION-dirty"
fi

mkdir -p "$OUT_DIR" "$IMAGE_CACHE"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
WORK="$OUT_DIR/work"
STORE="$OUT_DIR/buildah"
BUILDAH="buildah --root $STORE/root --runroot $STORE/run --storage-driver vfs"
# The buildah store and the staging trees only live for this run: the vfs
# driver keeps a full copy of every layer, so leaving them would grow the
# disk by the images' size on every run.
cleanup() {
  if [ -d "$STORE" ]; then
    $BUILDAH rm --all >/dev/null 2>&1 || true
    $BUILDAH rmi --all --force >/dev/null 2>&1 || true
    rm -rf "$STORE"
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cleanup
mkdir -p "$WORK"

# ---- the installed tree --------------------------------------------------------------
# --strip: symbols are for debugging the build tree, not for shipping.
STAGE="$WORK/stage"
DESTDIR="$STAGE" cmake --install "$BUILD_DIR" --prefix /opt/inferd --strip >/dev/null
P="$STAGE/opt/inferd"
BACKENDS=lib/inferd/backends
for f in bin/inferd bin/infer-gateway bin/infer-batcher bin/inferd-discovery; do
  [ -x "$P/$f" ] || die "cmake --install did not install $f (is $BUILD_DIR fully built?)"
done

# One tree per image, laid out as in the image (copied, so that each layer
# holds exactly its program's files).
tree() { # NAME FILE...: the image tree NAME with FILEs under /opt/inferd
  name=$1
  shift
  for f in "$@"; do
    mkdir -p "$WORK/$name/opt/inferd/$(dirname "$f")"
    cp -a "$P/$f" "$WORK/$name/opt/inferd/$f"
  done
}
default_backends="" heavy_backends=""
for f in "$P/$BACKENDS"/*; do
  b=$BACKENDS/$(basename "$f")
  case "$b" in
    */libinferd_pytorch.so | */libinferd_image.so) heavy_backends="$heavy_backends $b" ;;
    *) default_backends="$default_backends $b" ;;
  esac
done
# shellcheck disable=SC2086
tree inferd bin/inferd $default_backends
mkdir -p "$WORK/inferd/models"
tree infer-gateway bin/infer-gateway
tree infer-batcher bin/infer-batcher
tree inferd-discovery bin/inferd-discovery
if want full; then
  [ -n "$heavy_backends" ] ||
    die "IMAGE_VARIANTS=full: $BUILD_DIR has neither the pytorch nor the image backend (libtorch-dev, OpenCV missing at configure time?)"
  # shellcheck disable=SC2086
  tree inferd-full-backends $heavy_backends
fi

# ---- runtime packages ----------------------------------------------------------------
# The Debian packages that own the shared libraries FILEs load (ldd: the whole
# closure), one per line. A library no package owns is an error: the image
# would not have it.
packages_of() {
  : >"$WORK/libs"
  for f in "$@"; do
    ldd "$f" >"$WORK/ldd" || die "ldd $f failed"
    if grep -q '=> not found' "$WORK/ldd"; then
      die "$f: $(grep '=> not found' "$WORK/ldd" | tr -s ' \t' ' ') (on this host)"
    fi
    awk '$2 == "=>" && $3 ~ /^\// {print $3}' "$WORK/ldd" >>"$WORK/libs"
  done
  # One dpkg-query for all (each call reads dpkg's whole file list): ldd may
  # name /lib/... for a file dpkg knows as /usr/lib/... (merged /usr), or a
  # symbolic link's name, so each library is asked for under all four names.
  : >"$WORK/names"
  # shellcheck disable=SC2013 # paths without blanks
  for lib in $(sort -u "$WORK/libs"); do
    real=$(readlink -f "$lib")
    printf '%s\n' "$lib" "$real" "/usr$lib" "/usr$real" >>"$WORK/names"
  done
  # shellcheck disable=SC2046
  dpkg-query -S $(sort -u "$WORK/names") >"$WORK/owners" 2>/dev/null || true
  # shellcheck disable=SC2013
  for lib in $(sort -u "$WORK/libs"); do
    real=$(readlink -f "$lib")
    grep -qF -e ": $lib" -e ": $real" -e ": /usr$lib" -e ": /usr$real" "$WORK/owners" ||
      die "$lib (needed by $*): no Debian package owns it, so the image could not have it"
  done
  sed 's/: .*//' "$WORK/owners" | tr ', ' '\n' | sed -e '/^$/d' -e 's/:amd64$//' | sort -u
}
files_of() { # the ELF files of the image tree $1
  find "$WORK/$1" -type f | while read -r f; do
    [ "$(head -c 4 "$f" | tail -c 3)" != ELF ] || echo "$f"
  done
}
# shellcheck disable=SC2046
base_packages=$(packages_of $(files_of inferd) $(files_of infer-gateway) $(files_of infer-batcher) \
  $(files_of inferd-discovery))
# Loaded with dlopen, so ldd does not see them: libcurl for s3:// repositories,
# the OTLP exporter and inferd-discovery's Kubernetes client
# (src/objectstore/curl_library.cc), and the CA store it verifies TLS with.
base_packages="$base_packages libcurl4 ca-certificates"
# The python backend runs its stub on /usr/bin/python3 and hands models NumPy
# arrays (docs/python_backend.md).
if [ -f "$WORK/inferd/opt/inferd/$BACKENDS/libinferd_python.so" ]; then
  base_packages="$base_packages python3 python3-numpy"
fi
# mmdebstrap's essential phase satisfies init-system-helpers' `usrmerge |
# usr-is-merged` with usrmerge, which brings perl (50 MB) into a /usr that is
# merged from the start: usr-is-merged takes its place, and the customize hook
# below purges usrmerge and perl (perl-base, which is essential, stays).
base_packages="$base_packages usr-is-merged"

# ---- the root filesystem (cached) ----------------------------------------------------
# Essential packages only (no apt: the image is never updated in place; it is
# rebuilt), no documentation but the copyright files, no man pages or
# translations; the user inferd; no apt lists or logs. The dpkg database stays,
# for image scanners to read.
# OpenCV's core library links libGL (for its OpenGL interop, which no backend
# uses), and Debian's libglx0 depends on Mesa's GL driver, which brings LLVM
# and Z3: 180 MB that are only ever loaded when a program creates a GL
# context. The hook purges that driver stack (libGL itself stays, so the
# libraries still resolve: tests/cluster/test_image.py runs ldd in the image).
MMDEBSTRAP_OPTS="--variant=essential
--mode=root
--format=tar
--dpkgopt=path-exclude=/usr/share/doc/*
--dpkgopt=path-include=/usr/share/doc/*/copyright
--dpkgopt=path-exclude=/usr/share/man/*
--dpkgopt=path-exclude=/usr/share/info/*
--dpkgopt=path-exclude=/usr/share/locale/*
--dpkgopt=path-exclude=/usr/share/lintian/*
--dpkgopt=path-exclude=/usr/share/bash-completion/*
--customize-hook=chroot \$1 dpkg --purge usrmerge libfile-find-rule-perl libnumber-compare-perl libtext-glob-perl perl libperl5.36 perl-modules-5.36 >/dev/null
--customize-hook=chroot \$1 dpkg --purge --force-depends libglx-mesa0 libgl1-mesa-dri libllvm15 libz3-4 >/dev/null 2>&1
--customize-hook=echo inferd:x:10001:10001:inferd:/nonexistent:/usr/sbin/nologin >>\$1/etc/passwd
--customize-hook=echo inferd:x:10001: >>\$1/etc/group
--customize-hook=echo inferd:*:19000:0:99999:7::: >>\$1/etc/shadow
--customize-hook=rm -rf \$1/var/lib/apt/lists/* \$1/var/cache/apt/* \$1/var/cache/debconf/*-old \$1/var/log/*"
# ROOTFS PACKAGES...: the path of the cached root filesystem with PACKAGES,
# built if missing. The key covers the package list, the options, the suite,
# the candidate versions in the host's apt lists (so a Debian point release
# or security update, after `apt-get update`, makes a new one) and the
# mmdebstrap version.
rootfs() {
  list=$(echo "$@" | tr ' ' '\n' | sed '/^$/d' | sort -u)
  # shellcheck disable=SC2086
  versions=$(apt-cache show --no-all-versions $list 2>/dev/null | sed -n 's/^\(Package\|Version\): //p')
  key=$(printf '%s\n' "$list" "$MMDEBSTRAP_OPTS" "$SUITE" "$versions" "$(mmdebstrap --version)" |
    sha256sum | cut -c1-16)
  out="$IMAGE_CACHE/rootfs-$SUITE-$key.tar"
  if [ -f "$out" ]; then
    echo "build-images: root filesystem cached: $out" >&2
  else
    echo "build-images: making the root filesystem $out with mmdebstrap:" "$(echo "$list" | paste -sd' ')" >&2
    old_ifs=$IFS
    IFS='
'
    # shellcheck disable=SC2086
    mmdebstrap --quiet $MMDEBSTRAP_OPTS --include="$(echo "$list" | paste -sd,)" \
      "$SUITE" "$out.tmp.$$" >&2 || {
      rm -f "$out.tmp.$$"
      die "mmdebstrap failed (see above; it needs the host's apt sources to reach a Debian $SUITE mirror)"
    }
    IFS=$old_ifs
    mv "$out.tmp.$$" "$out"
  fi
  echo "$out"
}
# shellcheck disable=SC2086
base_tar=$(rootfs $base_packages)

# ---- assembly ------------------------------------------------------------------------
CREATED=$(git -C "$SRC" log -1 --format=%cI 2>/dev/null || date -u +%Y-%m-%dT%H:%M:%SZ)
# BASE_IMAGE ROOTFS: a local image of the root filesystem alone, committed once
# so that every image shares the same first layer.
base_image() {
  c=$($BUILDAH from scratch)
  $BUILDAH add "$c" "$2" / >/dev/null
  $BUILDAH commit --quiet --rm "$c" "$1" >/dev/null
}
# IMAGE NAME FROM TITLE ENTRYPOINT CMD PORTS [ENV...] [-- EXTRA_TREE...]:
# OUT_DIR/NAME.oci.tar, FROM plus the tree of NAME (and EXTRA_TREEs).
image() {
  name=$1 from=$2 title=$3 entrypoint=$4 cmd=$5 ports=$6
  shift 6
  c=$($BUILDAH from "$from")
  $BUILDAH add "$c" "$WORK/$name" / >/dev/null
  extra_env=""
  while [ $# -gt 0 ]; do
    if [ "$1" = -- ]; then
      shift
      for t in "$@"; do $BUILDAH add "$c" "$WORK/$t" / >/dev/null; done
      break
    fi
    extra_env="$extra_env --env $1"
    shift
  done
  port_args=""
  for p in $ports; do port_args="$port_args --port $p/tcp"; done
  # Numeric user, so that Kubernetes can check runAsNonRoot without reading
  # /etc/passwd.
  # shellcheck disable=SC2086
  $BUILDAH config --user 10001:10001 --workingdir /opt/inferd \
    --entrypoint "$entrypoint" --cmd "$cmd" $port_args \
    --env PATH=/opt/inferd/bin:/usr/bin:/bin $extra_env \
    --label org.opencontainers.image.title="$title" \
    --label org.opencontainers.image.version="$VERSION" \
    --label org.opencontainers.image.revision="$REVISION" \
    --label org.opencontainers.image.created="$CREATED" \
    --label org.opencontainers.image.description="$title, Debian $SUITE, built by scripts/build-images.sh" \
    --created-by "scripts/build-images.sh" "$c"
  rm -f "$OUT_DIR/$name.oci.tar"
  $BUILDAH commit --quiet --rm "$c" "oci-archive:$OUT_DIR/$name.oci.tar:$name:$IMAGE_TAG" >/dev/null
  echo "build-images: $OUT_DIR/$name.oci.tar ($(du -m "$OUT_DIR/$name.oci.tar" | cut -f1) MB)"
}

mkdir -p "$STORE"
base_image localhost/inferd-base "$base_tar"
image inferd localhost/inferd-base inferd '["/opt/inferd/bin/inferd"]' \
  '["--model-repository=/models"]' "8000 8001 8002"
image infer-gateway localhost/inferd-base infer-gateway '["/opt/inferd/bin/infer-gateway"]' \
  '["--help"]' "8080 8081"
image infer-batcher localhost/inferd-base infer-batcher '["/opt/inferd/bin/infer-batcher"]' \
  '["--help"]' "8000 8001"
image inferd-discovery localhost/inferd-base inferd-discovery '["/opt/inferd/bin/inferd-discovery"]' \
  '["--help"]' "18000 18080"

if want cuda; then
  # The CUDA runtime is linked statically (cmake/InferdCuda.cmake); libcuda
  # and NVML (dlopened for GPU metrics) are the host driver's, mounted into
  # the container by the NVIDIA container toolkit when these ask for it.
  cp -a "$WORK/inferd" "$WORK/inferd-cuda"
  image inferd-cuda localhost/inferd-base "inferd (CUDA)" '["/opt/inferd/bin/inferd"]' \
    '["--model-repository=/models"]' "8000 8001 8002" \
    NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility
fi
if want full; then
  # Its own root filesystem (default packages + the heavy backends'): one
  # more layer on top of the shared one would need a file-level diff of two
  # dpkg installs; a second base is simple and exact.
  # shellcheck disable=SC2046
  full_packages=$(packages_of $(files_of inferd-full-backends))
  # shellcheck disable=SC2086
  full_tar=$(rootfs $base_packages $full_packages)
  base_image localhost/inferd-full-base "$full_tar"
  cp -a "$WORK/inferd" "$WORK/inferd-full"
  image inferd-full localhost/inferd-full-base "inferd (every backend)" \
    '["/opt/inferd/bin/inferd"]' '["--model-repository=/models"]' "8000 8001 8002" \
    -- inferd-full-backends
fi
