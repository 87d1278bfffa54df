#!/usr/bin/env bash
# A simulated cluster's life as every cluster test lives it (docs/perf.md):
# RUNS times, a 1-node x 1-GPU `k8shazgpu-sim cluster` is started, one
# attached `k8shazgpu run -- true` runs on it, and SIGTERM stops it. Prints
# the median and the slowest of each, in milliseconds:
#   ready     exec of the simulator -> its ready file (slices published)
#   run       exec of k8shazgpu run -> its exit (pod created, scheduled,
#             run, ended, deleted; the command's watches stopped)
#   stop      SIGTERM -> the simulator's exit (control plane, kubelet, the
#             node daemon, the API server)
# Usage: bench/sim_cluster_lifecycle.sh [build-dir]   (default build/)
#   RUNS (10)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
source bench/sim_common.sh
runs=${RUNS:-10}
# From an empty project directory: `run` ships its working directory.
mkdir "$work/project" && cd "$work/project"

: >"$work/ready" && : >"$work/run" && : >"$work/stop"
for ((i = 0; i < runs; i++)); do
  dir=$work/c$i
  t0=$(now_ms)
  "$sim" cluster --dir "$dir" --nodes 1 --gpus-per-node 1 --node-binary "$node" \
    >/dev/null 2>"$work/sim.log" &
  sim_pid=$!
  while [ ! -f "$dir/ready" ]; do
    kill -0 "$sim_pid" 2>/dev/null || { cat "$work/sim.log" >&2; exit 1; }
    sleep 0.005
  done
  t1=$(now_ms)
  KUBECONFIG=$dir/kubeconfig HOME=$work "$k8s" run -- true 2>/dev/null
  t2=$(now_ms)
  kill -TERM "$sim_pid"
  wait "$sim_pid"
  sim_pid=
  t3=$(now_ms)
  echo $((t1 - t0)) >>"$work/ready"
  echo $((t2 - t1)) >>"$work/run"
  echo $((t3 - t2)) >>"$work/stop"
  rm -rf "$dir"
  [ -z "${VERBOSE:-}" ] || echo "ready $((t1 - t0)) run $((t2 - t1)) stop $((t3 - t2))" >&2
done
for what in ready run stop; do
  sort -n "$work/$what" | awk -v what="$what" '{v[NR] = $1}
    END { printf "%-6s median %5d ms   max %5d ms   (%d runs)\n", what, v[int((NR + 1) / 2)], v[NR], NR }'
done
