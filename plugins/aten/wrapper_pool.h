// Reusable ATen wrappers, the "pool" strategy. Building an at::Tensor (a
// TensorImpl and a StorageImpl on the heap) costs as much as a small ATen
// call; a call that repeats a shape instead takes a wrapper built by an
// earlier call and points its storage at this call's data.
//
// Ownership: a wrapper never owns caller memory. Its DataPtr has no deleter,
// and it is cleared when the lease ends, so nothing of the caller's outlives
// the call and no later call can reach a stale pointer.
//
// Concurrency contract: no lock on the hot path. Each entry carries an atomic
// flag; a call claims an entry with a compare-exchange (acquire) and returns
// it with a release store, so an entry's wrapper, shape and data pointer are
// touched by one thread at a time and handed on with happens-before. A
// concurrent, nested or re-entrant call that finds the matching entry taken
// claims another one, building it while there is room (kEntriesPerSlot); past
// that it gets no lease and the caller builds a throwaway wrapper instead.
// An entry's shape, strides, dtype and device are fixed when it is built, and
// entries are never freed: a kernel may run on another thread until exit.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <atomic>

namespace torchferry::aten {

class WrapperPool;

namespace pool_detail {
struct Entry {
  std::atomic<bool> in_use{false};
  at::Tensor wrapper;  // undefined until the first call builds it
};
}  // namespace pool_detail

// The right to use one pool entry for the rest of a call. Move-only; ending
// it clears the wrapper's data pointer and frees the entry for other calls.
class PoolLease {
 public:
  PoolLease() = default;
  PoolLease(PoolLease&& other) noexcept : entry_(other.entry_) {
    other.entry_ = nullptr;
  }
  PoolLease& operator=(PoolLease&& other) noexcept;
  PoolLease(const PoolLease&) = delete;
  PoolLease& operator=(const PoolLease&) = delete;
  ~PoolLease() { Release(); }

  explicit operator bool() const { return entry_ != nullptr; }
  // The wrapper, pointing at the data the lease was taken for.
  at::Tensor& tensor() const { return entry_->wrapper; }

 private:
  friend class WrapperPool;
  explicit PoolLease(pool_detail::Entry* entry) : entry_(entry) {}
  void Release() noexcept;

  pool_detail::Entry* entry_ = nullptr;
};

// What a pool holds, counted without disturbing running calls.
struct PoolCensus {
  int built = 0;         // entries with a wrapper
  int leased = 0;        // entries some call holds right now
  int holding_data = 0;  // idle entries whose wrapper still points somewhere
};

// The wrappers of one argument slot of one kernel.
class WrapperPool {
 public:
  static constexpr int kEntriesPerSlot = 8;

  // A lease on a wrapper of exactly this shape, strides, dtype and device,
  // now pointing at `data`; empty when every such entry is taken and no room
  // is left to build one.
  PoolLease Lease(void* data, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                  c10::ScalarType dtype, c10::Device device);

  PoolCensus Census();

 private:
  std::array<pool_detail::Entry, kEntriesPerSlot> entries_;
};

// The pools of one kernel, one per argument slot (inputs then outputs, a
// list counting one slot per item), each made by the first call that needs
// it. Slots past kMaxSlots are not pooled.
class KernelPools {
 public:
  static constexpr int kMaxSlots = 16;

  KernelPools() = default;
  KernelPools(const KernelPools&) = delete;
  KernelPools& operator=(const KernelPools&) = delete;
  // Never destroyed while kernels may run, which is until exit: the plugin
  // allocates its KernelPools once and leaks them on purpose.
  ~KernelPools();

  // nullptr when `slot` is not pooled.
  WrapperPool* ForSlot(int slot);

  PoolCensus Census();

 private:
  std::array<std::atomic<WrapperPool*>, kMaxSlots> slots_{};
};

}  // namespace torchferry::aten
