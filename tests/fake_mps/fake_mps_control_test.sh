#!/usr/bin/env bash
# The stand-in nvidia-cuda-mps-control (fake_mps_control.cc) behaves as the
# real tool does where canhazgpu relies on it: -d starts one daemon per pipe
# directory and returns once it listens, the client sends one command per
# line, quit stops the daemon and removes its socket and pid file, and the
# record names what it was told. Usage: fake_mps_control_test.sh BINARY
set -euo pipefail
bin=$1
tmp=$(mktemp -d /tmp/fakemps.XXXXXX)
trap 'CUDA_MPS_PIPE_DIRECTORY=$tmp/pipe "$bin" <<<quit >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
export CUDA_MPS_PIPE_DIRECTORY=$tmp/pipe CUDA_MPS_LOG_DIRECTORY=$tmp/log
export FAKE_MPS_RECORD=$tmp/record CUDA_VISIBLE_DEVICES=GPU-test
fail() { echo "FAIL: $*" >&2; exit 1; }

# No daemon: the client says so and fails.
out=$("$bin" <<<get_server_list) && fail "client without a daemon exited 0"
[[ $out == *"Cannot find MPS control daemon"* ]] || fail "client said: $out"

"$bin" -d || fail "-d exited $?"
[[ -S $tmp/pipe/control ]] || fail "no control socket"
pid=$(cat "$tmp/pipe/nvidia-cuda-mps-control.pid")
kill -0 "$pid" || fail "daemon $pid is not running"
"$bin" -d 2>/dev/null && fail "a second -d on one pipe directory succeeded"

out=$(printf 'set_default_device_pinned_mem_limit 0 10240M\nget_default_device_pinned_mem_limit 0\n' | "$bin")
[[ $out == 10240M ]] || fail "pinned limit read back as: $out"
out=$("$bin" <<<'set_default_active_thread_percentage 0')
[[ $out == Invalid* ]] || fail "a bad percentage was taken: $out"
grep -q "Command set_default_device_pinned_mem_limit 0 10240M" "$tmp/log/control.log" ||
  fail "control.log lacks the command"
grep -q "^GPU-test $pid env CUDA_MPS_PIPE_DIRECTORY=$tmp/pipe$" "$tmp/record" ||
  fail "record lacks the environment"
grep -q "^GPU-test $pid command set_default_device_pinned_mem_limit 0 10240M$" "$tmp/record" ||
  fail "record lacks the command"

"$bin" <<<quit || fail "quit exited $?"
[[ ! -e $tmp/pipe/control && ! -e $tmp/pipe/nvidia-cuda-mps-control.pid ]] ||
  fail "quit left its files"
# The daemon exits right after answering quit.
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
kill -0 "$pid" 2>/dev/null && fail "daemon $pid still runs after quit"

FAKE_MPS_FAIL_START="no CUDA-capable device" "$bin" -d 2>"$tmp/err" && fail "-d did not fail"
grep -q "no CUDA-capable device" "$tmp/err" || fail "failure text not printed"
echo PASS
