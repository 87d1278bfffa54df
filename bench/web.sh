#!/usr/bin/env bash
# The dashboard under load (docs/perf.md): canhazgpu-web on a simulated
# 8-GPU host with 4 GPUs reserved and a queued request.
#   1. /api/status latency and requests/s with wrk (keep-alive), at 1, 16
#      and 200 connections
#   2. /metrics at 16 connections
#   3. the server's peak memory (VmHWM) after the load
# Usage: bench/web.sh [build-dir]   (default build/; needs wrk)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
chg=$PWD/$build/src/cli/canhazgpu/canhazgpu
[ -x "$chg" ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
command -v wrk >/dev/null || { echo "wrk missing: scripts/setup.sh installs it" >&2; exit 1; }
work=$(mktemp -d)
export CANHAZGPU_STATE=$work/state.db NO_COLOR=1 HOME=$work
"$chg" admin --provider fake --gpus 8 >/dev/null
"$chg" reserve -g 4 -d 1h --note "bench" >/dev/null
# wrk's connections all come from 127.0.0.1: lift the per-address cap.
"$chg" web --port 0 --max-client-connections 256 >"$work/web.out" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do grep -q http "$work/web.out" 2>/dev/null && break; sleep 0.1; done
url=$(grep -o 'http://[^ ]*' "$work/web.out")
echo "server: $url (pid $pid), RSS at start $(awk '/VmRSS/ {print $2, $3}' /proc/$pid/status)"
for c in 1 16 200; do
  threads=$((c < 2 ? 1 : 2))
  echo "== /api/status, $c connections, 10 s"
  wrk -t"$threads" -c"$c" -d10s --latency "${url}api/status" |
    grep -E "Latency  |50%|99%|Requests/sec|Non-2xx|Socket errors"
done
echo "== /metrics, 16 connections, 10 s"
wrk -t2 -c16 -d10s --latency "${url}metrics" | grep -E "50%|99%|Requests/sec|Non-2xx"
echo "== memory: $(awk '/VmHWM|VmRSS/ {printf "%s %s %s  ", $1, $2, $3}' /proc/$pid/status)"
