#!/usr/bin/env bash
# The whole test suite, as CI runs it: install what is missing, check
# formatting and seams, build and run the integration tests, make the Debian packages
# and the node image from that same tree (scripts/test_packages.sh: the
# binaries shipped are those the tests ran against, built at -O2 as
# Debian's packagers build), then build with AddressSanitizer +
# UndefinedBehaviorSanitizer and run the unit tests and the fuzzers there,
# and last with ThreadSanitizer and run the tests of code that starts threads.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage's start, in minutes since this script began (docs/perf.md
# reads CI's time per stage from these lines).
stage() { printf '== [%d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }
scripts/setup.sh

stage "clang-format"
git ls-files '*.cc' '*.h' | xargs clang-format --dry-run --Werror

stage "seams: clocks, sleeps, /proc and NVML stay in core/clock, host/ and gpu/"
# Besides: file_read_test reads /proc files on purpose (they say size 0);
# the simulated kubelet's pod sandbox writes a forked child's own
# /proc/self/{uid,gid}_map before exec, and its test re-executes itself.
if git grep -n -E 'system_clock::now|"/proc|dlopen\(' -- 'src/*' \
    ':!src/host/*' ':!src/gpu/*' ':!src/core/clock.h' ':!src/core/clock.cc' \
    ':!src/core/file_read_test.cc' \
    ':!src/simkubelet/pod_sandbox.cc' ':!src/simkubelet/container_process_test.cc'; then
  echo "seam violation: see the lines above" >&2
  exit 1
fi
# Product code sleeps, waits and measures on a Clock (core/clock.h), so tests
# can move time instead of waiting for it; tests and benchmarks may sleep.
if git grep -n -E 'sleep_for|sleep_until|steady_clock::now|(^|[^.>_[:alnum:]])(u|nano)?sleep\(' \
    -- 'src/*' ':!src/host/*' ':!src/gpu/*' ':!src/core/clock.h' ':!src/core/clock.cc' \
    ':!*_test.cc' ':!*/testing/*' ':!*_benchmark.cc'; then
  echo "seam violation: sleep and measure on a Clock (core/clock.h), see the lines above" >&2
  exit 1
fi

# One of each shared helper (docs/architecture.md): StrCat is core's, YAML
# is read by yaml/.
if git grep -n -E 'absl::StrCat|absl/strings/str_cat.h' -- 'src/*' 'tests/*' 'bench/*' \
    ':!src/core/strings.cc' ':!src/core/strings.h'; then
  echo "one StrCat: use core/strings.h's (it formats numbers as absl's does)" >&2
  exit 1
fi
if git grep -n -F 'yaml-cpp/yaml.h' -- 'src/*' 'tests/*' ':!src/yaml/*' \
    ':!src/cli/common/yaml_output.cc'; then
  echo "one YAML reader: use yaml/yaml_json.h" >&2
  exit 1
fi
# Product code locks with core/mutex.h, whose annotations clang checks
# (docs/architecture.md, "Locks"); the standard's mutex and guards carry none.
if git grep -n -E 'std::(mutex|lock_guard|unique_lock|scoped_lock|condition_variable)\b' \
    -- 'src/*' ':!*_test.cc' ':!src/core/mutex.h'; then
  echo "seam violation: lock with Mutex and MutexLock (core/mutex.h), see the lines above" >&2
  exit 1
fi

stage "folder graph: includes as docs/architecture.md allows (scripts/check_layers.py)"
python3 scripts/check_layers_test.py -q
python3 scripts/check_layers.py

stage "function length: over 80 lines says why (scripts/check_function_length.py)"
python3 scripts/check_function_length_test.py -q
python3 scripts/check_function_length.py

jobs=$(nproc)
# Tests run two per core: most of them wait on sockets, child processes and
# simulated clusters, and at one per core the default tests kept the CPU
# busy only 46 % of the time (docs/perf.md).
test_jobs=$((jobs * 2))
# The default tree builds everything but the unit tests, which are built
# and run once, under ASan + UBSan below (ADR 0012's addendum: compiling
# them in both trees was a third of the default build).
stage "build (default: the binaries, the integration tests, docs, benchmarks)"
scripts/build.sh default ci_default
stage "tests (default: all but the unit tests)"
ctest --test-dir build --output-on-failure --timeout 300 -j "$test_jobs" -LE unit -E '_NOT_BUILT$'
stage "CEL conformance (at least 99% of the runnable cases)"
scripts/cel_conformance.sh build

# The packages and the node image are made from the default tree and tested
# while the ASan tree builds: most of their time is spent waiting on Debian's
# archive and on dpkg, not on the CPU.
stage "packages and the node image: started (scripts/test_packages.sh, in the background)"
packages_log=$(mktemp)
scripts/test_packages.sh build >"$packages_log" 2>&1 &
packages_pid=$!
trap 'kill "$packages_pid" 2>/dev/null || true; rm -f "$packages_log"' EXIT

stage "build (asan + ubsan: the unit tests, what they run, and the fuzzers)"
scripts/build.sh asan unit_tests fuzzers
stage "packages and the node image: results"
if ! wait "$packages_pid"; then
  cat "$packages_log"
  echo "scripts/test_packages.sh failed: see the lines above" >&2
  exit 1
fi
cat "$packages_log"
stage "unit tests under asan + ubsan"
# A 16 MiB stack: at -O0 with ASan's redzones and the fuzzers' coverage
# counters a frame is several times the shipped -O2 code's, and walking
# JSON at the 1000 levels our readers allow (kube/objects_test.cc) needs
# more than the default 8 MiB there. Each unit test executable runs whole,
# in one process (label "suite", CANHAZGPU_UNIT_SUITES): `ctest -L unit`
# runs the same tests one process each.
(ulimit -s 16384
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure --no-tests=error -j "$test_jobs" -L '^suite$')
# Bugs the compiler does not see (use after move, dangling views, ...):
# .clang-tidy's checks over the product files a session's work touches.
stage "clang-tidy: product files the last 10 commits changed (scripts/tidy.sh, .clang-tidy)"
python3 scripts/tidy_db_test.py -q
scripts/tidy.sh HEAD~10 build-asan
# 30 s a target on every commit: the seeds replayed and a short, seeded
# exploration; depth comes from long runs by hand (docs/robustness.md).
stage "fuzzing (${FUZZ_SECONDS:-30} s per target, seed ${FUZZ_SEED:-1}; docs/robustness.md)"
FUZZ_SEED=${FUZZ_SEED:-1} scripts/fuzz.sh "${FUZZ_SECONDS:-30}" . build-asan
# Debian's gRPC, Abseil and cpp-httplib are not instrumented: the
# suppressions leave out what TSan cannot judge there (the file says why).
stage "build (tsan: the tests labelled threads)"
scripts/build.sh tsan thread_tests
stage "tests of code that starts threads, under tsan"
# As in the ASan stage, each executable whole, in one process.
TSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/tsan.supp halt_on_error=1 second_deadlock_stack=1" \
  ctest --test-dir build-tsan --output-on-failure --no-tests=error -j "$test_jobs" \
    -L '^suite-threads$'
stage "all tests passed"
