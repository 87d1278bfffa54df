#!/usr/bin/env bash
# On a machine with a real NVIDIA GPU: starts the MPS control daemon through
# our code (MpsDaemons, via build/src/mps/mps_tool), gives two jobs 10 GiB
# shares of GPU 0, and shows that in each job an allocation below its share
# succeeds while one above it fails. Both jobs hold their allocation at the
# same time. Prints what it did; exit 0 when MPS held both limits, 1 when
# not, 0 with "SKIP: ..." when the machine cannot run the check (no GPU, no
# MPS, neither torch nor nvcc). CI never runs it (docs/sharing.md).
#   scripts/device_mps_check.sh [BUILD_DIR]      (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
root=${DRIVER_ROOT:-/}
share_mib=10240
below_mib=8192   # the CUDA context takes some of the share too
above_mib=12288
skip() { echo "SKIP: $*"; exit 0; }

command -v nvidia-smi >/dev/null || skip "no nvidia-smi"
line=$(nvidia-smi --query-gpu=uuid,memory.total,driver_version --format=csv,noheader,nounits -i 0 2>/dev/null) ||
  skip "nvidia-smi sees no GPU"
IFS=', ' read -r gpu total_mib driver <<<"$line"
[[ -x ${root%/}/usr/bin/nvidia-cuda-mps-control ]] || skip "no ${root%/}/usr/bin/nvidia-cuda-mps-control"
(( total_mib > 2 * above_mib )) || skip "GPU 0 has $total_mib MiB, too little for two ${share_mib} MiB shares"
echo "GPU 0: $gpu, $total_mib MiB, driver $driver; compute mode $(nvidia-smi --query-gpu=compute_mode --format=csv,noheader -i 0)"

work=$(mktemp -d /tmp/mpscheck.XXXXXX)
tool=$build/src/mps/mps_tool
[[ -x $tool ]] || scripts/build.sh default mps_tool >/dev/null
# The allocating program: torch when it is there, else a CUDA C program
# built here.
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  alloc=(python3 -c '
import sys, time, torch
mib = int(sys.argv[1])
try:
    x = torch.empty(mib * 1024 * 1024, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    print(f"allocated {mib} MiB", flush=True)
    time.sleep(3)
    sys.exit(0)
except RuntimeError as e:
    print(f"allocation of {mib} MiB failed: {str(e).splitlines()[0]}", flush=True)
    sys.exit(3)
')
elif command -v nvcc >/dev/null; then
  cat >"$work/alloc.cu" <<'EOF'
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <cuda_runtime.h>
int main(int, char** argv) {
  size_t mib = strtoull(argv[1], nullptr, 10);
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, mib << 20);
  if (e != cudaSuccess) {
    printf("allocation of %zu MiB failed: %s\n", mib, cudaGetErrorString(e));
    return 3;
  }
  printf("allocated %zu MiB\n", mib);
  fflush(stdout);
  sleep(3);
  return 0;
}
EOF
  nvcc -o "$work/alloc" "$work/alloc.cu"
  alloc=("$work/alloc")
else
  skip "neither python3 with torch nor nvcc"
fi

state=$work/state
shareable_mib=$(( total_mib - 512 ))
cleanup() { "$tool" recover "$state" "$root" || true; rm -rf "$work"; }
trap cleanup EXIT
"$tool" acquire "$state" "$root" "$gpu" job1 "$share_mib" "$shareable_mib" >"$work/job1.env"
"$tool" acquire "$state" "$root" "$gpu" job2 "$share_mib" "$shareable_mib" >"$work/job2.env"
echo "MPS control daemon: pid $("$tool" pid "$state" "$root" "$gpu")"
echo "job1's environment:"; sed 's/^/  /' "$work/job1.env"

# Runs the allocating program as job N with its share's environment.
run_job() {
  local job=$1 mib=$2
  local -a vars
  mapfile -t vars <"$work/$job.env"
  env "${vars[@]}" CUDA_VISIBLE_DEVICES="$gpu" "${alloc[@]}" "$mib" 2>&1 | sed "s/^/  $job: /"
  return "${PIPESTATUS[0]}"
}

ok=1
echo "below the share (${below_mib} MiB of ${share_mib}), both jobs at once:"
run_job job1 "$below_mib" & p1=$!
run_job job2 "$below_mib" & p2=$!
wait "$p1" || { echo "  job1: FAILED below its share"; ok=0; }
wait "$p2" || { echo "  job2: FAILED below its share"; ok=0; }
echo "above the share (${above_mib} MiB of ${share_mib}):"
for job in job1 job2; do
  if run_job "$job" "$above_mib"; then
    echo "  $job: NOT LIMITED: allocated past its share"
    ok=0
  fi
done
"$tool" release "$state" "$root" job1
"$tool" release "$state" "$root" job2
if "$tool" pid "$state" "$root" "$gpu" >/dev/null; then
  echo "daemon still runs after the last share"
  ok=0
else
  echo "daemon stopped after the last share"
fi
if (( ok )); then echo "PASS: MPS held both ${share_mib} MiB shares"; else echo "FAIL"; exit 1; fi
