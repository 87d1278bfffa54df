#!/usr/bin/env bash
# Installs the Debian packages canhazgpu needs, skipping those already
# installed. Safe to run repeatedly.
#   scripts/setup.sh         # build, test, package and benchmark (scripts/test.sh)
#   scripts/setup.sh build   # only what building the binaries needs (scripts/demo.sh)
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git lld
  libcurl4-openssl-dev libssl-dev libgit2-dev zlib1g-dev
  libabsl-dev nlohmann-json3-dev libsqlite3-dev libre2-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libyaml-cpp-dev libtomlplusplus-dev libcpp-httplib-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
)
if [ "${1:-all}" != build ]; then
  packages+=(
    clang-format clang-tidy hyperfine valgrind
    clang libclang-rt-14-dev
    chromium wrk
    python3 python3-jsonschema python3-kubernetes
    mmdebstrap umoci lintian podman runc
  )
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "setup: installing ${missing[*]}" >&2
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
