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

// How long a worker looks for the next region, and the caller for the last
// share's end, before sleeping on a condition variable. A sleeping thread
// takes a futex wake-up to resume: measured on a 2-vCPU VM
// (bench/pool_compare.sh), a region of two empty shares took 4-59 us with
// sleeps alone, and a float32 add of 65536 elements (the least work the CPU
// plugin splits) 75 us against 21 us serial; oneTBB, whose workers spin
// before sleeping, 0.15 us and 12 us. Spinning this long after each region
// costs a core at most kSpin of busy waiting, as OpenMP's and oneTBB's
// workers do, and back-to-back regions (a model's layers) never sleep.
constexpr auto kSpin = std::chrono::microseconds(100);

inline void Relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

// Spins until pred() holds or kSpin passes; whether it holds. Past the
// first iterations each one yields: a thread woken onto this core (the
// caller, or a worker woken from its sleep) then runs at once instead of
// waiting out the spin (a region after 2 ms idle took 105 us without it).
template <typename Pred>
bool SpinUntil(Pred pred) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (int i = 1;; ++i) {
    if (pred()) return true;
    if (i < 64) {
      Relax();
    } else {
      std::this_thread::yield();
      if (std::chrono::steady_clock::now() >= until) return pred();
    }
  }
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
      pending_.store(job.shares - 1, std::memory_order_relaxed);
      // Release: a worker that sees the new generation sees job_ too.
      generation_.fetch_add(1, std::memory_order_release);
      if (sleepers_ > 0) wake_.notify_all();
    }
    RunShare(job, 0);
    const auto done = [this] {
      return pending_.load(std::memory_order_acquire) == 0;
    };
    if (!SpinUntil(done)) {
      std::unique_lock<std::mutex> lock(mutex_);
      WaitUntil(done_, lock, done);
    }
    return true;
  }

 private:
  // A worker cannot miss a region it has a share in: the next region starts
  // only after this one's shares have all run. The generation changes under
  // mutex_, and a worker about to sleep checks it under mutex_ and counts
  // itself among the sleepers, so a region that finds none need not notify.
  void Work(int32_t index) {
    uint64_t seen = 0;
    for (;;) {
      const auto next = [&] {
        return generation_.load(std::memory_order_acquire) != seen;
      };
      if (!SpinUntil(next)) {
        std::unique_lock<std::mutex> lock(mutex_);
        ++sleepers_;
        WaitUntil(wake_, lock, next);
        --sleepers_;
      }
      Job job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        seen = generation_.load(std::memory_order_relaxed);
        job = job_;
      }
      if (index >= job.shares) continue;
      RunShare(job, index);
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        // The caller may be asleep: notify under the mutex, so that it
        // cannot check pending_ and then sleep past this notification.
        std::unique_lock<std::mutex> lock(mutex_);
        done_.notify_one();
      }
    }
  }

  std::mutex region_;  // one region at a time
  std::mutex mutex_;   // job_, sleepers_, and changes of generation_
  std::condition_variable wake_;
  std::condition_variable done_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int32_t> pending_{0};
  int32_t workers_ = 0;
  int32_t sleepers_ = 0;
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
