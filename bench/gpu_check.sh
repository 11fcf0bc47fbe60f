#!/usr/bin/env bash
# bench/gpu_check.sh - torchferry's CUDA checks, in one run, on a machine with
# an NVIDIA GPU. Run it from a plain copy of the working tree; it needs no
# network and changes nothing outside a scratch folder.
#
#   OUT=/some/dir bash bench/gpu_check.sh
#
# Needs there: bash, a Python >= 3.9 with torch >= 2.9 (a CUDA build), nvcc
# (on PATH or in /usr/local/cuda/bin) and a C++ compiler.
# Build tools: meson, ninja and meson-python are taken from that Python where
# it has them. Any that is missing is installed into the scratch folder from
# the wheels in the folder named by TORCHFERRY_WHEELS, prepared elsewhere with
# e.g. `pip download --no-deps -d wheels meson-python pyproject-metadata meson
# ninja packaging` (meson-python, pyproject-metadata, meson and packaging are
# pure-Python wheels; ninja's must match the machine's platform).
# fmt: the system's when pkg-config or CMake finds it, else the copy of fmt's
# headers that torch ships (torch/include/fmt); the project uses fmt header-only.
#
# Steps, each under a hard `timeout`, all within TORCHFERRY_GPU_BUDGET seconds:
#   environment       what the machine has (GPU, driver, torch, nvcc, tools)
#   build tools       meson, ninja, meson-python (from TORCHFERRY_WHEELS if missing)
#   build             pip install --no-build-isolation --no-deps of the repo
#                     into a scratch --target folder, with -Dcuda=enabled
#   plugin build      only when that build failed or lacks the CUDA plugin:
#                     bench/gpu/build_plugin.sh (nvcc + c++, no meson)
#   plugin load       dlopen torchferry_cuda.so, negotiate, init on the GPU
#   ops (torchferry)  bench/gpu/check_ops.py: the conformance kit over the
#                     CUDA plugin (python -m torchferry check cuda --device
#                     cuda: every kernel, each case kind, crashes reported by
#                     kernel), then sizes that pick the kernels' variants and
#                     what only a GPU shows (user streams, a second GPU, more
#                     than 2^31 elements), through torchferry.ops, whose
#                     preparation checks and shapes each call (the ATen
#                     fallback excluded, so the CUDA plugin must serve; a
#                     plugin from the plugin build is put on
#                     TORCHFERRY_PLUGIN_PATH)
#   bridge            bench/gpu/check_bridge.py: shim and offset paths on CUDA
#                     tensors, cuda.core's StridedMemoryView beside ours
#   compile (cuda)    torch.compile(fullgraph=True) of CUDA ops, equal to eager
#   bench             python -m torchferry bench --device cuda --quick
#   threads           python -m torchferry bench --sections threads --quick on
#                     the CPU: torch's and the CPU plugin's thread count swept
#                     from 1 to every core this process may use (the scaling
#                     figure a 2-core machine cannot give); runs with or
#                     without a GPU
#
# Environment:
#   OUT                        where the results go (default ./gpu-check-out)
#   TORCHFERRY_PYTHON          the Python with torch (default python3)
#   TORCHFERRY_WHEELS          folder of wheels for missing build tools
#   TORCHFERRY_GPU_SETUP_ARGS  meson options for the build (default
#                              "-Daten=disabled -Dtests=false -Dwerror=false":
#                              that machine's compilers may warn where ours do
#                              not, and a new warning must not stop the checks;
#                              warnings are enforced where the project is built)
#   TORCHFERRY_GPU_BUDGET      seconds for the whole run (default 470)
#   TORCHFERRY_GPU_SCRATCH     scratch folder (default a new one under /tmp);
#                              reusing one makes a rerun's build incremental
#   TORCHFERRY_GPU_BUILD_JOBS  parallel compile jobs (default: ninja's choice)
#
# Writes exactly two files into $OUT: gpu-check.log (everything printed) and
# gpu-check.json (each step's status, time and results).
# Exit status: 0 every check that ran passed; 1 a check failed or timed out;
# 2 no check could run (no GPU, nothing built).

set -u

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT_DIR="${OUT:-$PWD/gpu-check-out}"
mkdir -p "$OUT_DIR"
LOG="$OUT_DIR/gpu-check.log"
RESULT_JSON="$OUT_DIR/gpu-check.json"
: >"$LOG"
exec > >(tee -a "$LOG") 2>&1

BUDGET="${TORCHFERRY_GPU_BUDGET:-470}"
START="$(date +%s)"
SCRATCH="${TORCHFERRY_GPU_SCRATCH:-$(mktemp -d /tmp/torchferry-gpu.XXXXXX)}"
mkdir -p "$SCRATCH"
STEPS="$SCRATCH/steps.jsonl"
: >"$STEPS"
PY="${TORCHFERRY_PYTHON:-python3}"
SETUP_ARGS="${TORCHFERRY_GPU_SETUP_ARGS:--Daten=disabled -Dtests=false -Dwerror=false}"
export PYTHONUNBUFFERED=1
export PATH="$PATH:/usr/local/cuda/bin"
# The Python's own bin folder holds meson and ninja when they are pip-installed.
if PY_PATH="$(command -v "$PY")"; then
  export PATH="$(dirname "$PY_PATH"):$PATH"
fi

say() { printf '\n==== %s\n' "$*"; }

# finish PYTHON [CODE]: the summary into $RESULT_JSON by PYTHON, the log
# flushed, and exit with CODE, or merge_results.py's status without one.
finish() {
  local code
  say "summary after $(elapsed)s"
  "$1" "$ROOT/bench/gpu/merge_results.py" "$STEPS" "$RESULT_JSON"
  code="${2:-$?}"
  # Let tee flush the log before the script ends.
  exec >&- 2>&-
  wait
  exit "$code"
}

elapsed() { echo $(($(date +%s) - START)); }

# Seconds a step may take: what it wants, capped by what is left of the
# budget after a reserve for the summary.
allowance() {
  local want="$1" left
  left=$((BUDGET - $(elapsed) - 15))
  if [ "$left" -lt "$want" ]; then want="$left"; fi
  echo "$want"
}

# record STEP STATUS RC SECONDS DETAIL [JSON_PATH]
record() {
  "$PY" - "$@" >>"$STEPS" <<'EOF' || echo "{\"step\": \"$1\", \"status\": \"$2\"}" >>"$STEPS"
import json, sys
step, status, rc, seconds, detail = sys.argv[1:6]
entry = {"step": step, "status": status, "rc": int(rc), "seconds": float(seconds),
         "detail": detail}
if len(sys.argv) > 6 and sys.argv[6]:
    entry["json"] = sys.argv[6]
print(json.dumps(entry))
EOF
}

# run_step NAME WANT_SECONDS JSON_PATH COMMAND... : runs COMMAND under timeout
# and records pass (rc 0), skipped (rc 3), timeout (rc 124/137) or fail.
run_step() {
  local name="$1" want="$2" json="$3"
  shift 3
  local limit t0 rc status detail
  limit="$(allowance "$want")"
  say "$name (up to ${limit}s)"
  if [ "$limit" -lt 10 ]; then
    echo "skipped: the time budget of ${BUDGET}s is spent"
    record "$name" skipped 0 0 "no time left in the ${BUDGET}s budget"
    return 3
  fi
  t0="$(date +%s%N)"
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$SCRATCH/last-step.out"
  rc="${PIPESTATUS[0]}"
  local ms secs last
  ms=$((($(date +%s%N) - t0) / 1000000))
  secs="$((ms / 1000)).$((ms % 1000 / 100))"
  # The step's last words say why it skipped or failed.
  last="$(grep -v '^[[:space:]]*$' "$SCRATCH/last-step.out" | tail -1 | cut -c1-300)"
  case "$rc" in
    0) status=pass detail="" ;;
    3) status=skipped detail="$last" ;;
    124 | 137) status=timeout detail="stopped after ${limit}s" ;;
    *) status=fail detail="exit status $rc: $last" ;;
  esac
  record "$name" "$status" "$rc" "$secs" "$detail" "$json"
  return "$rc"
}

# ---------------------------------------------------------------------------
say "environment"
echo "repo: $ROOT"
echo "scratch: $SCRATCH, results: $OUT_DIR, budget: ${BUDGET}s"
uname -a
timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 ||
  echo "nvidia-smi: not available"
if ! command -v "$PY" >/dev/null 2>&1; then
  echo "no Python: '$PY' is not on PATH; set TORCHFERRY_PYTHON"
  record environment fail 1 0 "no Python '$PY'"
  finish "$(command -v python3 || echo true)" 2
fi
timeout 60 "$PY" - <<'EOF'
import importlib, platform, sys
print(f"python {platform.python_version()} at {sys.executable}")
try:
    import torch
    print(f"torch {torch.__version__} (CUDA {torch.version.cuda}) at {torch.__file__}")
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            print(f"  cuda:{i} {p.name}, sm {p.major}.{p.minor}, {p.total_memory >> 30} GiB")
    else:
        print("  torch sees no CUDA device")
except Exception as e:
    print(f"torch does not import: {e}")
for name in ("mesonpy", "mesonbuild", "ninja", "cuda.core"):
    try:
        m = importlib.import_module(name)
        print(f"{name}: {getattr(m, '__version__', 'present')}")
    except Exception as e:
        print(f"{name}: missing ({type(e).__name__})")
EOF
command -v nvcc >/dev/null && nvcc --version | tail -2 || echo "nvcc: not found"
HAVE_GPU=0
timeout 60 "$PY" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" \
  2>/dev/null && HAVE_GPU=1
command -v pkg-config >/dev/null && echo "pkg-config: $(pkg-config --version)" || echo "pkg-config: missing"
command -v cmake >/dev/null && cmake --version | head -1 || echo "cmake: missing"
record environment pass 0 "$(elapsed)" ""

# ---------------------------------------------------------------------------
say "build tools"
tools_ok=1
missing=()
"$PY" -c "import mesonpy" 2>/dev/null || missing+=(meson-python pyproject-metadata)
"$PY" -c "import packaging" 2>/dev/null || missing+=(packaging)
# The project needs meson >= 1.3; an older system meson is as good as none.
meson_version="$(meson --version 2>/dev/null || echo 0)"
if ! printf '1.3\n%s\n' "$meson_version" | sort -V -C; then
  missing+=(meson)
fi
command -v ninja >/dev/null 2>&1 || missing+=(ninja)
# Several meson options need repeated --config-settings, which pip
# merges into a list only from 23.1 on.
pip_version="$("$PY" -m pip --version 2>/dev/null | awk '{print $2}')"
if ! printf '23.1\n%s\n' "${pip_version:-0}" | sort -V -C; then
  echo "pip ${pip_version:-missing} is older than 23.1, which the package build needs" \
    "(repeated --config-settings); the plugin alone is built without meson"
  tools_ok=0
  record "build tools" fail 1 0 "pip ${pip_version:-missing} < 23.1"
elif [ "${#missing[@]}" -eq 0 ]; then
  echo "meson $(meson --version 2>/dev/null), ninja $(ninja --version 2>/dev/null), meson-python present"
  record "build tools" pass 0 0 "all present"
elif [ -n "${TORCHFERRY_WHEELS:-}" ] && [ -d "${TORCHFERRY_WHEELS}" ]; then
  echo "missing: ${missing[*]}; installing from $TORCHFERRY_WHEELS"
  if timeout 60 "$PY" -m pip install -q --no-index --no-deps --no-compile \
    --find-links "$TORCHFERRY_WHEELS" --target "$SCRATCH/tools" "${missing[@]}"; then
    export PYTHONPATH="$SCRATCH/tools${PYTHONPATH:+:$PYTHONPATH}"
    export PATH="$SCRATCH/tools/bin:$PATH"
    record "build tools" pass 0 0 "installed ${missing[*]} from TORCHFERRY_WHEELS"
  else
    tools_ok=0
    record "build tools" fail 1 0 "could not install ${missing[*]} from $TORCHFERRY_WHEELS"
  fi
else
  tools_ok=0
  echo "missing: ${missing[*]}, and TORCHFERRY_WHEELS names no folder of wheels to install" \
    "them from; the package build is skipped, the plugin alone is built without meson"
  record "build tools" fail 1 0 "missing ${missing[*]}; set TORCHFERRY_WHEELS"
fi

# fmt, header-only: the system's, else torch's copy of its headers.
if ! { command -v pkg-config >/dev/null && pkg-config --exists fmt; }; then
  torch_inc="$("$PY" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "include"))' 2>/dev/null)"
  if [ -n "$torch_inc" ] && [ -f "$torch_inc/fmt/format.h" ]; then
    fmt_version="$(sed -n 's/^#define FMT_VERSION \([0-9]*\).*/\1/p' "$torch_inc"/fmt/base.h "$torch_inc"/fmt/core.h 2>/dev/null | head -1)"
    fmt_version="${fmt_version:-100000}"
    fmt_dotted="$((fmt_version / 10000)).$((fmt_version / 100 % 100)).$((fmt_version % 100))"
    mkdir -p "$SCRATCH/fmt/include" "$SCRATCH/fmt/lib/pkgconfig" "$SCRATCH/fmt/lib/cmake/fmt"
    ln -sfn "$torch_inc/fmt" "$SCRATCH/fmt/include/fmt"
    cat >"$SCRATCH/fmt/lib/pkgconfig/fmt.pc" <<EOF
Name: fmt
Description: fmt headers shipped with torch
Version: $fmt_dotted
Cflags: -I$SCRATCH/fmt/include
EOF
    cat >"$SCRATCH/fmt/lib/cmake/fmt/fmt-config.cmake" <<EOF
add_library(fmt::fmt INTERFACE IMPORTED)
set_target_properties(fmt::fmt PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "$SCRATCH/fmt/include")
set(fmt_FOUND TRUE)
EOF
    cat >"$SCRATCH/fmt/lib/cmake/fmt/fmt-config-version.cmake" <<EOF
set(PACKAGE_VERSION "$fmt_dotted")
set(PACKAGE_VERSION_COMPATIBLE TRUE)
EOF
    export PKG_CONFIG_PATH="$SCRATCH/fmt/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    export CMAKE_PREFIX_PATH="$SCRATCH/fmt${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
    echo "fmt: not installed; using torch's fmt $fmt_dotted headers from $torch_inc"
  else
    echo "fmt: not found, and torch ships no fmt headers; the build will say what it misses"
  fi
fi

# ---------------------------------------------------------------------------
PLUGIN=""
SITE="$SCRATCH/site"
if [ "$tools_ok" -eq 1 ]; then
  setup=()
  # The long spelling: pip before 23.1 knows no -C.
  for arg in -Dcuda=enabled $SETUP_ARGS; do setup+=("--config-settings=setup-args=$arg"); done
  if [ -n "${TORCHFERRY_GPU_BUILD_JOBS:-}" ]; then
    setup+=("--config-settings=compile-args=-j${TORCHFERRY_GPU_BUILD_JOBS}")
  fi
  run_step build 300 "" "$PY" -m pip install -v --no-build-isolation --no-deps --no-index \
    --target "$SITE" "--config-settings=build-dir=$SCRATCH/build" "${setup[@]}" "$ROOT"
  if [ -f "$SITE/torchferry/plugins/torchferry_cuda.so" ]; then
    PLUGIN="$SITE/torchferry/plugins/torchferry_cuda.so"
  elif [ -d "$SITE/torchferry" ]; then
    echo "the package built, but without torchferry/plugins/torchferry_cuda.so"
  fi
else
  record build skipped 0 0 "build tools missing"
fi
if [ -z "$PLUGIN" ]; then
  run_step "plugin build" 240 "" env JOBS="${TORCHFERRY_GPU_BUILD_JOBS:-$(nproc)}" \
    bash "$ROOT/bench/gpu/build_plugin.sh" "$SCRATCH/plugin-only" &&
    PLUGIN="$SCRATCH/plugin-only/torchferry_cuda.so"
fi

# ---------------------------------------------------------------------------
if [ -n "$PLUGIN" ]; then
  run_step "plugin load" 60 "" "$PY" - "$PLUGIN" "$ROOT/bench/gpu" <<'EOF'
import sys
sys.path.insert(0, sys.argv[2])
import tf_ctypes
lib = tf_ctypes.PluginLibrary(sys.argv[1])
print(f"{lib.path}: plugin {lib.name} {lib.version}, {len(lib.kernels)} kernels")
if lib.init_error:
    print(f"init failed: {lib.init_error}")
    sys.exit(3 if "no CUDA device available" in lib.init_error else 1)
print("init: OK")
EOF
else
  record "plugin load" skipped 0 0 "no plugin was built"
fi

# The package, when it built and imports.
if [ -d "$SITE/torchferry" ] &&
  PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}" timeout 60 "$PY" -c "import torchferry" 2>&1; then
  export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
  say "python -m torchferry info"
  timeout 60 "$PY" -m torchferry info || echo "(info failed with status $?)"
  # A plugin from the plugin build (the package's own lacks one) goes first
  # on the search path, so that it serves. The step's limit holds the
  # conformance kit's run as well as the GPU's own checks.
  run_step "ops (torchferry)" 270 "$SCRATCH/ops-torchferry.json" \
    env TORCHFERRY_PLUGINS='*,-aten' TORCHFERRY_PLUGIN_PATH="$PLUGIN" "$PY" "$ROOT/bench/gpu/check_ops.py" \
    --json "$SCRATCH/ops-torchferry.json"
  run_step bridge 60 "$SCRATCH/bridge.json" "$PY" "$ROOT/bench/gpu/check_bridge.py" \
    --json "$SCRATCH/bridge.json"
  # torch.compile over ops the CUDA plugin serves, fullgraph, equal to eager.
  run_step "compile (cuda)" 150 "" "$PY" - <<'PYEOF'
import torch
from torchferry import ops

def f(x, w, b):
    h = ops.rms_norm(x, w, eps=1e-6)
    return ops.silu_and_mul(ops.linear(h, b))

x = torch.randn(4, 256, device="cuda")
w = torch.rand(256, device="cuda") + 0.5
b = torch.randn(512, 256, device="cuda") / 16
with torch.no_grad():
    want = f(x, w, b)
    got = torch.compile(f, fullgraph=True)(x, w, b)
torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
print("compile (cuda): fullgraph equals eager")
PYEOF
  if [ "$HAVE_GPU" -eq 0 ]; then
    echo "bench: torch sees no CUDA device; the GPU benchmark is skipped"
    record bench skipped 0 0 "torch sees no CUDA device"
  elif "$PY" -c "import torchferry.bench" 2>/dev/null; then
    run_step bench 90 "$SCRATCH/bench.json" "$PY" -m torchferry bench --device cuda --quick \
      --json "$SCRATCH/bench.json" --out-dir "$SCRATCH/bench-out"
  else
    echo "bench: this build of torchferry has no benchmark module (torchferry.bench); skipped"
    record bench skipped 0 0 "torchferry.bench is not in this build"
  fi
  # The thread sweep: CPU tensors, so it runs whether or not a GPU is seen.
  if "$PY" -c "import torchferry.bench" 2>/dev/null; then
    run_step threads 150 "$SCRATCH/threads.json" "$PY" -m torchferry bench --sections threads --quick \
      --json "$SCRATCH/threads.json" --out-dir "$SCRATCH/threads-out"
  else
    record threads skipped 0 0 "torchferry.bench is not in this build"
  fi
else
  echo "torchferry does not import from $SITE; the package checks are skipped"
  for step in "ops (torchferry)" bridge "compile (cuda)" bench threads; do
    record "$step" skipped 0 0 "the torchferry package did not build or import"
  done
fi

finish "$PY"
