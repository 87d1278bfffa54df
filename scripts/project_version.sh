#!/usr/bin/env bash
# Prints the project's version, the one place it is set: project(... VERSION
# X.Y.Z) in CMakeLists.txt (what --version prints, the packages' version
# and the node image's tag).
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(sed -n 's/^project(canhazgpu VERSION \([0-9][0-9.]*\).*/\1/p' CMakeLists.txt)
[ -n "$version" ] || { echo "no version in CMakeLists.txt's project()" >&2; exit 1; }
echo "$version"
