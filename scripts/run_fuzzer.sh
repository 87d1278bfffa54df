#!/usr/bin/env bash
# Runs one libFuzzer target from its seed corpus for FUZZ_SECONDS (default 60).
#   scripts/run_fuzzer.sh BINARY SEED_DIR ARTIFACT_DIR
# New inputs go to a scratch corpus (the seeds in the tree are only read). A
# crash, leak, timeout (one input over 10 s) or out-of-memory fails the run and
# leaves the input under ARTIFACT_DIR/<target>/ to reproduce with
# `BINARY ARTIFACT`. FUZZ_SEED fixes libFuzzer's random seed: the test
# command sets it, so that a run green on one machine explores the same
# inputs on the next (a new finding is then a change's, not chance's); by
# hand, leave it unset (0: a new seed each run) to explore further.
set -euo pipefail
binary=$1
seeds=$2
artifacts=$3/$(basename "$binary")
seconds=${FUZZ_SECONDS:-60}
seed=${FUZZ_SEED:-0}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# The progress lines (NEW, REDUCE, pulse) are dropped from the log.
set +e
"$binary" -seed="$seed" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -print_final_stats=1 -artifact_prefix="$artifacts/" "$scratch" "$seeds" 2>&1 |
  grep -v -E '^#[0-9]+\s+(NEW|REDUCE|pulse)'
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
  echo "fuzz: $(basename "$binary") failed (exit $status); inputs in $artifacts" >&2
fi
exit "$status"
