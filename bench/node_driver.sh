#!/usr/bin/env bash
# k8shazgpu-node on a simulated 8-GPU host against the simulated API server
# (docs/perf.md):
#   1. the daemon's resident memory at idle, after its first publication
#   2. time from a local `canhazgpu reserve` (and `release`) returning to the
#      ResourceSlice no longer (again) listing the GPU, read with our client
#      (bench/slice_follow), 20 rounds each
#   3. NodePrepareResources / NodeUnprepareResources pairs back to back
#      through the daemon's plugin socket, as the kubelet calls them while
#      pods churn (bench/prepare_churn), 30 one-GPU claims
# One prepare alone, in process, is the Google Benchmark
# build/src/kubeletplugin/kubeletplugin_benchmark.
# Usage: bench/node_driver.sh [build-dir]   (default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bin=$PWD/$build/src/cli
[ -x "$bin/k8shazgpu_node/k8shazgpu-node" ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait; rm -rf "$work"; }
trap cleanup EXIT
export CANHAZGPU_STATE=$work/state.db NO_COLOR=1
"$bin/canhazgpu/canhazgpu" admin --provider fake --gpus 8 --fake-host "$work/host.json" >/dev/null
"$bin/k8shazgpu_sim/k8shazgpu-sim" apiserver --kubeconfig-out "$work/kubeconfig" 2>/dev/null &
pids+=($!)
while [ ! -f "$work/kubeconfig" ]; do sleep 0.05; done
"$bin/k8shazgpu_node/k8shazgpu-node" --node-name node-a --kubeconfig "$work/kubeconfig" \
  --state "$work/state.db" --provider fake --fake-host "$work/host.json" \
  --plugin-dir "$work/plugin" --registrar-dir "$work/registry" --cdi-dir "$work/cdi" \
  --http-listen 127.0.0.1:0 2>"$work/node.log" &
node=$!
pids+=($node)
until grep -qs "published 8 devices" "$work/node.log"; do sleep 0.05; done
sleep 2

echo "== idle RSS of k8shazgpu-node with 8 GPUs"
awk '/VmRSS/ {printf "%.1f MiB\n", $2/1024}' "/proc/$node/status"

echo "== canhazgpu reserve/release -> slice updated (20 rounds, ms)"
"$PWD/$build/bench/slice_follow" "$work/kubeconfig" "$bin/canhazgpu/canhazgpu" 20

echo "== NodePrepareResources / NodeUnprepareResources pairs back to back (30 one-GPU claims)"
"$PWD/$build/bench/prepare_churn" "$work/kubeconfig" "$work/registry/gpu.canhazgpu.dev-reg.sock" 30
