#!/usr/bin/env bash
# The node image (k8shazgpu-node, with the k8shazgpu CLI that `vllm run`'s
# init containers use), made without a container engine: mmdebstrap installs
# the two packages (scripts/package.sh) and their libraries from Debian 12
# into a minimal root, which becomes the one layer of an OCI image (umoci).
#   scripts/image.sh [BUILD_DIR]   # default build-release; needs root (or sudo)
# Writes BUILD_DIR/image/oci, an OCI layout holding the tag deploy/ names
# (TAG below), and BUILD_DIR/image/k8shazgpu-node.oci.tar, the same as one
# archive. Push either with skopeo (docs/cluster.md):
#   skopeo copy oci:BUILD_DIR/image/oci:TAG docker://REGISTRY/k8shazgpu-node:TAG
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-release}
if [ "$(id -u)" -ne 0 ]; then exec sudo --preserve-env=SOURCE_DATE_EPOCH "$0" "$@"; fi

version=$(scripts/project_version.sh)
# The name deploy/daemonset.yaml pulls; a registry of your own replaces the
# part before the tag (kustomize's `images:`).
name=ghcr.io/canhazgpu/k8shazgpu-node
if ! grep -q "image: $name:$version\$" deploy/daemonset.yaml; then
  echo "image: deploy/daemonset.yaml does not name $name:$version" >&2
  exit 1
fi
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
arch=$(dpkg --print-architecture)
debs=$build/debs
for pkg in k8shazgpu-node k8shazgpu; do
  [ -f "$debs/${pkg}_${version}_${arch}.deb" ] || scripts/package.sh "$build" >/dev/null
done

out=$build/image
rm -rf "$out"
mkdir -p "$out"
# The essential set (a shell, coreutils, dpkg) and no apt: enough for the
# daemon, the CLI and a person with `kubectl exec`, and nothing to update in
# place. Documentation and locales are left out, copyright files kept.
# The merged-usr hook makes /bin a link to /usr/bin itself and installs
# usr-is-merged; without it init-system-helpers pulls usrmerge, and with it
# all of perl (50 MB).
# /usr/local/bin holds links to both binaries: the paths deploy/ and the
# init containers of `vllm run` name, as the first images had them.
mmdebstrap --quiet --variant=essential --mode=root --format=tar --skip=output/dev \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount \
  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
  --include="$PWD/$debs/k8shazgpu-node_${version}_${arch}.deb" \
  --include="$PWD/$debs/k8shazgpu_${version}_${arch}.deb" \
  --customize-hook='ln -s /usr/bin/k8shazgpu-node /usr/bin/k8shazgpu "$1/usr/local/bin/"' \
  --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/var/log/*' \
  bookworm "$out/rootfs.tar" 2>"$out/mmdebstrap.log" || { cat "$out/mmdebstrap.log" >&2; exit 1; }

oci=$out/oci
created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
umoci init --layout "$oci"
umoci new --image "$oci:$version"
umoci raw add-layer --image "$oci:$version" --history.created "$created" \
  --history.created_by "scripts/image.sh (mmdebstrap bookworm + k8shazgpu-node, k8shazgpu $version)" \
  "$out/rootfs.tar"
# Root, on purpose: the daemon opens /dev/nvidia*, creates sockets in the
# root-owned kubelet directories, writes /var/run/cdi and the shared host
# store, and reads other users' /proc entries (docs/cluster.md).
umoci config --image "$oci:$version" --no-history --created "$created" --author "canhazgpu developers" \
  --os linux --architecture "$arch" --config.user 0 --config.workingdir / \
  --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --config.entrypoint /usr/bin/k8shazgpu-node \
  --config.label "org.opencontainers.image.title=k8shazgpu-node" \
  --config.label "org.opencontainers.image.version=$version" \
  --config.label "org.opencontainers.image.revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)" \
  --manifest.annotation "org.opencontainers.image.ref.name=$name:$version"
umoci gc --layout "$oci"
rm "$out/rootfs.tar"
tar -C "$oci" --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
  -cf "$out/k8shazgpu-node.oci.tar" .
# Readable by the user who ran the script through sudo (skopeo need not be
# root), and theirs.
chmod -R a+rX "$out"
chown -R --reference="$build" "$out"
echo "$oci:$version ($name:$version)"
