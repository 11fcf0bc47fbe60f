// The host's own pool of worker threads for parallel_for, used where torch
// exports no torch_parallel_for (torch < 2.10) and in a forked child.
#pragma once

#include <cstdint>

#include "abi/torchferry.h"

namespace torchferry {

// Marks the running thread as inside a share with index `index` (so that a
// nested parallel_for runs inline and thread_index answers) until destroyed.
class ShareScope {
 public:
  explicit ShareScope(int32_t index);
  ~ShareScope();
  ShareScope(const ShareScope&) = delete;
  ShareScope& operator=(const ShareScope&) = delete;

 private:
  bool was_inside_;
  int32_t was_index_;
};

bool InsideShare();
int32_t ShareIndex();  // 0 outside a share

// Share `index` of `shares` contiguous shares of [begin, end), sizes
// differing by at most one, the larger first.
void ShareBounds(int64_t begin, int64_t end, int32_t shares, int32_t index,
                 int64_t* share_begin, int64_t* share_end);

// Runs fn over [begin, end) split into `shares` (>= 2) shares: share 0 on the
// caller, the others on workers, made on first need and kept. Returns once
// every share has run. Returns false, having run nothing, when another
// thread's region holds the pool: the caller then runs inline (regions never
// wait for each other, so none can deadlock on another). Safe after fork():
// the child leaves the parent's pool (whose workers did not survive) and
// makes a fresh one.
bool HostPoolRun(int64_t begin, int64_t end, int32_t shares, tf_parallel_fn fn,
                 void* ctx);

}  // namespace torchferry
