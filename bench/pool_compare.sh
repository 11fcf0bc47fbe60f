#!/usr/bin/env bash
# Times the host's own parallel_for pool (loader/host_pool.cc) against oneTBB
# (Debian's libtbb-dev) on this machine: the measurement behind the choice of
# the pool that serves plugins where torch lends none (torch < 2.10, a forked
# child). Usage: bench/pool_compare.sh [THREADS]   (default: every core)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
if [ ! -f /usr/include/tbb/parallel_for.h ] && [ ! -f /usr/include/oneapi/tbb/parallel_for.h ]; then
  echo "oneTBB's headers are missing: install Debian's libtbb-dev" >&2
  exit 2
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
c++ -std=c++17 -O2 -march=native -I "$root" -I "$root/abi" \
  "$root/bench/native/pool_compare.cc" "$root/loader/host_pool.cc" \
  -o "$out/pool_compare" -ltbb -pthread
"$out/pool_compare" "${1:-$(nproc)}"
