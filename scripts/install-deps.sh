#!/bin/sh
# Installs, with apt-get, exactly the Debian 12 packages that inferd's build,
# tests and example models need; skips those already installed. Idempotent.
# Each package's reason is in docs/dependencies.md.
set -eu

PACKAGES="
cmake
ninja-build
ccache
g++
make
pkg-config
libboost-dev
rapidjson-dev
libprotobuf-dev
protobuf-compiler
libgrpc++-dev
protobuf-compiler-grpc
python3-grpcio
python3-protobuf
zlib1g-dev
libssl-dev
libcurl4-openssl-dev
openssl
clang
libclang-rt-14-dev
libgtest-dev
clang-format
clang-tidy
python3
curl
nginx
iproute2
python3-yaml
prometheus
libtorch-dev
libopencv-dnn-dev
libopencv-core-dev
libopencv-imgcodecs-dev
libopencv-imgproc-dev
python3-torch
python3-torchvision
python3-numpy
python3-pil
chromium
python3-sklearn
python3-onnx
python3-fastapi
python3-uvicorn
gnuplot-nox
python3-boto3
ceph-mon
ceph-osd
radosgw
mmdebstrap
buildah
podman
"
# kubectl, for `kubectl kustomize` in tests/cluster: Debian's package unless
# some kubectl is already installed (another package may own /usr/bin/kubectl).
command -v kubectl >/dev/null 2>&1 || PACKAGES="$PACKAGES kubernetes-client"

missing=""
for p in $PACKAGES; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done

if [ -z "$missing" ]; then
  echo "install-deps: all $(echo $PACKAGES | wc -w) packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages:$missing (run as root to install them)" >&2
  exit 1
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
# Installing nginx, prometheus or the Ceph daemons must not start the system
# services (nginx on :80, prometheus on :9090, ceph's targets; tests run their
# own, on their own ports and in private directories): deny service starts for
# this install, unless a policy is already in place (container images have one).
policy=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
  policy=/usr/sbin/policy-rc.d
  printf '#!/bin/sh\nexit 101\n' > "$policy"
  chmod 755 "$policy"
  trap 'rm -f "$policy"' EXIT
fi
apt-get update -qq
# Without recommendations: ceph-base (under ceph-mon, ceph-osd and radosgw)
# recommends ceph-mds, a time daemon (chrony) and btrfs tools, which the S3
# fixture does not need.
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
