#!/usr/bin/env bash
# clang-tidy with the checks in .clang-tidy (bugs, not taste; each one an
# error) over the product .cc files changed since BASE, compiled as in
# BUILD_DIR. Checking the whole tree takes a 2-core machine about twenty
# minutes; the files a change touches, a few.
#   scripts/tidy.sh [BASE [BUILD_DIR]]   # defaults: HEAD~10, build-asan
# CI runs it over the files the last 10 commits touched (most of a session's
# work). Before you push, `scripts/tidy.sh origin/main build` checks yours.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-HEAD~10}
build=${2:-build-asan}
git rev-parse -q --verify "$base^{commit}" >/dev/null || base=$(git rev-list --max-parents=0 HEAD)
mapfile -t changed < <(git diff --name-only --diff-filter=AM "$base" -- 'src/*.cc' \
  ':!*_test.cc' ':!*/testing/*' ':!*_benchmark.cc' ':!*_fuzzer.cc' ':!*_main.cc')
if [ "${#changed[@]}" -eq 0 ]; then
  echo "tidy: no product .cc file changed since $base"
  exit 0
fi
db=$(mktemp -d)
trap 'rm -rf "$db"' EXIT
mapfile -t files < <(python3 scripts/tidy_db.py "$build" "$db" "${changed[@]}")
echo "tidy: ${#files[@]} files changed since $base"
[ "${#files[@]}" -gt 0 ] || exit 0
printf '%s\n' "${files[@]}" |
  xargs -P "$(nproc)" -n 4 clang-tidy -p "$db" --quiet 2>&1 |
  grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed|^Use -header-filter' |
  tee "$db/out" || true
if grep -q -E '(error|warning): ' "$db/out"; then
  echo "tidy: see the findings above (.clang-tidy lists the checks)" >&2
  exit 1
fi
