#!/usr/bin/env bash
# Makes the unity sources CMake generated in BUILD_DIR include the files
# they batch by relative paths:
#   scripts/unity_paths.sh BUILD_DIR
# CMake (before 3.32's CMAKE_UNITY_BUILD_RELOCATABLE) writes absolute paths
# into them, so the same tree cloned elsewhere would miss in ccache: with
# CCACHE_BASEDIR the compiler is run on relative paths, but these absolute
# #include lines still end up in what ccache hashes. The build directory
# sits in the checkout (build*/), so a path relative to the unity file
# names the same file in every clone. Run after each configure; a unity file
# CMake rewrites later (when it re-runs itself) is only a cache miss.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd -P)
build=$(cd "$1" && pwd -P)
find "$build" -path '*/Unity/unity_*_cxx.cxx' -print0 |
  while IFS= read -r -d '' file; do
    grep -q "^#include \"$root/" "$file" || continue
    prefix=$(realpath --relative-to="$(dirname "$file")" "$root")
    sed -i "s|^#include \"$root/|#include \"$prefix/|" "$file"
  done
