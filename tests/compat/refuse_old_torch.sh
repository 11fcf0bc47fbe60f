#!/usr/bin/env bash
# torch older than the floor (2.3) must be refused at import with a clear
# message that names what its libtorch_cpu lacks, never half-loaded. Debian's python3-torch (1.13.1) under Debian's own python3 is
# such a torch. The torchferry package is copied out of a venv so that the
# venv's own torch stays out of sight.
set -euo pipefail
venv="$1"
pkg=$("$venv/bin/python" -c 'import importlib.util as u; print(u.find_spec("torchferry").submodule_search_locations[0])')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$pkg" "$tmp/torchferry"
out=$(cd "$tmp" && /usr/bin/python3 -c '
import torch
print("torch", torch.__version__)
try:
    import torchferry
except ImportError as e:
    print("ImportError:", e)
else:
    print("IMPORTED (wrong)")
' 2>&1) || true
echo "$out"
grep -q '^torch 1\.13' <<<"$out" || { echo "FAIL: expected Debian's torch 1.13 under /usr/bin/python3"; exit 1; }
grep -q 'ImportError: torchferry needs torch >= 2.3, found torch 1.13' <<<"$out" || { echo "FAIL: torch 1.13 was not refused clearly"; exit 1; }
grep -q 'libtorch_cpu.so[.0-9]* lacks aoti_torch_get_data_ptr, ' <<<"$out" || { echo "FAIL: the refusal does not name what torch 1.13's libtorch_cpu lacks"; exit 1; }
echo "1 passed, 0 failed: torch 1.13 refused at import"
