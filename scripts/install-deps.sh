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
zlib1g-dev
libgtest-dev
clang-format
python3
curl
"

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
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
