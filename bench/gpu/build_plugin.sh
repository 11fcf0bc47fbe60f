#!/usr/bin/env bash
# Builds torchferry_cuda.so from plugins/cuda with nvcc and the C++ compiler
# alone, without meson. bench/gpu_check.sh falls back to it when the
# project's own build fails for a reason outside the plugin, so that the
# plugin can still be checked. The flags mirror plugins/cuda/meson.build.
#
# Usage: bench/gpu/build_plugin.sh OUTPUT_DIR     (NVCC, CXX override the tools)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT_DIR="${1:?usage: build_plugin.sh OUTPUT_DIR}"
mkdir -p "$OUT_DIR/obj"

NVCC="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
CXX="${CXX:-c++}"
if [ ! -x "$NVCC" ]; then
  echo "build_plugin: no nvcc at '$NVCC' (looked on PATH and in /usr/local/cuda/bin);" \
    "set NVCC to nvcc's path" >&2
  exit 2
fi
# nvcc may be a wrapper script; it knows where the toolkit really is.
HERE_DIR="$("$NVCC" --dryrun -E -x cu /dev/null 2>&1 | sed -n 's/^#\$ _HERE_=//p' | head -1)"
CUDA_ROOT="$(cd "${HERE_DIR:-$(dirname "$NVCC")}/.." && pwd)"
CUDART=""
for d in lib64 lib targets/x86_64-linux/lib targets/sbsa-linux/lib; do
  if [ -f "$CUDA_ROOT/$d/libcudart_static.a" ]; then
    CUDART="$CUDA_ROOT/$d/libcudart_static.a"
    break
  fi
done
if [ -z "$CUDART" ]; then
  echo "build_plugin: libcudart_static.a not found under $CUDA_ROOT" >&2
  exit 2
fi

ARCHS='sm_80 sm_90 compute_90'
NVCC_FLAGS=(-std=c++17 -O3 -DNDEBUG "-I$ROOT" "-DTORCHFERRY_CUDA_ARCHS=\"$ARCHS\""
  --compiler-options -fPIC,-fvisibility=hidden,-fvisibility-inlines-hidden
  -gencode=arch=compute_80,code=sm_80 '-gencode=arch=compute_90,code=[sm_90,compute_90]')
CXX_FLAGS=(-std=c++17 -O2 -DNDEBUG -fPIC -fvisibility=hidden -fvisibility-inlines-hidden
  "-I$ROOT" -isystem "$CUDA_ROOT/include" "-DTORCHFERRY_CUDA_ARCHS=\"$ARCHS\"")

JOBS="${JOBS:-$(nproc)}"
echo "build_plugin: $NVCC (toolkit $CUDA_ROOT), $CXX, $JOBS jobs"
failed=0
running=0
compile() {
  case "$1" in
    *.cu) "$NVCC" "${NVCC_FLAGS[@]}" -c "$1" -o "$OUT_DIR/obj/$(basename "$1").o" ;;
    *) "$CXX" "${CXX_FLAGS[@]}" -c "$1" -o "$OUT_DIR/obj/$(basename "$1").o" ;;
  esac
}
for src in "$ROOT"/plugins/cuda/*.cu "$ROOT"/plugins/cuda/*.cc; do
  if [ "$running" -ge "$JOBS" ]; then
    wait -n || failed=1
    running=$((running - 1))
  fi
  compile "$src" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done
if [ "$failed" -ne 0 ]; then
  echo "build_plugin: compiling failed (see above)" >&2
  exit 1
fi
"$CXX" -shared -o "$OUT_DIR/torchferry_cuda.so" "$OUT_DIR"/obj/*.o "$CUDART" \
  -lrt -ldl -lpthread "-Wl,--version-script=$ROOT/plugins/cuda/exports.map"
echo "build_plugin: built $OUT_DIR/torchferry_cuda.so"
