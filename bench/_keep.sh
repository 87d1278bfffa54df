#!/usr/bin/env bash
# `k8shazgpu vllm run` from a checkout, everything cached (docs/perf.md):
# the time from the command's exec to the served command starting in the
# pod (after the init container rebuilt the workspace from the node's
# mirror and the overlay), on the simulated cluster. A fake vLLM checkout
# (FILES files, CHANGED of them changed), a fake Hub serving a tiny model,
# and a `vllm` that prints the time it started. The first run warms the
# caches (the image, the mirror, the model) and is not counted.
# Usage: bench/vllm_run.sh [build-dir]   (default build/)
#   RUNS (10) FILES (3000) CHANGED (100)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
sim=$PWD/$build/src/cli/k8shazgpu_sim/k8shazgpu-sim
k8s=$PWD/$build/src/cli/k8shazgpu/k8shazgpu
node=$PWD/$build/src/cli/k8shazgpu_node/k8shazgpu-node
hub=$PWD/$build/src/hfcache/hfcache_fake_hub
for b in "$sim" "$k8s" "$node" "$hub"; do
  [ -x "$b" ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
done
runs=${RUNS:-10} files=${FILES:-3000} changed=${CHANGED:-100}
work=$(mktemp -d)
sim_pid= hub_pid=
cleanup() {
  [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null
  [ -n "$hub_pid" ] && kill "$hub_pid" 2>/dev/null
  wait 2>/dev/null; rm -rf "$work"
}
echo WORK=$work
now_ns() { date +%s%N; }
git_() { GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null git -c user.name=b -c user.email=b@b \
  -c init.defaultBranch=main -c commit.gpgsign=false "$@"; }

# The checkout: FILES files under vllm/, CHANGED of them edited.
mkdir -p "$work/seed/vllm"
echo '__version__ = "0"' >"$work/seed/vllm/__init__.py"
for i in $(seq 1 "$files"); do
  d=$work/seed/vllm/m$((i % 50)); mkdir -p "$d"
  printf 'x = %d\n%.0s' "$i" $(seq 1 40) >"$d/f$i.py"
done
git_ -C "$work/seed" init -q && git_ -C "$work/seed" add -A && git_ -C "$work/seed" commit -qm base
mkdir -p "$work/vllm-project"
git_ clone -q --bare "$work/seed" "$work/vllm-project/vllm.git"
git_ clone -q -o upstream "file://$work/vllm-project/vllm.git" "$work/vllm"
base=$(git_ -C "$work/vllm" rev-parse HEAD)
for i in $(seq 1 "$changed"); do echo "# changed" >>"$work/vllm/vllm/m$((i % 50))/f$i.py"; done

mkdir -p "$work/model" "$work/site/vllm" "$work/bin"
echo '{"model_type": "tiny"}' >"$work/model/config.json"
echo installed >"$work/site/vllm/__init__.py"
printf '#!/bin/sh\ndate +started=%%s%%N\n' >"$work/bin/vllm"; chmod +x "$work/bin/vllm"
"$hub" --dir "$work/model" --repo org/tiny >"$work/hub.port" &
hub_pid=$!
while [ ! -s "$work/hub.port" ]; do sleep 0.02; done

"$sim" cluster --dir "$work/c" --nodes 2 --gpus-per-node 1 --node-binary "$node" \
  --cli-binary "$k8s" --image "registry.local/vllm:$base" \
  --hf-endpoint "http://127.0.0.1:$(cat "$work/hub.port")" >/dev/null 2>"$work/sim.log" &
sim_pid=$!
while [ ! -f "$work/c/ready" ]; do
  kill -0 "$sim_pid" 2>/dev/null || { cat "$work/sim.log" >&2; exit 1; }
  sleep 0.02
done
export KUBECONFIG=$work/c/kubeconfig HOME=$work K8SHAZGPU_VLLM_IMAGE_TEMPLATE='registry.local/vllm:{commit}'
serve() {
  (cd "$work/vllm" && "$k8s" vllm run --name "$1" --env "PYTHONPATH=$work/site" \
    --env "PATH=$work/bin:/usr/bin:/bin" -- vllm serve org/tiny)
}
# Warm-up: the caches fill, and every node's slices are in.
for _ in $(seq 1 100); do serve warmup >/dev/null 2>"$work/err" && break; sleep 0.1; done
grep -q "caches ready" "$work/err" || { cat "$work/err" >&2; exit 1; }

echo WORK=$work; exit 0
: >"$work/started"
for i in $(seq 1 "$runs"); do
  t0=$(now_ns)
  out=$(serve "r$i" 2>"$work/err") || { cat "$work/err" >&2; exit 1; }
  started=$(echo "$out" | sed -n 's/^started=\([0-9]*\)$/\1/p')
  echo $(((started - t0) / 1000000)) >>"$work/started"
done
stats() { sort -n "$1" | awk '{v[NR]=$1} END {printf "median %d ms, p90 %d ms, max %d ms (%d runs)\n", v[int((NR+1)/2)], v[int(NR*0.9+0.5)], v[NR], NR}'; }
echo "== vllm run from a checkout ($files files, $changed changed), cached: exec -> command starts"
stats "$work/started"
