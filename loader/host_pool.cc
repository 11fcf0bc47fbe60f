#include "loader/host_pool.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace torchferry {
namespace {

thread_local bool tl_inside = false;
thread_local int32_t tl_index = 0;

struct Job {
  int64_t begin = 0;
  int64_t end = 0;
  int32_t shares = 0;
  tf_parallel_fn fn = nullptr;
  void* ctx = nullptr;
};

void RunShare(const Job& job, int32_t index) {
  int64_t b = 0, e = 0;
  ShareBounds(job.begin, job.end, job.shares, index, &b, &e);
  ShareScope scope(index);
  if (b < e) job.fn(b, e, job.ctx);
}

// Waits on cv until pred() holds. Timed waits rather than
// condition_variable::wait: GCC 12's libstdc++ exports wait(unique_lock&)
// at symbol version GLIBCXX_3.4.30, newer than the wheel's platform
// (manylinux_2_34) allows, while its waits on the steady clock are inline
// (pthread_cond_clockwait). The day-long timeout only bounds one wait; the
// loop waits on.
template <typename Pred>
void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
               Pred pred) {
  while (!pred()) cv.wait_for(lock, std::chrono::hours(24));
}

class Pool {
 public:
  bool Run(Job job) {
    std::unique_lock<std::mutex> region(region_, std::try_to_lock);
    if (!region.owns_lock()) return false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // Workers are detached and never end: the pool lives until exit.
      while (workers_ < job.shares - 1) {
        try {
          std::thread([this, index = workers_ + 1] { Work(index); }).detach();
        } catch (...) {
          break;  // no thread to be had (a limit): fewer, larger shares
        }
        ++workers_;
      }
      job.shares = std::min(job.shares, workers_ + 1);
      if (job.shares < 2) return false;
      job_ = job;
      pending_ = job.shares - 1;
      ++generation_;
    }
    wake_.notify_all();
    RunShare(job, 0);
    std::unique_lock<std::mutex> lock(mutex_);
    WaitUntil(done_, lock, [this] { return pending_ == 0; });
    return true;
  }

 private:
  // A worker cannot miss a region it has a share in: the next region starts
  // only after this one's shares have all run.
  void Work(int32_t index) {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      WaitUntil(wake_, lock, [&] { return generation_ != seen; });
      seen = generation_;
      if (index >= job_.shares) continue;
      const Job job = job_;
      lock.unlock();
      RunShare(job, index);
      lock.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::mutex region_;  // one region at a time
  std::mutex mutex_;   // the fields below
  std::condition_variable wake_;
  std::condition_variable done_;
  uint64_t generation_ = 0;
  int32_t workers_ = 0;
  int32_t pending_ = 0;
  Job job_;
};

std::atomic<Pool*> g_pool{nullptr};

// In the child only the forking thread lives on: the parent's workers are
// gone and its mutexes may be held by threads that no longer exist. The old
// pool is left as it is (never destroyed) and a new one is made on use.
void ForgetPoolInChild() { g_pool.store(nullptr); }

Pool& GetPool() {
  Pool* pool = g_pool.load(std::memory_order_acquire);
  if (pool != nullptr) return *pool;
  static const bool registered = [] {
    pthread_atfork(nullptr, nullptr, &ForgetPoolInChild);
    return true;
  }();
  (void)registered;
  auto* fresh = new Pool();
  if (g_pool.compare_exchange_strong(pool, fresh, std::memory_order_acq_rel)) {
    return *fresh;
  }
  delete fresh;  // another thread made one first
  return *pool;
}

}  // namespace

ShareScope::ShareScope(int32_t index)
    : was_inside_(tl_inside), was_index_(tl_index) {
  tl_inside = true;
  tl_index = index;
}

ShareScope::~ShareScope() {
  tl_inside = was_inside_;
  tl_index = was_index_;
}

bool InsideShare() { return tl_inside; }

int32_t ShareIndex() { return tl_inside ? tl_index : 0; }

void ShareBounds(int64_t begin, int64_t end, int32_t shares, int32_t index,
                 int64_t* share_begin, int64_t* share_end) {
  // Unsigned: end - begin may exceed INT64_MAX.
  const uint64_t range =
      static_cast<uint64_t>(end) - static_cast<uint64_t>(begin);
  const uint64_t n = static_cast<uint64_t>(shares);
  const uint64_t i = static_cast<uint64_t>(index);
  const uint64_t q = range / n, r = range % n;
  const uint64_t first = i * q + std::min(i, r);
  const uint64_t size = q + (i < r ? 1 : 0);
  *share_begin = static_cast<int64_t>(static_cast<uint64_t>(begin) + first);
  *share_end =
      static_cast<int64_t>(static_cast<uint64_t>(begin) + first + size);
}

bool HostPoolRun(int64_t begin, int64_t end, int32_t shares, tf_parallel_fn fn,
                 void* ctx) {
  return GetPool().Run(Job{begin, end, shares, fn, ctx});
}

}  // namespace torchferry
