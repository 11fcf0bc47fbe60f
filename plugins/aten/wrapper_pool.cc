#include "wrapper_pool.h"

#include "blob_wrapper.h"

namespace torchferry::aten {
namespace {

bool TryClaim(pool_detail::Entry& entry) {
  bool expected = false;
  return entry.in_use.compare_exchange_strong(
      expected, true, std::memory_order_acquire, std::memory_order_relaxed);
}

void Unclaim(pool_detail::Entry& entry) {
  entry.in_use.store(false, std::memory_order_release);
}

bool Describes(const at::Tensor& wrapper, c10::IntArrayRef sizes,
               c10::IntArrayRef strides, c10::ScalarType dtype,
               c10::Device device) {
  return wrapper.scalar_type() == dtype && wrapper.device() == device &&
         wrapper.sizes().equals(sizes) && wrapper.strides().equals(strides);
}

// Swaps in a non-owning DataPtr; the storage's size stays right because the
// shape and strides that fixed it are the same.
void PointAt(const at::Tensor& wrapper, void* data) {
  wrapper.storage().unsafeGetStorageImpl()->set_data_ptr_noswap(
      c10::DataPtr(data, wrapper.device()));
}

}  // namespace

PoolLease& PoolLease::operator=(PoolLease&& other) noexcept {
  if (this != &other) {
    Release();
    entry_ = other.entry_;
    other.entry_ = nullptr;
  }
  return *this;
}

void PoolLease::Release() noexcept {
  if (entry_ == nullptr) return;
  PointAt(entry_->wrapper, nullptr);
  Unclaim(*entry_);
  entry_ = nullptr;
}

PoolLease WrapperPool::Lease(void* data, c10::IntArrayRef sizes,
                             c10::IntArrayRef strides, c10::ScalarType dtype,
                             c10::Device device) {
  for (pool_detail::Entry& entry : entries_) {
    if (!TryClaim(entry)) continue;
    if (!entry.wrapper.defined()) {
      // Built with the call's pointer already in place; the lease clears it.
      try {
        entry.wrapper = WrapBlob(data, sizes, strides, dtype, device);
      } catch (...) {
        Unclaim(entry);
        throw;
      }
      return PoolLease(&entry);
    }
    if (Describes(entry.wrapper, sizes, strides, dtype, device)) {
      PointAt(entry.wrapper, data);
      return PoolLease(&entry);
    }
    Unclaim(entry);
  }
  return PoolLease();
}

PoolCensus WrapperPool::Census() {
  PoolCensus census;
  for (pool_detail::Entry& entry : entries_) {
    if (!TryClaim(entry)) {
      ++census.built;
      ++census.leased;
      continue;
    }
    if (entry.wrapper.defined()) {
      ++census.built;
      if (entry.wrapper.storage().data() != nullptr) ++census.holding_data;
    }
    Unclaim(entry);
  }
  return census;
}

KernelPools::~KernelPools() {
  for (std::atomic<WrapperPool*>& slot : slots_) {
    delete slot.load(std::memory_order_acquire);
  }
}

WrapperPool* KernelPools::ForSlot(int slot) {
  if (slot < 0 || slot >= kMaxSlots) return nullptr;
  std::atomic<WrapperPool*>& cell = slots_[slot];
  WrapperPool* pool = cell.load(std::memory_order_acquire);
  if (pool != nullptr) return pool;
  // Two first calls may race to make the slot's pool: one publishes, the
  // other throws its own away and takes the published one.
  auto* fresh = new WrapperPool();
  if (cell.compare_exchange_strong(pool, fresh, std::memory_order_acq_rel,
                                   std::memory_order_acquire)) {
    return fresh;
  }
  delete fresh;
  return pool;
}

PoolCensus KernelPools::Census() {
  PoolCensus total;
  for (std::atomic<WrapperPool*>& slot : slots_) {
    WrapperPool* pool = slot.load(std::memory_order_acquire);
    if (pool == nullptr) continue;
    const PoolCensus census = pool->Census();
    total.built += census.built;
    total.leased += census.leased;
    total.holding_data += census.holding_data;
  }
  return total;
}

}  // namespace torchferry::aten
