#!/usr/bin/env bash
# Runs the CEL conformance cases (cel-spec's, from shared/cel-conformance,
# and the project's DRA selector cases) through `canhazgpu debug
# cel-conformance` and fails below 99% of the runnable cases.
# Usage: scripts/cel_conformance.sh [BUILD_DIR]  (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
dirs=(src/cel/testdata)
for candidate in "${CANHAZGPU_CEL_CONFORMANCE:-}" ../shared/cel-conformance /work/shared/cel-conformance; do
  if [ -n "$candidate" ] && [ -d "$candidate" ]; then
    dirs+=("$candidate")
    break
  fi
done
[ ${#dirs[@]} -gt 1 ] || echo "cel-conformance: shared/cel-conformance not found; running the project's cases only"
out=$("$build/src/cli/canhazgpu/canhazgpu" debug cel-conformance --verbose "${dirs[@]}")
echo "$out" | grep -v '^ '
total=$(echo "$out" | tail -n 1)
passed=$(echo "$total" | sed -E 's/total: ([0-9]+) passed, ([0-9]+) failed.*/\1/')
failed=$(echo "$total" | sed -E 's/total: ([0-9]+) passed, ([0-9]+) failed.*/\2/')
if (( passed * 100 < (passed + failed) * 99 )); then
  echo "$out" | grep -A4 'FAIL' >&2
  echo "cel-conformance: $passed of $((passed + failed)) runnable cases passed, below 99%" >&2
  exit 1
fi
