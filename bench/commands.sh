#!/usr/bin/env bash
# Whole-command timings on a simulated 8-GPU host (docs/perf.md):
#   1. `status --json`                     (hyperfine, median)
#   2. a `reserve` + `release` pair        (median of repeated pairs)
#   3. reservations per second with 16 processes contending for the 8 GPUs
#      (bench/contend, built with the benchmarks)
#   4. time from a release to the head waiter holding the GPU (bench/handoff)
#   5. throughput of the 32-process stress test (tests/stress, built with
#      the tests)
# Usage: bench/commands.sh [build-dir]   (default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
chg=$PWD/$build/src/cli/canhazgpu/canhazgpu
[ -x "$chg" ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CANHAZGPU_STATE=$work/state.db NO_COLOR=1
"$chg" admin --provider fake --gpus 8 >/dev/null

echo "== status --json (8 simulated GPUs, 4 reserved)"
"$chg" reserve -g 4 -d 1h >/dev/null
hyperfine -N --warmup 20 --runs 300 --export-json "$work/status.json" "$chg status --json" \
  >/dev/null
awk '/"median"/ {gsub(/[,]/,""); printf "median %.2f ms\n", $2*1000; exit}' "$work/status.json"
"$chg" release >/dev/null

echo "== reserve + release pair (median of each command, summed)"
hyperfine -N --warmup 10 --runs 300 --prepare "$chg release" --export-json "$work/reserve.json" \
  "$chg reserve -g 1 --short" >/dev/null
hyperfine -N --warmup 10 --runs 300 --prepare "$chg reserve -g 1 --short" \
  --export-json "$work/release.json" "$chg release" >/dev/null
reserve_ms=$(awk '/"median"/ {gsub(/[,]/,""); print $2*1000; exit}' "$work/reserve.json")
release_ms=$(awk '/"median"/ {gsub(/[,]/,""); print $2*1000; exit}' "$work/release.json")
awk -v a="$reserve_ms" -v b="$release_ms" \
  'BEGIN {printf "reserve %.2f ms + release %.2f ms = %.2f ms per pair\n", a, b, a + b}'
"$chg" release >/dev/null

echo "== 16 processes contending for 8 GPUs (5 runs, median)"
# bench/contend.cc: threads that spawn the commands, so no shell forks count.
for run in 1 2 3 4 5; do
  "$PWD/$build/bench/contend" "$chg" 16 "${ROUNDS:-60}" | tee -a "$work/contend.txt"
done
sort -n -k 12 "$work/contend.txt" | sed -n 3p | awk '{print "median", $(NF-1), "reservations/s"}'
left=$("$chg" status --json | grep -c '"IN_USE"' || true)
echo "GPUs still reserved afterwards: $left (expected 0)"

echo "== release -> head waiter (bench/handoff, 200 rounds)"
"$chg" release >/dev/null 2>&1 || true
"$PWD/$build/bench/handoff" "$chg" "${HANDOFF_ROUNDS:-200}"

echo "== stress: 32 processes reserve/run/release/queue on 8 GPUs (tests/stress)"
"$PWD/$build/tests/run_queue_stress" "$chg" 32 8 "${STRESS_SECONDS:-60}"
