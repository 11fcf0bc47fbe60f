// The host's own pool (loader/host_pool.cc) against oneTBB, the library the
// pool could have been: what a plugin's parallel_for pays where torch has no
// pool of its own to lend (torch < 2.10) and in a forked child. Built and run
// by bench/pool_compare.sh; not part of the package.
//
// Four measures, each the median of many regions on `threads` threads:
//   empty      a region of `threads` shares that do nothing, back to back
//   after_idle the same region after 2 ms asleep (workers gone to sleep)
//   add64k     a float32 add of 65536 elements (the smallest call the CPU
//              plugin splits, plugins/cpu/parallel.h), against serial
//   add16m     the same add of 16M elements (memory-bound)
// and whether a child made by fork() after the parent used the pool can run
// a region (within 5 s).
#include <sys/wait.h>
#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>
#include <vector>

#include "loader/host_pool.h"

namespace {

using Clock = std::chrono::steady_clock;
using Region = std::function<void(int64_t, int64_t,
                                  void (*)(int64_t, int64_t, void*), void*)>;

double MedianNs(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename Fn>
double TimeNs(int reps, Fn fn) {
  std::vector<double> samples;
  samples.reserve(reps);
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    fn();
    samples.push_back(
        std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
  }
  return MedianNs(samples);
}

struct Add {
  const float* x;
  const float* y;
  float* z;
};

void AddRange(int64_t b, int64_t e, void* ctx) {
  const Add& a = *static_cast<const Add*>(ctx);
  for (int64_t i = b; i < e; ++i) a.z[i] = a.x[i] + a.y[i];
}

void Nothing(int64_t, int64_t, void*) {}

void Report(const char* name, const Region& region, int threads) {
  const int64_t big = int64_t{1} << 24, small = int64_t{1} << 16;
  std::vector<float> x(big, 1.0f), y(big, 2.0f), z(big);
  Add add{x.data(), y.data(), z.data()};
  const double empty =
      TimeNs(20000, [&] { region(0, threads, &Nothing, nullptr); });
  std::vector<double> after;
  for (int i = 0; i < 300; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const auto t0 = Clock::now();
    region(0, threads, &Nothing, nullptr);
    after.push_back(
        std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
  }
  const double add64k =
      TimeNs(20000, [&] { region(0, small, &AddRange, &add); });
  const double serial64k = TimeNs(20000, [&] { AddRange(0, small, &add); });
  const double add16m = TimeNs(40, [&] { region(0, big, &AddRange, &add); });
  const double serial16m = TimeNs(40, [&] { AddRange(0, big, &add); });
  std::printf(
      "%-6s threads %d: empty %.0f ns, after 2 ms idle %.0f ns, add 64k %.0f "
      "ns "
      "(serial %.0f), add 16M %.2f ms (serial %.2f)\n",
      name, threads, empty, MedianNs(after), add64k, serial64k, add16m / 1e6,
      serial16m / 1e6);
}

bool ChildRuns(const Region& region, int threads) {
  region(0, threads, &Nothing, nullptr);  // the parent's workers exist
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(5);  // a hang ends the child with SIGALRM
    std::vector<float> x(1 << 16, 1.0f), y(1 << 16, 2.0f), z(1 << 16);
    Add add{x.data(), y.data(), z.data()};
    region(0, 1 << 16, &AddRange, &add);
    _exit(z[(1 << 16) - 1] == 3.0f ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const Region host = [threads](int64_t b, int64_t e,
                                void (*fn)(int64_t, int64_t, void*),
                                void* ctx) {
    if (!torchferry::HostPoolRun(b, e, threads, fn, ctx)) fn(b, e, ctx);
  };
  tbb::task_arena arena(threads);
  const Region tbb_region =
      [&arena, threads](int64_t b, int64_t e,
                        void (*fn)(int64_t, int64_t, void*), void* ctx) {
        // Shares as the host pool makes them: `threads` contiguous ranges.
        arena.execute([&] {
          tbb::parallel_for(
              tbb::blocked_range<int64_t>(0, threads, 1),
              [&](const tbb::blocked_range<int64_t>& r) {
                for (int64_t i = r.begin(); i < r.end(); ++i) {
                  int64_t sb = 0, se = 0;
                  torchferry::ShareBounds(b, e, threads,
                                          static_cast<int32_t>(i), &sb, &se);
                  if (sb < se) fn(sb, se, ctx);
                }
              },
              tbb::simple_partitioner());
        });
      };
  Report("host", host, threads);
  Report("oneTBB", tbb_region, threads);
  std::printf(
      "fork after use: host %s, oneTBB %s\n",
      ChildRuns(host, threads) ? "child ran" : "child FAILED or hung",
      ChildRuns(tbb_region, threads) ? "child ran" : "child FAILED or hung");
  return 0;
}
