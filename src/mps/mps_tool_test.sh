#!/usr/bin/env bash
# mps_tool against the stand-in nvidia-cuda-mps-control: acquire prints the
# share's environment and starts the daemon, release after the last share
# stops it. Usage: mps_tool_test.sh MPS_TOOL FAKE_DRIVER_ROOT
set -euo pipefail
tool=$1 root=$2
state=$(mktemp -d /tmp/mpstool.XXXXXX)
trap '"$tool" recover "$state" "$root" || true; rm -rf "$state"' EXIT
gpu=GPU-cccccccc-0000-0000-0000-000000000003
fail() { echo "FAIL: $*" >&2; exit 1; }
env=$("$tool" acquire "$state" "$root" "$gpu" job1 10240 81408)
grep -qx "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=$gpu=10240M" <<<"$env" || fail "env: $env"
grep -qx "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=13" <<<"$env" || fail "env: $env"
pid=$("$tool" pid "$state" "$root" "$gpu") || fail "no daemon after acquire"
"$tool" acquire "$state" "$root" "$gpu" job2 10240 81408 >/dev/null
"$tool" release "$state" "$root" job1
[[ $("$tool" pid "$state" "$root" "$gpu") == "$pid" ]] || fail "daemon changed"
"$tool" release "$state" "$root" job2
"$tool" pid "$state" "$root" "$gpu" && fail "daemon still runs after the last release"
out=$("$tool" release "$state" "$root" job2 2>&1) && fail "released an unknown share"
[[ $out == "mps_tool: mps: no share job2" ]] || fail "said: $out"
echo PASS
