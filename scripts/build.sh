#!/usr/bin/env bash
# Configures and builds one CMake preset (default: "default" into build/).
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-default}
dir=build
[ "$preset" = default ] || dir=build-$preset
if [ ! -f "$dir/build.ninja" ]; then
  cmake --preset "$preset" >/dev/null
fi
cmake --build "$dir"
