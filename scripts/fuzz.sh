#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs each one.
#   scripts/fuzz.sh [SECONDS_PER_TARGET [TARGET_REGEX [BUILD_DIR]]]
# BUILD_DIR: build-fuzz (the "fuzz" preset, -O2) unless given; CI passes
# build-asan, whose -O0 tree also builds the fuzzers (one sanitizer build
# instead of two), for 30 s a target. Run longer by hand, in the -O2 tree,
# e.g. an hour each:
#   scripts/fuzz.sh 3600
# docs/robustness.md lists the targets and what they have found.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keys on paths relative to the checkout, so every clone (CI's fresh
# ones, a developer's worktrees) shares one cache.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
export FUZZ_SECONDS=${1:-30}
regex=${2:-.}
dir=${3:-build-fuzz}
if [ "$dir" = build-fuzz ]; then
  scripts/build.sh fuzz fuzzers
else
  cmake --build "$dir" --target fuzzers
fi
ctest --test-dir "$dir" --output-on-failure -L fuzz -R "$regex" -j "$(nproc)" \
  --timeout $((FUZZ_SECONDS * 2 + 120))
