#!/usr/bin/env bash
# The main job from a fresh machine: install what is missing, build, and run a
# real reservation. Uses the real GPUs when NVML or amdgpu finds some,
# otherwise a simulated 4-GPU host. State lives in build/demo/, so the demo
# never touches a real pool.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh default
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
