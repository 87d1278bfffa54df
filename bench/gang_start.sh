#!/usr/bin/env bash
# How long a multi-node run takes to start (docs/perf.md, issue 35): from
# the exec of `k8shazgpu run --nodes N --gpus-per-node G` to the moment
# the last of its ranks runs its command (each rank prints its start time;
# every simulated node is this machine, so the clocks agree). The shapes
# are 2 x 2 and 4 x 8, each on a simulated cluster of exactly that many
# nodes and GPUs, admitted by k8shazgpu's own gang admission (scheduling
# gates), and 2 x 2 again on a cluster that gang-schedules PodGroups itself
# ("2x2-podgroup": --feature-gates GenericWorkload=true), RUNS times each;
# prints the median and the slowest, in
# milliseconds, and the whole command's time (the ranks' end, the run's
# objects deleted).
# Usage: bench/gang_start.sh [build-dir]   (default build/)
#   RUNS (5)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
source bench/sim_common.sh
runs=${RUNS:-5}
mkdir "$work/project" && cd "$work/project"

for shape in 2x2 4x8 2x2-podgroup; do
  size=${shape%-podgroup}
  nodes=${size%x*} gpus=${size#*x}
  gates=()
  [ "$shape" = "$size" ] || gates=(--feature-gates GenericWorkload=true)
  dir=$work/c$shape
  "$sim" cluster --dir "$dir" --nodes "$nodes" --gpus-per-node "$gpus" --node-binary "$node" \
    "${gates[@]}" >/dev/null 2>"$work/sim.log" &
  sim_pid=$!
  while [ ! -f "$dir/ready" ]; do
    kill -0 "$sim_pid" 2>/dev/null || { cat "$work/sim.log" >&2; exit 1; }
    sleep 0.01
  done
  : >"$work/start.$shape" && : >"$work/whole.$shape"
  for ((i = 0; i < runs; i++)); do
    t0=$(now_ms)
    KUBECONFIG=$dir/kubeconfig HOME=$work "$k8s" run --no-sync --nodes "$nodes" \
      --gpus-per-node "$gpus" -- sh -c 'echo $(($(date +%s%N) / 1000000))' \
      >"$work/out" 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
    t1=$(now_ms)
    last=$(sed 's/^\[[0-9]*\] //' "$work/out" | sort -n | tail -1)
    echo $((last - t0)) >>"$work/start.$shape"
    echo $((t1 - t0)) >>"$work/whole.$shape"
    [ -z "${VERBOSE:-}" ] || echo "$shape start $((last - t0)) whole $((t1 - t0))" >&2
  done
  kill -TERM "$sim_pid"
  wait "$sim_pid" || true
  sim_pid=
  for what in start whole; do
    sort -n "$work/$what.$shape" | awk -v what="$shape $what" '{v[NR] = $1}
      END { printf "%-19s median %6d ms   max %6d ms   (%d runs)\n", what, v[int((NR + 1) / 2)], v[NR], NR }'
  done
done
