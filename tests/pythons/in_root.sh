#!/usr/bin/env bash
# Inside a Debian root filesystem (tools/in_debian_root.sh, checkout at /src,
# wheels at /wheels, pip pointed at them alone): the wheel for this CPython,
# built here and repaired by auditwheel (tools/build_wheel.sh), then
# installed into VENV (torch from PyPI and the test tools, made by ./dev's
# ensure_root_python); then what a user runs first (tests/wheel/smoke.py,
# `python -m torchferry check cpu`), the ATen plugin built for this torch into
# the package, and the compat test subset against the installed wheel.
#
#   tests/pythons/in_root.sh PYTHON_VERSION VENV TEST...
set -euo pipefail

[ $# -ge 3 ] || { echo "usage: tests/pythons/in_root.sh PYTHON_VERSION VENV TEST..." >&2; exit 2; }
py="$1" venv="$2" interpreter="python$1"
shift 2
[ -f "$venv/.torchferry-stamp" ] || { echo "$venv is not a finished venv (./dev's ensure_root_python makes it)" >&2; exit 1; }
torch="$(sed -n 's/^torch==\([^ ]*\).*/\1/p' "$venv/.torchferry-stamp")"
# The build folder lives in the checkout, per CPython, so that a rerun is
# incremental (git-ignored like every build/ folder).
build="/src/build/python$py"
dist="/src/dist"
say() { printf '\033[1m==> [python %s, torch %s] %s\033[0m\n' "$py" "$torch" "$*" >&2; }

# The wheel, built and repaired here by the script `./dev wheel` uses too.
wheel="$(/src/tools/build_wheel.sh "$interpreter" "$build" "$dist" | tail -n 1)"
say "wheel: dist/$(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB)"

# The package folder goes whole: an ATen plugin that an earlier run built into
# it is in no wheel's RECORD, so a reinstall alone would keep it.
"$venv/bin/python" -m pip uninstall -q -y torchferry 2>/dev/null || true
rm -rf "$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')/torchferry"
"$venv/bin/python" -m pip install -q --no-deps "$wheel"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
say "smoke test and check cpu"
"$venv/bin/python" /src/tests/wheel/smoke.py
"$venv/bin/python" -m torchferry check cpu

say "the ATen plugin for this torch, into the installed package"
plugin_dir="$("$venv/bin/python" -c 'import torchferry; print(torchferry.PLUGIN_DIR)')"
# Through ccache, where the root has it: build-aten still finds `c++` on PATH
# as a user's does, and a rerun reuses the objects (66 s, then seconds). A link
# of our own: Debian's /usr/lib/ccache holds gcc and g++ but no c++.
ccache_path=""
if command -v ccache >/dev/null; then
  ccache_path="$(mktemp -d)"
  ln -s "$(command -v ccache)" "$ccache_path/c++"
  ccache_path="$ccache_path:"
fi
PATH="$ccache_path$PATH" "$venv/bin/python" -m torchferry build-aten --out "$plugin_dir"

say "compat tests against the installed wheel"
cd /src
"$venv/bin/python" -m pytest -q -p no:cacheprovider -n 2 --dist loadfile "$@"
"$venv/bin/python" -c '
import sys, torch
from torchferry import bridge
i = bridge.info()
c = i["offset_calibration"]
path, layout, offset = i["path"], c["layout"], c["tensor_offset"]
print(f"python {sys.version.split()[0]}, torch {torch.__version__}: path {path}, calibrated layout {layout} with the at::Tensor at byte {offset}")
'
