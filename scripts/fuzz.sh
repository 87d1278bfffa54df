#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs each one.
#   scripts/fuzz.sh [SECONDS_PER_TARGET [TARGET_REGEX]]
# CI runs every target for 30 s; run longer by hand, e.g. an hour each:
#   scripts/fuzz.sh 3600
# docs/robustness.md lists the targets and what they have found.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keys on paths relative to the checkout, so every clone (CI's fresh
# ones, a developer's worktrees) shares one cache.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
export FUZZ_SECONDS=${1:-30}
regex=${2:-.}
if [ ! -f build-fuzz/build.ninja ]; then
  cmake --preset fuzz >/dev/null
fi
ninja -C build-fuzz build.ninja >/dev/null
scripts/unity_paths.sh build-fuzz
cmake --build build-fuzz --target fuzzers
ctest --test-dir build-fuzz --output-on-failure -L fuzz -R "$regex" -j "$(nproc)" \
  --timeout $((FUZZ_SECONDS * 2 + 120))
