#!/usr/bin/env bash
# `canhazgpu devices --json` on a simulated host with MIG and without it,
# validated against shared/schemas' resource.k8s.io/v1 OpenAPI. Exit 77
# (ctest: skipped) when the schemas are not on this machine.
# Usage: resource_slice_schema.sh CANHAZGPU_BINARY
set -euo pipefail
binary=$1
here=$(cd "$(dirname "$0")" && pwd)
schema=
for candidate in "${CANHAZGPU_SCHEMAS:-}" "$here/../../../shared/schemas" /work/shared/schemas; do
  if [ -n "$candidate" ] && [ -f "$candidate/kubernetes/apis__resource.k8s.io__v1_openapi.json" ]; then
    schema="$candidate/kubernetes/apis__resource.k8s.io__v1_openapi.json"
    break
  fi
done
if [ -z "$schema" ]; then
  echo "resource-slice-schema: shared/schemas not found; skipped"
  exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/state"
cat > "$dir/state/fake-host.json" <<'JSON'
{"driver_version": "550.54.15", "cuda_driver_version": "12.4", "gpus": [
  {"name": "NVIDIA A100-SXM4-40GB", "uuid": "GPU-a", "memory_total_mib": 40960, "compute_capability": "8.0",
   "architecture": "Ampere", "pcie_root": "pci0000:00", "mig_mode": "enabled", "mig_instances": [
     {"uuid": "MIG-1", "profile": "1g.5gb", "profile_id": 19, "placement_start": 0, "placement_size": 1, "memory_mib": 4864},
     {"uuid": "MIG-2", "profile": "3g.20gb", "profile_id": 9, "placement_start": 4, "placement_size": 4, "memory_mib": 19968}]},
  {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-b", "memory_total_mib": 81559, "compute_capability": "9.0",
   "architecture": "Hopper", "mig_mode": "disabled"}]}
JSON
export CANHAZGPU_STATE="$dir/state/state.db" HOME="$dir"
"$binary" admin --provider fake > /dev/null
"$binary" devices --json > "$dir/slice.json"
/usr/bin/python3 "$here/validate_resource_slice.py" "$schema" "$dir/slice.json"
# A slice that breaks the schema must fail: the check can tell.
/usr/bin/python3 - "$dir/slice.json" "$dir/bad.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["spec"]["devices"][0]["attributes"]["type"] = {"text": "gpu"}
json.dump(s, open(sys.argv[2], "w"))
PY
if /usr/bin/python3 "$here/validate_resource_slice.py" "$schema" "$dir/bad.json" > "$dir/bad.out"; then
  echo "resource-slice-schema: an invalid slice passed the check" >&2
  exit 1
fi
grep -q "Additional properties are not allowed ('text'" "$dir/bad.out" || {
  cat "$dir/bad.out" >&2
  exit 1
}
