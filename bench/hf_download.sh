#!/usr/bin/env bash
# Model download throughput (docs/perf.md): hfcache_fake_hub serves a
# ~400 MB model (3 LFS weight files, 2 small files) from a temp dir on
# 127.0.0.1; this times `curl` fetching the same files through the same
# resolve URLs (one process, one kept connection, -L for the CDN redirect,
# written to disk) against `hf_download` (hfcache::Download: the Hub cache
# layout, hashing every byte). hf_download syncs each blob to disk before
# naming it; curl does not, so each is also timed the other way: curl
# followed by `sync`, and hf_download --no-sync.
# Usage: bench/hf_download.sh [build-dir] [runs]   (default build/, 10)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
runs=${2:-10}
hub=$PWD/$build/src/hfcache/hfcache_fake_hub
dl=$PWD/$build/src/hfcache/hf_download
[ -x "$hub" ] && [ -x "$dl" ] || { echo "build first: cmake --build $build" >&2; exit 1; }
work=$(mktemp -d)
mkdir -p "$work/model"
for i in 1 2 3; do head -c $((128 << 20)) /dev/urandom >"$work/model/model-0000$i-of-00003.safetensors"; done
printf '{"model_type":"bench"}\n' >"$work/model/config.json"
head -c 2000000 /dev/urandom | base64 >"$work/model/tokenizer.json"
bytes=$(du -cb "$work"/model/* | tail -1 | cut -f1)
"$hub" --dir "$work/model" >"$work/port" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
endpoint=http://127.0.0.1:$(cat "$work/port")
commit=cccccccccccccccccccccccccccccccccccccccc
curl_args=()
for f in "$work"/model/*; do
  name=$(basename "$f")
  curl_args+=(-o "$work/curl/$name" "$endpoint/bench/model/resolve/$commit/$name")
done
echo "== $bytes bytes in 5 files from $endpoint, $runs interleaved runs each"
# Interleaved rounds (each command once per round), not hyperfine's
# one-command-after-another: on a shared VM a neighbour's build that starts
# mid-benchmark then slows every command alike instead of one of them.
python3 - "$work" "$bytes" "$runs" "$dl" "$endpoint" "${curl_args[@]}" <<'PY'
import shutil, statistics, subprocess, sys, time, os
work, size, runs, dl, endpoint, curl_args = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6:]
ours = [dl, "bench/model", "--endpoint", endpoint, "--cache", f"{work}/cache"]
commands = {
    "curl": (["curl", "-sSfL", *curl_args], False),
    "hf_download --no-sync": (ours + ["--no-sync"], False),
    "curl, then sync": (["curl", "-sSfL", *curl_args], True),
    "hf_download": (ours, False),
}
times = {name: [] for name in commands}
for _ in range(runs + 1):  # the first round warms up
    for name, (argv, then_sync) in commands.items():
        shutil.rmtree(f"{work}/curl", ignore_errors=True)
        shutil.rmtree(f"{work}/cache", ignore_errors=True)
        os.makedirs(f"{work}/curl")
        os.sync()
        start = time.monotonic()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        if then_sync:
            os.sync()
        times[name].append(time.monotonic() - start)
rate = {}
for name, samples in times.items():
    median = statistics.median(samples[1:])
    rate[name] = size / median / 1e6
    print(f"{name:24} median {median:.3f} s  {rate[name]:5.0f} MB/s  (min {min(samples[1:]):.3f} s, max {max(samples[1:]):.3f} s)")
print(f"hf_download --no-sync / curl:      {100 * rate['hf_download --no-sync'] / rate['curl']:.0f} %")
print(f"hf_download / (curl, then sync):   {100 * rate['hf_download'] / rate['curl, then sync']:.0f} %")
PY
