// Generates the plugin's kernel table from compact lists: each op is a struct
// with a name and a `template <typename T> static tf_status Run(const
// tf_call*)`, and KernelsFor<Op>(TypeList<...>{}) expands it into one
// tf_kernel per element type. Each kernel file exposes its part of the table
// as a KernelList; plugin_entry.cc joins them.
#pragma once

#include <array>
#include <cstddef>

#include "abi/torchferry.h"
#include "call.h"
#include "dtype.h"
#include "parallel.h"

namespace torchferry::cpu {

struct KernelList {
  const tf_kernel* items;
  size_t count;
};

// An empty output needs no work, and its data pointer may be NULL, which a
// loop must not even offset; every kernel starts here. A kernel whose
// parallel work the host reported failed (parallel.h) fails the call: its
// output may be partly written.
template <typename Op, typename T>
tf_status SkipEmptyOutputThenRun(const tf_call* call) {
  if (call->num_outputs > 0 && Numel(call->outputs[0]) == 0) return TF_OK;
  const tf_status status = Op::template Run<T>(call);
  const tf_status parallel = TakeParallelFailure();
  if (status != TF_OK || parallel == TF_OK) return status;
  return Fail(call, parallel,
              "%s: the host's parallel_for failed (status %d) after some of "
              "the work may have run; the output may be partly written",
              Op::kName, static_cast<int>(parallel));
}

template <typename Op, typename T>
constexpr tf_kernel KernelFor() {
  return tf_kernel{sizeof(tf_kernel),
                   Op::kName,
                   TF_DEVICE_CPU,
                   DtypeOf<T>(),
                   &SkipEmptyOutputThenRun<Op, T>,
                   nullptr};
}

template <typename Op, typename... Ts>
constexpr std::array<tf_kernel, sizeof...(Ts)> KernelsFor(TypeList<Ts...>) {
  return {{KernelFor<Op, Ts>()...}};
}

template <size_t... Ns>
constexpr std::array<tf_kernel, (Ns + ... + 0)> JoinKernels(
    const std::array<tf_kernel, Ns>&... parts) {
  std::array<tf_kernel, (Ns + ... + 0)> joined{};
  size_t next = 0;
  auto append = [&](const auto& part) {
    for (const tf_kernel& k : part) joined[next++] = k;
  };
  (append(parts), ...);
  return joined;
}

// Each kernel file's share of the table.
KernelList ElementwiseKernels();
KernelList SiluAndMulKernels();
KernelList ReduceKernels();
KernelList MatmulKernels();
KernelList CastKernels();
KernelList StackKernels();
KernelList NoopKernels();
// attention: rotary.cc, attention.cc
KernelList RotaryKernels();
KernelList AttentionKernels();
// embedding and cat
KernelList EmbeddingKernels();
KernelList CatKernels();

}  // namespace torchferry::cpu
