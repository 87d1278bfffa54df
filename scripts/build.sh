#!/usr/bin/env bash
# Configures and builds one CMake preset (default: "default" into build/).
#   scripts/build.sh [PRESET [TARGET...]]   # no target: everything
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keys on paths relative to the checkout, so every clone (CI's fresh
# ones, a developer's worktrees) shares one cache.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
preset=${1:-default}
shift || true
dir=build
[ "$preset" = default ] || dir=build-$preset
# Configured anew when the presets changed since (their cache variables
# only reach an existing tree that way).
if [ ! -f "$dir/build.ninja" ] || [ CMakePresets.json -nt "$dir/CMakeCache.txt" ]; then
  cmake --preset "$preset" >/dev/null
fi
# CMake re-runs itself first if a CMakeLists.txt changed, and writes the
# unity sources again; make their includes relative before compiling.
ninja -C "$dir" build.ninja >/dev/null
scripts/unity_paths.sh "$dir"
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$dir" "${targets[@]}"
