#!/usr/bin/env bash
# The main job from a fresh machine: install what is missing, build, and run a
# real reservation. Uses the real GPUs when NVML or amdgpu finds some,
# otherwise a simulated 4-GPU host. State lives in build/demo/, so the demo
# never touches a real pool.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
# Only what the demo runs (the tests are scripts/test.sh's to build).
scripts/build.sh default canhazgpu k8shazgpu k8shazgpu-sim k8shazgpu-node
chg=$PWD/build/src/cli/canhazgpu/canhazgpu
export CANHAZGPU_STATE=$PWD/build/demo/state.db

if "$chg" admin --force >/dev/null 2>&1; then
  echo "== real GPUs detected"
else
  echo "== no GPU found: using a simulated host (canhazgpu admin --provider fake --gpus 4)"
  rm -f build/demo/fake-host.json
  "$chg" admin --provider fake --gpus 4 --force
fi
echo
echo "== canhazgpu reserve --gpus 1 --duration 1h --note demo"
"$chg" reserve --gpus 1 --duration 1h --note demo
echo
echo "== canhazgpu run --gpus 2 -- sh -c '...'  (status is shown from inside the job)"
"$chg" run --gpus 2 -- sh -c 'echo "job sees CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"; "$0" status' "$chg"
echo
echo "== after the job: its GPUs are free again"
"$chg" release
"$chg" status

# The cluster half: a simulated cluster of two nodes (the real node driver on
# each, a kubelet that runs containers as processes), and a real
# `k8shazgpu run` on it: no YAML, the command's argv exactly as typed.
sim=$PWD/build/src/cli/k8shazgpu_sim/k8shazgpu-sim
k8s=$PWD/build/src/cli/k8shazgpu/k8shazgpu
cluster_dir=$PWD/build/demo/cluster
mkdir -p "$(dirname "$cluster_dir")"
rm -f "$cluster_dir/ready"
echo
echo "== k8shazgpu-sim cluster --nodes 2 --gpus-per-node 4  (a simulated cluster on this machine)"
"$sim" cluster --dir "$cluster_dir" --nodes 2 --gpus-per-node 4 > "$cluster_dir.log" 2>&1 &
sim_pid=$!
trap 'kill -TERM $sim_pid 2>/dev/null; wait $sim_pid 2>/dev/null || true' EXIT
for _ in $(seq 600); do
  [ -f "$cluster_dir/ready" ] && break
  kill -0 $sim_pid 2>/dev/null || { cat "$cluster_dir.log"; exit 1; }
  sleep 0.1
done
[ -f "$cluster_dir/ready" ] || { echo "the simulated cluster did not start"; cat "$cluster_dir.log"; exit 1; }
export KUBECONFIG=$cluster_dir/kubeconfig
echo
echo "== k8shazgpu run --gpus 2 -- sh -c 'echo ...' 'an argument with spaces'"
"$k8s" run --gpus 2 -- sh -c 'echo "pod sees CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES and: $0"' 'an argument with spaces'
echo
echo "== k8shazgpu status --summary"
"$k8s" status --summary
