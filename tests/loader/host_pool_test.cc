// The host's own pool behind tf_host_api.parallel_for, called through the
// table a plugin receives: each index exactly once, shares bounded by grain
// and the thread count, thread_index in range, nesting inline, a forked
// child served, many callers at once. The thread count comes from a function
// the test sets, standing in for at::get_num_threads.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "loader/host_parallel.h"
#include "loader/loader.h"

using namespace torchferry;

namespace {

std::atomic<int> g_threads{4};
int ThreadCount() { return g_threads.load(); }

// Installs the host pool with `threads` threads for one test.
struct HostBackend {
  explicit HostBackend(int threads, const char* choice = "host") {
    g_threads.store(threads);
    TorchParallel torch;
    torch.thread_count = &ThreadCount;
    std::string error;
    REQUIRE(InstallParallel(torch, choice, &error));
    ResetParallelCounts();
  }
};

// What one call saw: its shares, and the thread index and OS thread of each.
struct Record {
  std::mutex mutex;
  struct Share {
    int64_t begin, end;
    int32_t index;
    std::thread::id thread;
  };
  std::vector<Share> shares;
  std::vector<std::atomic<int>> hits;
  int64_t base = 0;
  std::atomic<int> bad_index{0};
  explicit Record(int64_t begin, int64_t end)
      : hits(static_cast<size_t>(end - begin)), base(begin) {}
};

void RecordShare(int64_t begin, int64_t end, void* ctx) {
  auto* r = static_cast<Record*>(ctx);
  const tf_host_api* host = HostApi();
  const int32_t index = host->thread_index();
  if (index < 0 || index >= host->num_threads()) r->bad_index.fetch_add(1);
  for (int64_t i = begin; i < end; ++i) r->hits[i - r->base].fetch_add(1);
  std::lock_guard<std::mutex> lock(r->mutex);
  r->shares.push_back({begin, end, index, std::this_thread::get_id()});
}

// Runs parallel_for over [begin, end) and checks what must hold of any call.
std::vector<Record::Share> Check(int64_t begin, int64_t end, int64_t grain) {
  Record r(begin, end);
  REQUIRE(HostApi()->parallel_for(begin, end, grain, &RecordShare, &r) ==
          TF_OK);
  for (const auto& h : r.hits) REQUIRE(h.load() == 1);
  REQUIRE(r.bad_index.load() == 0);
  auto shares = r.shares;
  std::sort(shares.begin(), shares.end(),
            [](const auto& a, const auto& b) { return a.begin < b.begin; });
  const int64_t range = end - begin;
  const int64_t g = std::max<int64_t>(grain, 1);
  if (range > 0) {
    REQUIRE(static_cast<int64_t>(shares.size()) <=
            std::min<int64_t>(g_threads.load(), (range + g - 1) / g));
    // Contiguous, balanced (sizes differ by at most one), none empty.
    int64_t smallest = range, largest = 0;
    std::set<int32_t> indices;
    std::set<std::thread::id> threads;
    for (size_t i = 0; i < shares.size(); ++i) {
      REQUIRE(shares[i].begin == (i == 0 ? begin : shares[i - 1].end));
      const int64_t size = shares[i].end - shares[i].begin;
      smallest = std::min(smallest, size);
      largest = std::max(largest, size);
      indices.insert(shares[i].index);
      threads.insert(shares[i].thread);
    }
    REQUIRE(shares.back().end == end);
    REQUIRE(smallest >= 1);
    REQUIRE(largest - smallest <= 1);
    // One thread per share, each with its own index.
    REQUIRE(indices.size() == shares.size());
    REQUIRE(threads.size() == shares.size());
  } else {
    REQUIRE(shares.empty());
  }
  return shares;
}

void Nested(int64_t begin, int64_t end, void* ctx) {
  auto* ok = static_cast<std::atomic<int>*>(ctx);
  const int32_t outer = HostApi()->thread_index();
  struct Inner {
    int calls = 0;
    int64_t begin = 0, end = 0;
    int32_t index = -1;
    std::thread::id thread;
  } inner;
  HostApi()->parallel_for(
      begin, end, 1,
      [](int64_t b, int64_t e, void* p) {
        auto* in = static_cast<Inner*>(p);
        ++in->calls;
        in->begin = b;
        in->end = e;
        in->index = HostApi()->thread_index();
        in->thread = std::this_thread::get_id();
      },
      &inner);
  if (inner.calls == 1 && inner.begin == begin && inner.end == end &&
      inner.index == outer && inner.thread == std::this_thread::get_id()) {
    ok->fetch_add(1);
  }
}

}  // namespace

TEST_CASE("each index runs exactly once, in bounded balanced shares",
          "[parallel]") {
  HostBackend backend(4);
  Check(0, 0, 1);
  Check(0, 1, 1);
  Check(0, 7, 3);  // ceil(7 / 3) = 3 shares
  REQUIRE(Check(0, 7, 3).size() == 3);
  REQUIRE(Check(0, 100000, 1).size() == 4);
  REQUIRE(Check(-50, 50, 40).size() == 3);
  REQUIRE(Check(10, 20, 0).size() == 4);  // grain < 1 counts as 1
  REQUIRE(Check(0, 9, 100).size() == 1);  // within one grain: inline
  REQUIRE(Check(1000, 1003, 1).size() == 3);
  const auto counts = GetParallelCounts();
  REQUIRE(counts.parallel[static_cast<int>(ParallelBackend::kHost)] > 0);
  REQUIRE(counts.parallel[static_cast<int>(ParallelBackend::kTorch)] == 0);
  REQUIRE(counts.inline_calls > 0);
}

TEST_CASE("the pool follows the thread count per call", "[parallel]") {
  HostBackend backend(3);
  REQUIRE(HostApi()->num_threads() == 3);
  REQUIRE(Check(0, 1000, 1).size() == 3);
  g_threads.store(1);
  REQUIRE(HostApi()->num_threads() == 1);
  REQUIRE(Check(0, 1000, 1).size() == 1);
  g_threads.store(6);
  REQUIRE(Check(0, 1000, 1).size() == 6);
  g_threads.store(2);
  REQUIRE(Check(0, 1000, 1).size() == 2);
}

TEST_CASE("thread_index is 0 outside a region", "[parallel]") {
  HostBackend backend(4);
  REQUIRE(HostApi()->thread_index() == 0);
  Check(0, 1000, 1);
  REQUIRE(HostApi()->thread_index() == 0);
}

TEST_CASE("a parallel_for inside a share runs inline", "[parallel]") {
  HostBackend backend(4);
  std::atomic<int> ok{0};
  REQUIRE(HostApi()->parallel_for(0, 4000, 1, &Nested, &ok) == TF_OK);
  REQUIRE(ok.load() == 4);
  // Inline at the top (one grain): what fn calls is nested all the same.
  ok.store(0);
  REQUIRE(HostApi()->parallel_for(0, 4000, 4000, &Nested, &ok) == TF_OK);
  REQUIRE(ok.load() == 1);
}

TEST_CASE("bad ranges and a NULL fn are refused, fn not called", "[parallel]") {
  HostBackend backend(4);
  int called = 0;
  auto mark = [](int64_t, int64_t, void* p) { *static_cast<int*>(p) = 1; };
  REQUIRE(HostApi()->parallel_for(5, 4, 1, mark, &called) ==
          TF_ERROR_INVALID_ARGUMENT);
  REQUIRE(HostApi()->parallel_for(0, 4, 1, nullptr, nullptr) ==
          TF_ERROR_INVALID_ARGUMENT);
  REQUIRE(HostApi()->parallel_for(3, 3, 1, mark, &called) == TF_OK);
  REQUIRE(called == 0);
  // The widest range: begin to end overflows int64_t; split all the same.
  struct Ends {
    std::mutex mutex;
    std::vector<std::pair<int64_t, int64_t>> shares;
  } ends;
  REQUIRE(HostApi()->parallel_for(
              INT64_MIN, INT64_MAX, INT64_MAX / 2,
              [](int64_t b, int64_t e, void* p) {
                auto* x = static_cast<Ends*>(p);
                std::lock_guard<std::mutex> lock(x->mutex);
                x->shares.emplace_back(b, e);
              },
              &ends) == TF_OK);
  std::sort(ends.shares.begin(), ends.shares.end());
  // ceil((2^64 - 1) / (2^62 - 1)) = 5 shares wanted, over 4 threads.
  REQUIRE(ends.shares.size() == 4);
  REQUIRE(ends.shares.front().first == INT64_MIN);
  REQUIRE(ends.shares.back().second == INT64_MAX);
  for (size_t i = 1; i < ends.shares.size(); ++i) {
    REQUIRE(ends.shares[i].first == ends.shares[i - 1].second);
  }
}

TEST_CASE("serial runs everything inline; torch is refused without torch",
          "[parallel]") {
  HostBackend backend(4, "serial");
  REQUIRE(HostApi()->num_threads() == 1);
  REQUIRE(Check(0, 100000, 1).size() == 1);
  TorchParallel none;
  std::string error;
  REQUIRE_FALSE(InstallParallel(none, "torch", &error));
  REQUIRE(error.find("does not export torch_parallel_for") !=
          std::string::npos);
  REQUIRE_FALSE(InstallParallel(none, "pool", &error));
  REQUIRE(error ==
          "unknown parallel backend 'pool'; expected 'auto', 'torch', 'host' "
          "or 'serial'");
  REQUIRE(CurrentParallelBackend() == ParallelBackend::kSerial);
  REQUIRE(InstallParallel(none, nullptr, &error));
  REQUIRE(CurrentParallelBackend() == ParallelBackend::kHost);
}

TEST_CASE("many caller threads at once: each call exact, none stuck",
          "[parallel]") {
  HostBackend backend(3);
  constexpr int kCallers = 8, kCalls = 200;
  std::atomic<int> wrong{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&wrong, c] {
      for (int k = 0; k < kCalls; ++k) {
        const int64_t n = 1000 + c * 37 + k;
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        HostApi()->parallel_for(
            0, n, 1,
            [](int64_t b, int64_t e, void* p) {
              auto* h = static_cast<std::vector<std::atomic<int>>*>(p);
              for (int64_t i = b; i < e; ++i) (*h)[i].fetch_add(1);
            },
            &hits);
        for (const auto& h : hits) {
          if (h.load() != 1) wrong.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : callers) t.join();
  REQUIRE(wrong.load() == 0);
  const auto counts = GetParallelCounts();
  // A caller finding the pool busy runs inline: every call is one or other.
  REQUIRE(counts.parallel[static_cast<int>(ParallelBackend::kHost)] +
              counts.inline_calls ==
          kCallers * kCalls);
  REQUIRE(counts.parallel[static_cast<int>(ParallelBackend::kHost)] > 0);
}

// ThreadSanitizer cannot follow a child that starts threads after a
// multi-threaded fork (it kills it): there the fork case is left to the
// ordinary build.
#if defined(__SANITIZE_THREAD__)
#define TF_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TF_UNDER_TSAN 1
#endif
#endif

TEST_CASE("a forked child gets a pool of its own", "[parallel]") {
#ifdef TF_UNDER_TSAN
  WARN("skipped under ThreadSanitizer, which kills a forked child's threads");
  return;
#endif
  HostBackend backend(4);
  Check(0, 100000, 1);  // the parent's workers exist
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    alarm(60);  // a hang ends the child with SIGALRM
    Record r(0, 100000);
    const bool ok =
        HostApi()->parallel_for(0, 100000, 1, &RecordShare, &r) == TF_OK &&
        std::all_of(r.hits.begin(), r.hits.end(),
                    [](const auto& h) { return h.load() == 1; }) &&
        r.shares.size() == 4;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  Check(0, 100000, 1);  // and the parent's pool still serves
}
