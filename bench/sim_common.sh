# Sourced by the benchmarks that drive a simulated cluster, from the
# repository root with `build` set: the three binaries (or a one-line
# "build first"), a scratch directory $work removed at exit together with
# the simulator started as $sim_pid, and now_ms.
sim=$PWD/$build/src/cli/k8shazgpu_sim/k8shazgpu-sim
k8s=$PWD/$build/src/cli/k8shazgpu/k8shazgpu
node=$PWD/$build/src/cli/k8shazgpu_node/k8shazgpu-node
for b in "$sim" "$k8s" "$node"; do [ -x "$b" ] || { echo "build first: scripts/build.sh" >&2; exit 1; }; done
work=$(mktemp -d)
sim_pid=
cleanup() { [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
now_ms() { echo $(($(date +%s%N) / 1000000)); }
