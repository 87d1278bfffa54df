#!/usr/bin/env bash
# `k8shazgpu run` on the simulated cluster (docs/perf.md): RUNS runs of
# `k8shazgpu run --detach -- true`, one after the other, each measured
#   - from the command's start to the pod created (the API's answer to the
#     create), as the command itself reports it with K8SHAZGPU_TIMING=1:
#     connect, DeviceClass discovery, the claim template, the pod;
#   - from the process's exec to its return (the pod scheduled), wall time.
# Then RUNS runs of `k8shazgpu run --gpus 1 -- true` followed to the end
# (the container's exit read, the watches stopped, the process gone) and
# RUNS of `k8shazgpu reserve --gpus 1` until it returns (the reservation
# released after each, untimed). Also the bare process start
# (`k8shazgpu --version`).
# Usage: bench/k8shazgpu_run.sh [build-dir]   (default build/)
#   NODES (2) GPUS (8 per node) RUNS (30)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
sim=$PWD/$build/src/cli/k8shazgpu_sim/k8shazgpu-sim
k8s=$PWD/$build/src/cli/k8shazgpu/k8shazgpu
node=$PWD/$build/src/cli/k8shazgpu_node/k8shazgpu-node
for b in "$sim" "$k8s" "$node"; do [ -x "$b" ] || { echo "build first: scripts/build.sh" >&2; exit 1; }; done
nodes=${NODES:-2} gpus=${GPUS:-8} runs=${RUNS:-30}
work=$(mktemp -d)
sim_pid=
cleanup() { [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
now_ms() { echo $(($(date +%s%N) / 1000000)); }

"$sim" cluster --dir "$work/c" --nodes "$nodes" --gpus-per-node "$gpus" --node-binary "$node" \
  >/dev/null 2>"$work/sim.log" &
sim_pid=$!
while [ ! -f "$work/c/ready" ]; do
  kill -0 "$sim_pid" 2>/dev/null || { cat "$work/sim.log" >&2; exit 1; }
  sleep 0.02
done
export KUBECONFIG=$work/c/kubeconfig HOME=$work K8SHAZGPU_TIMING=1
# From an empty project directory: `run` ships its working directory, and
# this checkout is not the project being measured.
mkdir "$work/project" && cd "$work/project"
# Every node's slices are in before the first run.
for _ in $(seq 1 200); do
  "$k8s" run --detach --name warmup -- true >/dev/null 2>&1 && break
  sleep 0.05
done

: >"$work/created" ; : >"$work/returned"; : >"$work/version"
: >"$work/followed"; : >"$work/reserved"
for i in $(seq 1 "$runs"); do
  t0=$(now_ms)
  "$k8s" run --detach --name "r$i" -- true >/dev/null 2>"$work/err"
  t1=$(now_ms)
  sed -n 's/.*timing: pod created after \([0-9]*\) ms.*/\1/p' "$work/err" >>"$work/created"
  echo $((t1 - t0)) >>"$work/returned"
  t0=$(now_ms); "$k8s" --version >/dev/null; t1=$(now_ms)
  echo $((t1 - t0)) >>"$work/version"
done
for i in $(seq 1 "$runs"); do
  t0=$(now_ms)
  "$k8s" run --gpus 1 --name "f$i" -- true >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
  t1=$(now_ms)
  echo $((t1 - t0)) >>"$work/followed"
  t0=$(now_ms)
  "$k8s" reserve --gpus 1 --name "h$i" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
  t1=$(now_ms)
  echo $((t1 - t0)) >>"$work/reserved"
  "$k8s" release "h$i" >/dev/null 2>&1
done
stats() { sort -n "$1" | awk '{v[NR]=$1} END {printf "median %d ms, p90 %d ms, max %d ms (%d runs)\n", v[int((NR+1)/2)], v[int(NR*0.9+0.5)], v[NR], NR}'; }
echo "== k8shazgpu run --detach: command start -> pod created"; stats "$work/created"
echo "== k8shazgpu run --detach: exec -> return (pod scheduled)"; stats "$work/returned"
echo "== k8shazgpu run --gpus 1 -- true: exec -> return (container ended)"; stats "$work/followed"
echo "== k8shazgpu reserve --gpus 1: exec -> return (reservation running)"; stats "$work/reserved"
echo "== k8shazgpu --version (process start and exit)"; stats "$work/version"
