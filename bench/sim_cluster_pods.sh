#!/usr/bin/env bash
# Pods through the whole simulated cluster (docs/perf.md): PODS pods of one
# GPU each, created at once on `k8shazgpu-sim cluster`, each running `true`;
# measures the time from the first create to the last pod Succeeded - the
# claim made from its template, allocated and bound by the scheduler
# stand-in, prepared by the real k8shazgpu-node over its socket, run by the
# kubelet, unprepared and deallocated as pods finish, so later pods reuse
# the GPUs. Also: the cluster's start (to every node published) and stop.
# Usage: bench/sim_cluster_pods.sh [build-dir]   (default build/)
#   NODES (4) GPUS (8 per node) PODS (64)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
sim=$PWD/$build/src/cli/k8shazgpu_sim/k8shazgpu-sim
[ -x "$sim" ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
nodes=${NODES:-4} gpus=${GPUS:-8} pods=${PODS:-64}
work=$(mktemp -d)
sim_pid=
cleanup() { [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
now() { date +%s.%N; }

t0=$(now)
"$sim" cluster --dir "$work/c" --nodes "$nodes" --gpus-per-node "$gpus" >/dev/null 2>"$work/sim.log" &
sim_pid=$!
while [ ! -f "$work/c/ready" ]; do
  kill -0 "$sim_pid" 2>/dev/null || { cat "$work/sim.log" >&2; exit 1; }
  sleep 0.02
done
t1=$(now)
server=$(sed -n 's/^ *server: //p' "$work/c/kubeconfig")
post() { curl -sf -o /dev/null -H 'Content-Type: application/json' -X POST --data "$2" "$server$1"; }
post /apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates \
  '{"metadata":{"name":"one-gpu"},"spec":{"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.canhazgpu.dev"}}]}}}}'
t2=$(now)
for i in $(seq 1 "$pods"); do
  post /api/v1/namespaces/default/pods "{\"metadata\":{\"name\":\"p$i\"},\"spec\":{\"restartPolicy\":\"Never\",\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimTemplateName\":\"one-gpu\"}],\"containers\":[{\"name\":\"c\",\"image\":\"none\",\"command\":[\"true\"],\"resources\":{\"claims\":[{\"name\":\"gpu\"}]}}]}}"
done
t3=$(now)
while :; do
  done_count=$(curl -sf "$server/api/v1/namespaces/default/pods?fieldSelector=status.phase%3DSucceeded" |
    python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')
  [ "$done_count" -ge "$pods" ] && break
  sleep 0.05
done
t4=$(now)
kill "$sim_pid"
wait "$sim_pid" || true
sim_pid=
t5=$(now)
awk -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" -v e="$t4" -v f="$t5" -v n="$nodes" -v g="$gpus" -v p="$pods" 'BEGIN {
  printf "cluster of %d nodes x %d GPUs ready in %.2f s\n", n, g, b - a
  printf "%d one-GPU pods created in %.2f s; all Succeeded %.2f s after the first create (%.1f pods/s)\n", p, d - c, e - c, p / (e - c)
  printf "cluster stopped in %.2f s\n", f - e
}'
