#!/usr/bin/env bash
# The hardening stage of `./dev test`: proves that the bridge, the loader and
# the plugins break nothing, in about 10 minutes on two cores.
#
#   tests/hardening/run.sh [--builds-only] BUILD_VENV [TEST_VENV...]
#
# --builds-only: the three sanitizer builds and nothing else (their logs in
# build/hardening/early-logs/). ./dev test starts such a run, at the lowest
# priority, as soon as BUILD_VENV is ready, so that the builds take the time
# the cores would otherwise sit idle; the full run waits for it, then finds
# its builds done.
#
# BUILD_VENV is the environment whose meson, ninja and Python build the
# sanitizer variants; TEST_VENVs (default: BUILD_VENV) hold a normal
# torchferry build each, one per torch, for the leak, thread and hostile-input
# runs. Build folders, incremental between runs:
#   build/asan       clang AddressSanitizer + UndefinedBehaviorSanitizer: the
#                    C++ tests, the plugins and the extension (installed into
#                    build/asan-site, never into a venv)
#   build/tsan       clang ThreadSanitizer: the loader and registry tests
#   build/fuzz       clang libFuzzer + ASan + UBSan: the fuzz targets
# Everything it writes goes to build/hardening/: logs/, reports/ (one file per
# sanitizer report), summary.txt (the lines ./dev test prints at its end).
#
# Knobs: TF_HARDENING_FUZZ_RUNS (the gate's runs per target: 1000000 for the
# descriptor and schema targets, 300000 for dlpack_import, 100000 for
# call_args), TF_HARDENING_FUZZ_SEED
# (1), TF_HARDENING_FUZZ_SECONDS (open-ended fuzzing after the gate, per
# target, the four in parallel; 0, the default, runs none),
# TF_HARDENING_LEAK_ITERATIONS (1000000), TF_HARDENING_ROUNDS (thread rounds, 200),
# TF_HARDENING_ASAN_PYTEST (the test files of the ASan run; default
# tests/python/test_*.py but those the run says why it leaves out),
# TF_HARDENING_JOBS (pytest workers under ASan, 2).
#
# A fuzz crash leaves its input in build/fuzz/artifacts/; to see the call it
# made: TF_FUZZ_VERBOSE=1 TF_TEST_CPU_PLUGIN=build/fuzz/plugins/cpu/
# torchferry_cpu.so TF_TEST_EXAMPLE_C_PLUGIN=build/fuzz/plugins/example_c/
# torchferry_example_c.so build/fuzz/tests/hardening/fuzz_call_args INPUT
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/tests/hardening"
cd "$ROOT"
BUILDS_ONLY=0
if [ "${1:-}" = --builds-only ]; then
  BUILDS_ONLY=1
  shift
fi
if [ $# -lt 1 ]; then
  sed -n '2,/^set /p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
BUILD_VENV="$1"
shift
TEST_VENVS=("$@")
[ ${#TEST_VENVS[@]} -gt 0 ] || TEST_VENVS=("$BUILD_VENV")

OUT="$ROOT/build/hardening"
LOGS="$OUT/logs"
REPORTS="$OUT/reports"
if [ $BUILDS_ONLY = 1 ]; then
  LOGS="$OUT/early-logs"
  rm -rf "$LOGS"
else
  rm -rf "$LOGS" "$REPORTS" "$OUT/summary.txt" "$OUT"/hostile-*.txt
fi
mkdir -p "$LOGS" "$REPORTS"
FUZZ_SECONDS="${TF_HARDENING_FUZZ_SECONDS:-0}"
# The gate's seed: the same seeds, seed and runs explore the same inputs on
# every machine; set another to explore elsewhere.
FUZZ_SEED="${TF_HARDENING_FUZZ_SEED:-1}"
LEAK_ITERATIONS="${TF_HARDENING_LEAK_ITERATIONS:-1000000}"
ROUNDS="${TF_HARDENING_ROUNDS:-200}"
ASAN_JOBS="${TF_HARDENING_JOBS:-2}"
PY="$BUILD_VENV/bin/python"
export PATH="$BUILD_VENV/bin:$PATH"
export TORCHFERRY_PLUGIN_PATH="" TORCHFERRY_PLUGINS="" TORCHFERRY_BRIDGE=""

SUMMARY=()
FAILED=()
START=$SECONDS

say() { printf '\033[1m==> hardening: %s\033[0m\n' "$*" >&2; }
line() { SUMMARY+=("$1"); printf '%s\n' "$1"; }
failed() { FAILED+=("$1"); printf 'FAILED: %s\n' "$1" >&2; }
# Runs a command with its output in logs/NAME.log; shows the tail on failure.
logged() {
  local name="$1" rc
  shift
  "$@" >"$LOGS/$name.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] && return 0
  printf -- '--- last lines of build/hardening/logs/%s.log ---\n' "$name" >&2
  tail -n 40 "$LOGS/$name.log" >&2
  return $rc
}
# Sanitizer reports written under reports/ whose name starts with $1 (a file
# that holds only a warning, such as ASan declining a 4 TiB allocation that
# torch then reports as a MemoryError, is not a report).
report_files() {
  find "$REPORTS" -maxdepth 1 -name "$1*" -type f -print0 |
    xargs -0 -r grep -l -E 'ERROR: |runtime error: ' 2>/dev/null
}
reports() { report_files "$1" | wc -l; }
show_reports() {
  local f
  for f in $(report_files "$1" | head -n 3); do
    printf -- '--- %s ---\n' "${f#"$ROOT"/}" >&2
    grep -E 'ERROR|WARNING|SUMMARY|runtime error|^    #[0-9] ' "$f" | head -n 25 >&2
  done
}
torch_of() {
  "$1/bin/python" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null
}

command -v clang >/dev/null && command -v clang++ >/dev/null || {
  echo "tests/hardening/run.sh needs clang and clang++ (apt-get install clang libclang-rt-14-dev)" >&2
  exit 2
}
ASAN_RT="$(clang -print-file-name=libclang_rt.asan-x86_64.so)"
[ -f "$ASAN_RT" ] || { echo "no ASan runtime at $ASAN_RT (libclang-rt-14-dev)" >&2; exit 2; }

# meson puts ccache in front of the compiler it finds itself, not in front of
# one named by CC and CXX, as the sanitizer builds do: it is named here, so
# that a fresh checkout's three sanitizer builds reuse the objects of
# unchanged files (./dev sets CCACHE_BASEDIR and CCACHE_NOHASHDIR).
SAN_CC=clang SAN_CXX=clang++
if command -v ccache >/dev/null; then SAN_CC="ccache clang" SAN_CXX="ccache clang++"; fi

# Recoverable, so that a Python run can log every report and go on (the C++
# tests still stop at the first: halt_on_error=1 there).
SAN_FLAGS="-fno-omit-frame-pointer -gline-tables-only -fsanitize-recover=address"
# No bench peers: the sanitizer builds never run the bench.
COMMON_SETUP=(-Dtests=true -Daten=disabled -Dcuda=disabled -Dbench_peers=false -Db_lundef=false)

# --- builds ------------------------------------------------------------------
# One run builds at a time: a full run waits here for a --builds-only run
# still going (./dev test starts one early, at the lowest priority).
exec 7>"$OUT/builds.lock"
flock 7
say "ASan+UBSan build (build/asan, installed into build/asan-site)"
ASAN_BUILD_OK=1
logged build-asan env CC="$SAN_CC" CXX="$SAN_CXX" "$PY" -m pip install --no-build-isolation \
  --no-deps --upgrade --target "$ROOT/build/asan-site" \
  -Cbuild-dir="$ROOT/build/asan" \
  -Csetup-args=-Dtests=true -Csetup-args=-Dhardening=true \
  -Csetup-args=-Daten=disabled -Csetup-args=-Dcuda=disabled \
  -Csetup-args=-Dbench_peers=false \
  -Csetup-args=-Db_sanitize=address,undefined -Csetup-args=-Db_lundef=false \
  "-Csetup-args=-Dc_args=$SAN_FLAGS" "-Csetup-args=-Dcpp_args=$SAN_FLAGS" \
  "$ROOT" || { ASAN_BUILD_OK=0; failed "the ASan+UBSan build"; }

# Sets a build folder up with clang, or brings an existing one's options to
# these (a no-op when they are unchanged).
configure() {
  local dir="$1"
  shift
  if [ -f "$dir/build.ninja" ]; then
    meson configure "$dir" "$@"
  else
    env CC="$SAN_CC" CXX="$SAN_CXX" meson setup "$dir" "$@"
  fi
}

say "TSan build (build/tsan)"
TSAN_BUILD_OK=1
{
  logged setup-tsan configure build/tsan "${COMMON_SETUP[@]}" \
    -Dpython=false -Dhardening=true -Db_sanitize=thread \
    "-Dc_args=$SAN_FLAGS" "-Dcpp_args=$SAN_FLAGS" &&
    logged build-tsan meson compile -C build/tsan
} || { TSAN_BUILD_OK=0; failed "the TSan build"; }

say "libFuzzer build (build/fuzz)"
FUZZ_BUILD_OK=1
{
  logged setup-fuzz configure build/fuzz "${COMMON_SETUP[@]}" \
    -Dsanitize_fuzz=true -Db_sanitize=address,undefined \
    "-Dc_args=$SAN_FLAGS -fsanitize=fuzzer-no-link" \
    "-Dcpp_args=$SAN_FLAGS -fsanitize=fuzzer-no-link" &&
    logged build-fuzz meson compile -C build/fuzz fuzz_descriptor fuzz_call_args \
      fuzz_dlpack_import fuzz_schema torchferry_cpu torchferry_example_c
} || { FUZZ_BUILD_OK=0; failed "the libFuzzer build"; }

exec 7>&-
if [ $BUILDS_ONLY = 1 ]; then
  say "builds: $((SECONDS - START)) s, ${#FAILED[@]} failed (logs: build/hardening/early-logs)"
  [ ${#FAILED[@]} -eq 0 ]
  exit
fi

# --- ASan + UBSan ------------------------------------------------------------
# One file per report: log_path makes every report countable, whoever ran it.
UBSAN_ENV="print_stacktrace=1"
# Meson's per-test limits (30 s unless a test sets its own) are sized for the
# plain builds; instrumented code runs 2-5x slower, and the C++ tests run two
# at a time beside whatever else the machine does: the cpu matmul suite, 21 s
# alone under ASan on a 2-core zen3, passed 30 s in a loaded run and was killed.
SAN_TIMEOUT_MULTIPLIER=5
ASAN_CPP_TESTS="?"
ASAN_PY_TESTS=0
ASAN_PY_FAILED=0
HOSTILE_PYTEST_LINE=""
if [ $ASAN_BUILD_OK = 1 ]; then
  say "C++ tests under ASan+UBSan, LeakSanitizer on"
  ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=1:log_path=$REPORTS/asan-cpp" \
  UBSAN_OPTIONS="$UBSAN_ENV:halt_on_error=1:log_path=$REPORTS/ubsan-cpp" \
    logged asan-cpp meson test -C build/asan --no-rebuild --print-errorlogs --num-processes 2 \
    --timeout-multiplier "$SAN_TIMEOUT_MULTIPLIER" || failed "C++ tests under ASan+UBSan"
  ASAN_CPP_TESTS="$(grep -cE '^ *[0-9]+/[0-9]+ .* OK ' "$LOGS/asan-cpp.log")"
  BROKEN_LINE="$(grep -h '^broken plugins:' build/asan/meson-logs/testlog.txt | tail -n 1)"
  grep -h '^FAIL ' build/asan/meson-logs/testlog.txt | sed 's/^/  /' >&2 || true

  # The Python suite, and the hostile inputs and threads, against the ASan
  # extension: torch and CPython are not instrumented, so the runtime is
  # preloaded; LeakSanitizer is off (both leak by design at exit); memory is
  # allowed to run out (a hostile input asks torch for 4 TiB); CPython's own
  # allocator is bypassed so that ASan sees every Python object. Both
  # sanitizers report and go on, so that one report does not hide the rest;
  # each test file runs in its own process, so that a crash does not either.
  asan_python() {
    env LD_PRELOAD="$ASAN_RT" PYTHONPATH="$ROOT/build/asan-site" PYTHONMALLOC=malloc \
      ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:halt_on_error=0:suppressions=$HERE/asan.supp:log_path=$REPORTS/asan-py" \
      UBSAN_OPTIONS="$UBSAN_ENV:suppressions=$HERE/ubsan.supp:log_path=$REPORTS/ubsan-py" \
      "$PY" "$@"
  }
  say "Python under ASan+UBSan: tests/python, hostile inputs, threads"
  if asan_python -c 'import torchferry, sys; sys.exit(0 if "asan-site" in torchferry.__file__ else 1)' \
      >"$LOGS/asan-import.log" 2>&1; then
    if [ -d tests/python ] && ls tests/python/test_*.py >/dev/null 2>&1; then
      rm -f "$OUT"/asan-pytest*.xml
      # Left out by default, each for what it repeats:
      # - the conformance kit's tests (check, the SDK, the template wheel): they
      #   run their work in fresh interpreters over wheels they build, dozens
      #   of them a test; a kit run is checked below instead, once per plugin;
      # - test_gpu_check_cases: the GPU check's CPU dry run, which is the
      #   kit's conformance cases (checked below) plus large shapes that
      #   test_long_sums and test_parallel_kernels take through the same
      #   kernels here; it keeps the GPU script right, which the main stage
      #   proves (264 s under the sanitizers);
      # - test_cli_mistakes: one fresh interpreter per mistake in the CLI's
      #   arguments or environment, refused with one line by Python code;
      #   the native code the children reach (the import, the bridge's
      #   variables) test_bridge_paths takes under ASan too (229 s);
      # - test_entry_points: which distributions' entry points Python's
      #   importlib finds and how each is refused, in dozens of child
      #   interpreters; what reaches native code is a plugin path, which
      #   test_reliability_loader and the loader's Catch2 tests hand the
      #   loader in every bad form here (246 s);
      # - test_bench_threads: the benchmark's thread columns, timing loops of
      #   Python over kernels test_parallel_kernels checks here (64 s).
      # The main stage runs them on the default torch (dev's ONCE_TESTS
      # holds the four that do not depend on the torch).
      files=()
      # shellcheck disable=SC2086
      for file in ${TF_HARDENING_ASAN_PYTEST:-tests/python/test_*.py}; do
        case "$(basename "$file")" in
          test_check.py | test_kit.py | test_kit_sdk.py | test_gpu_check_cases.py | test_cli_mistakes.py | \
            test_entry_points.py | test_bench_threads.py)
            [ -n "${TF_HARDENING_ASAN_PYTEST:-}" ] || continue ;;
          test_hostile_inputs.py) continue ;;
        esac
        files+=("$file")
      done
      # pytest-xdist, one worker per core (an instrumented run is CPU-bound),
      # a file to a worker at a time (so a module's fixtures run once): two
      # interpreters under ASan instead of one per file saves their start
      # and collection. A worker that crashes fails its test and is replaced,
      # so a crash hides nothing else. The hostile inputs run in a process of
      # their own beside it (3.5 min alone), for their tally, which a worker
      # would keep to itself.
      hostile_pid=""
      if [ -z "${TF_HARDENING_ASAN_PYTEST:-}" ] || [[ " ${TF_HARDENING_ASAN_PYTEST} " == *test_hostile_inputs.py* ]]; then
        logged asan-test_hostile_inputs asan_python -m pytest -q -p no:cacheprovider \
          --junitxml="$OUT/asan-pytest-hostile.xml" tests/python/test_hostile_inputs.py &
        hostile_pid=$!
      fi
      if [ ${#files[@]} -gt 0 ]; then
        logged asan-pytest asan_python -m pytest -q -p no:cacheprovider -n "$ASAN_JOBS" --dist loadfile \
          --junitxml="$OUT/asan-pytest.xml" "${files[@]}" || failed "tests/python under ASan+UBSan"
      fi
      if [ -n "$hostile_pid" ]; then
        wait "$hostile_pid" || failed "tests/python/test_hostile_inputs.py under ASan+UBSan"
      fi
      read -r ASAN_PY_TESTS ASAN_PY_FAILED < <("$PY" "$HERE/junit_count.py" "$OUT"/asan-pytest*.xml)
      HOSTILE_PYTEST_LINE="$(grep -h '^hostile inputs: ' "$LOGS/asan-test_hostile_inputs.log" 2>/dev/null | tail -n 1)"
    fi
    # The conformance kit over the plugins the ASan build installed: every
    # kernel through every case kind (empty, 0-dim, offset, transposed,
    # broadcast, special values), in the kit's own child processes.
    for plugin in cpu example_c; do
      logged "asan-check-$plugin" asan_python -m torchferry check "$plugin" \
        || failed "python -m torchferry check $plugin under ASan+UBSan"
    done
    TF_HARDENING_COUNT_FILE="$OUT/hostile-asan.txt" logged asan-hostile \
      asan_python "$HERE/hostile_inputs.py" || failed "hostile inputs under ASan+UBSan"
    # The GIL check counts another thread's bytecodes, which CPython's raw
    # malloc mode disturbs: it runs in the normal builds below.
    logged asan-threads asan_python "$HERE/threads.py" 20 --no-gil-check \
      || failed "threads under ASan+UBSan"
  else
    failed "importing the ASan extension (see build/hardening/logs/asan-import.log)"
    tail -n 20 "$LOGS/asan-import.log" >&2
  fi
  n_cpp=$(($(reports asan-cpp) + $(reports ubsan-cpp)))
  n_py=$(($(reports asan-py) + $(reports ubsan-py)))
  [ $n_cpp -eq 0 ] || { failed "$n_cpp ASan/UBSan reports from the C++ tests"; show_reports asan-cpp; show_reports ubsan-cpp; }
  [ $n_py -eq 0 ] || { failed "$n_py ASan/UBSan reports from Python"; show_reports asan-py; show_reports ubsan-py; }
  line "asan+ubsan: $ASAN_CPP_TESTS C++ tests passed (LeakSanitizer on); $ASAN_PY_TESTS pytest tests run (${ASAN_PY_FAILED:-0} failed), hostile inputs and threads against the ASan extension; $((n_cpp + n_py)) reports ($n_cpp from C++, $n_py from Python; build/hardening/reports)"
fi

# --- TSan --------------------------------------------------------------------
if [ $TSAN_BUILD_OK = 1 ]; then
  say "loader and registry tests under TSan"
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:log_path=$REPORTS/tsan"
  logged tsan-loader meson test -C build/tsan --no-rebuild --print-errorlogs --num-processes 2 \
    --timeout-multiplier "$SAN_TIMEOUT_MULTIPLIER" --suite loader || failed "loader tests under TSan"
  logged tsan-registry meson test -C build/tsan --no-rebuild --print-errorlogs \
    --timeout-multiplier "$SAN_TIMEOUT_MULTIPLIER" "hardening registry threads" || failed "registry threads under TSan"
  threads_text="$(grep -ho 'registry threads: [^,]*' build/tsan/meson-logs/testlog.txt | head -n 1)"
  unset TSAN_OPTIONS
  n_tsan=$(reports tsan)
  [ "$n_tsan" -eq 0 ] || { failed "$n_tsan TSan reports"; show_reports tsan; }
  line "tsan: $(cat "$LOGS/tsan-loader.log" "$LOGS/tsan-registry.log" | grep -cE '^ *[0-9]+/[0-9]+ .* OK ') loader and registry tests (${threads_text#registry threads: }), $n_tsan reports"
fi

# --- broken plugins ----------------------------------------------------------
if [ -n "${BROKEN_LINE:-}" ]; then
  line "$BROKEN_LINE (under ASan+UBSan)"
elif [ $ASAN_BUILD_OK = 1 ]; then
  failed "the broken-plugin sweep did not report"
fi

# --- leaks, threads and hostile inputs on each torch -------------------------
for venv in "${TEST_VENVS[@]}"; do
  version="$(torch_of "$venv")"
  [ -n "$version" ] || { failed "no torch in $venv"; continue; }
  say "leak, threads and hostile inputs on torch $version ($venv)"
  (cd /tmp && logged "leak-$version" "$venv/bin/python" "$HERE/leak.py" "$LEAK_ITERATIONS") \
    || failed "leak check on torch $version"
  leak_line="$(grep -h '^leak: ' "$LOGS/leak-$version.log" | tail -n 1)"
  [ -n "$leak_line" ] && line "$leak_line"
  grep -h '^FAIL' "$LOGS/leak-$version.log" >&2
  (cd /tmp && logged "threads-$version" "$venv/bin/python" "$HERE/threads.py" "$ROUNDS") \
    || failed "threads on torch $version"
  threads_line="$(grep -h '^threads: ' "$LOGS/threads-$version.log" | tail -n 1)"
  [ -n "$threads_line" ] && line "${threads_line/threads: /threads: torch $version, }"
  grep -h '^FAIL' "$LOGS/threads-$version.log" >&2
  (cd /tmp && TF_HARDENING_COUNT_FILE="$OUT/hostile-$version.txt" \
    logged "hostile-$version" "$venv/bin/python" "$HERE/hostile_inputs.py") \
    || failed "hostile inputs on torch $version"
  [ -f "$OUT/hostile-$version.txt" ] && line "$(cat "$OUT/hostile-$version.txt") (torch $version)"
  grep -h '^FAIL' "$LOGS/hostile-$version.log" >&2
done
[ -f "$OUT/hostile-asan.txt" ] && line "$(cat "$OUT/hostile-asan.txt") (tests/hardening, under ASan+UBSan)"
[ -n "$HOSTILE_PYTEST_LINE" ] && line "$HOSTILE_PYTEST_LINE (tests/python, under ASan+UBSan)"
grep -h '^FAIL' "$LOGS/asan-hostile.log" 2>/dev/null >&2

# --- fuzzing -----------------------------------------------------------------
# The gate: a fixed number of runs per target from the seeds under
# tests/hardening/corpus (make_corpus.py's, and every crash ever found under
# corpus/crashes/), with a fixed seed and nothing kept from earlier runs, so
# that its length does not depend on the machine's speed. The inputs it tries
# still vary a little from run to run (two runs of fuzz_descriptor with seed
# 1 reached 2,088 and 2,089 edges at 200,000 runs, with or without ASLR), so
# a defect reached only rarely can show in one run and not the next: a crash
# here is a real finding, and its input goes under corpus/crashes/. Open-ended
# fuzzing (TF_HARDENING_FUZZ_SECONDS) comes after it, from the corpus grown in
# build/fuzz/corpus, and is reported apart.
# Runs per target: about 70 s for call_args and 10 - 30 s for the others on a
# quiet two-core machine (measured 2026-12-05), longer on a loaded one, with
# the same verdict.
fuzz_runs() {
  case "$1" in
    descriptor | schema) echo "${TF_HARDENING_FUZZ_RUNS:-1000000}" ;;
    dlpack_import) echo "${TF_HARDENING_FUZZ_RUNS:-300000}" ;;
    *) echo "${TF_HARDENING_FUZZ_RUNS:-100000}" ;;
  esac
}
# fuzz TARGET MODE: MODE gate or explore; the log goes to logs/fuzz-MODE-TARGET.log.
fuzz() {
  local target="$1" mode="$2" leaks=0 limit seeds=() work
  # LeakSanitizer for the pure C++ targets; the others embed CPython.
  [ "$target" = descriptor ] || [ "$target" = schema ] && leaks=1
  seeds=("$HERE/corpus/$target")
  [ -d "$HERE/corpus/crashes/$target" ] && seeds+=("$HERE/corpus/crashes/$target")
  if [ "$mode" = gate ]; then
    # New inputs go to an emptied folder: the seeds under tests/ are only read.
    work="build/fuzz/gate/$target"
    rm -rf "$work"
    limit=(-runs="$(fuzz_runs "$target")" -seed="$FUZZ_SEED")
  else
    work="build/fuzz/corpus/$target"
    limit=(-max_total_time="$FUZZ_SECONDS")
  fi
  mkdir -p "$work" build/fuzz/artifacts
  env TF_TEST_CPU_PLUGIN="$ROOT/build/fuzz/plugins/cpu/torchferry_cpu.so" \
    TF_TEST_EXAMPLE_C_PLUGIN="$ROOT/build/fuzz/plugins/example_c/torchferry_example_c.so" \
    ASAN_OPTIONS="detect_leaks=$leaks:halt_on_error=1" UBSAN_OPTIONS="$UBSAN_ENV:halt_on_error=1" \
    "build/fuzz/tests/hardening/fuzz_$target" "${limit[@]}" -timeout=20 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="build/fuzz/artifacts/$target-" \
    "$work" "${seeds[@]}" >"$LOGS/fuzz-$mode-$target.log" 2>&1
}
# Reads the logs of one mode; adds the line and any failure.
fuzz_report() {
  local mode="$1" label="$2" parts=() target log runs secs crash artifact
  for target in descriptor call_args dlpack_import schema; do
    log="$LOGS/fuzz-$mode-$target.log"
    runs="$(grep -ho 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -n 1)"
    secs="$(grep -ho 'Done [0-9]* runs in [0-9]* second' "$log" | grep -o 'in [0-9]*' | grep -o '[0-9]*' | tail -n 1)"
    # The harness's own message, else the sanitizer's SUMMARY (file:line).
    crash="$(grep -hm1 -E '^fuzz_[a-z_]+: |runtime error:' "$log")"
    [ -n "$crash" ] || crash="$(grep -hm1 -E '^SUMMARY: ' "$log" | sed 's/^SUMMARY: //')"
    [ -n "$crash" ] || crash="$(grep -hm1 -E 'ERROR: ' "$log" | sed 's/^==[0-9]*== *//')"
    artifact="$(grep -ho 'Test unit written to [^ ]*' "$log" | head -n 1 | sed 's/Test unit written to //')"
    if [ -z "$crash" ] && [ -n "$runs" ]; then
      parts+=("$target $runs runs in ${secs:-?} s, 0 crashes")
    else
      parts+=("$target CRASHED after ${runs:-?} runs: ${crash:-no stats, see build/hardening/logs/fuzz-$mode-$target.log}${artifact:+ (input: $artifact; keep it under tests/hardening/corpus/crashes/$target/ once fixed)}")
      failed "fuzz target $target ($label)"
      grep -A 12 -m1 -E 'ERROR: |^fuzz_[a-z_]+: |runtime error:' "$log" | head -n 20 >&2
    fi
  done
  line "fuzz $label: $(IFS=';'; echo "${parts[*]}" | sed 's/;/; /g')"
}
if [ $FUZZ_BUILD_OK = 1 ]; then
  say "fuzzing: the gate, a fixed number of runs per target (two at a time)"
  for pair in "descriptor call_args" "dlpack_import schema"; do
    for target in $pair; do fuzz "$target" gate & done
    wait
  done
  fuzz_report gate "gate (seed $FUZZ_SEED, fixed runs)"
  if [ "$FUZZ_SECONDS" -gt 0 ]; then
    say "fuzzing: open-ended, 4 targets, $FUZZ_SECONDS s each, in parallel"
    for target in descriptor call_args dlpack_import schema; do fuzz "$target" explore & done
    wait
    fuzz_report explore "open-ended (${FUZZ_SECONDS} s each)"
  fi
fi

# --- summary -----------------------------------------------------------------
line "hardening: $((SECONDS - START)) s, $([ ${#FAILED[@]} -eq 0 ] && echo "all passed" || echo "${#FAILED[@]} FAILED: $(IFS=';'; echo "${FAILED[*]}" | sed 's/;/; /g')")"
printf '%s\n' "${SUMMARY[@]}" >"$OUT/summary.txt"
[ ${#FAILED[@]} -eq 0 ]
