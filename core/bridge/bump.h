// The bridge's counters (reads per path, shim handles deleted): one bump
// per tensor, so it must cost next to nothing.
#pragma once

#include <Python.h>  // Py_GIL_DISABLED

#include <atomic>
#include <cstdint>

namespace torchferry {
namespace bridge_internal {

// Every Read and Release runs with the GIL held, which already serialises
// them: a relaxed load and store (no locked instruction) keeps the counts
// exact at a fraction of an atomic increment's cost. Free-threaded CPython
// has no GIL, so there the count is a real atomic add.
inline void Bump(std::atomic<uint64_t>& counter) {
#ifdef Py_GIL_DISABLED
  counter.fetch_add(1, std::memory_order_relaxed);
#else
  counter.store(counter.load(std::memory_order_relaxed) + 1,
                std::memory_order_relaxed);
#endif
}

}  // namespace bridge_internal
}  // namespace torchferry
