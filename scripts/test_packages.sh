#!/usr/bin/env bash
# What CI checks of the packages and the node image (issue 31), from the
# Release build: scripts/package.sh makes the .debs and lintian finds no
# error in them; a minimal Debian 12 root (mmdebstrap) installs them with apt
# and runs tests/packaging/in_root.sh inside; scripts/image.sh makes the
# node image, whose root file system then runs both binaries in a chroot
# with every library found. Needs root (or sudo) and Debian's archive.
#   scripts/test_packages.sh [BUILD_DIR]   # default build-release
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-release}
if [ "$(id -u)" -ne 0 ]; then exec sudo "$0" "$@"; fi
version=$(scripts/project_version.sh)
step() { echo "== packages: $*"; }

step "scripts/package.sh"
mapfile -t debs < <(scripts/package.sh "$build")
printf '   %s\n' "${debs[@]}"

step "lintian (errors fail)"
lintian --fail-on error --tag-display-limit 0 "${debs[@]}"

step "a minimal Debian 12 root: apt install the packages, then tests/packaging/in_root.sh"
# systemd-standalone-tmpfiles: the tmpfiles.d path of a host with systemd,
# without systemd.
mmdebstrap --quiet --variant=apt --mode=root --include=systemd-standalone-tmpfiles \
  --customize-hook='mkdir -p "$1/tmp/debs"' \
  --customize-hook="copy-in ${debs[*]} /tmp/debs" \
  --customize-hook='copy-in tests/packaging/in_root.sh /tmp' \
  --customize-hook="chroot \"\$1\" sh /tmp/in_root.sh $version" \
  bookworm /dev/null

step "scripts/image.sh, then the image's root runs both binaries"
scripts/image.sh "$build"
rootfs=$(mktemp -d)
trap 'rm -rf "$rootfs"' EXIT
umoci raw unpack --image "$build/image/oci:$version" "$rootfs/root" >/dev/null 2>&1
missing=$(chroot "$rootfs/root" ldd /usr/bin/k8shazgpu-node /usr/bin/k8shazgpu | grep 'not found' || true)
if [ -n "$missing" ]; then
  echo "image: libraries missing: $missing" >&2
  exit 1
fi
# Whole outputs first: `grep -q` on a pipe may end the writer early, which
# pipefail would report as a failure.
expect() {  # WHAT REGEX OUTPUT
  if ! grep -q "$2" <<<"$3"; then
    echo "image: $1 printed no line matching $2:" >&2
    echo "$3" >&2
    exit 1
  fi
}
expect "k8shazgpu-node --help" '^usage: k8shazgpu-node' \
  "$(chroot "$rootfs/root" /usr/local/bin/k8shazgpu-node --help)"
expect "k8shazgpu --version" "^k8shazgpu $version " \
  "$(chroot "$rootfs/root" /usr/local/bin/k8shazgpu --version)"
entrypoint=$(umoci raw runtime-config --image "$build/image/oci:$version" --rootfs "$rootfs/root" /dev/stdout |
  grep -A2 '"args"' | tr -d ' \n')
case "$entrypoint" in
  *'"/usr/bin/k8shazgpu-node"'*) ;;
  *) echo "image: entrypoint is not /usr/bin/k8shazgpu-node: $entrypoint" >&2; exit 1 ;;
esac
# And under a container engine, where one can run here. This machine
# needs runc (crun refuses its hybrid cgroup v1/v2 mounts), cgroupfs and
# limits under its hard ones (podman asks for 1048576 open files).
if command -v podman >/dev/null && command -v runc >/dev/null; then
  podman_run=(podman --root "$rootfs/storage" --runroot "$rootfs/run" --runtime runc
    --cgroup-manager cgroupfs run --rm --network none --ulimit nofile=1024:1024
    --ulimit nproc=1024:1024)
  expect "podman run IMAGE --help" '^usage: k8shazgpu-node' \
    "$("${podman_run[@]}" "oci:$build/image/oci:$version" --help 2>&1)"
  expect "podman run --entrypoint k8shazgpu IMAGE --version" "^k8shazgpu $version " \
    "$("${podman_run[@]}" --entrypoint k8shazgpu "oci:$build/image/oci:$version" --version 2>&1)"
  echo "   podman ran the image's entrypoint and k8shazgpu"
else
  echo "   podman or runc is missing: the image was not run in a container"
fi
echo "   image: $(du -sm "$rootfs/root" | cut -f1) MB unpacked," \
  "$(du -m "$build/image/k8shazgpu-node.oci.tar" | cut -f1) MB as an OCI archive (goal: under 150 MB)"
step "all passed"
