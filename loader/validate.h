// Checks a plugin descriptor against ABI.md "Loading" without opening any
// library, so that tests and fuzzers can feed it descriptors built in memory.
// Strings are read at most a bounded number of bytes, and counts and sizes
// are capped, so a garbage descriptor yields an error, not a runaway read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "abi/torchferry.h"
#include "loader/op_schema.h"

namespace torchferry {

// The size each growing struct had in ABI 1.0: the end of its last 1.0 field,
// so these stay right when later minors append fields.
inline constexpr size_t kPluginV1Size = TF_PLUGIN_V1_0_SIZE;
inline constexpr size_t kPluginV11Size = TF_PLUGIN_V1_1_SIZE;
inline constexpr size_t kKernelV1Size = TF_KERNEL_V1_0_SIZE;
inline constexpr size_t kHostApiV1Size = TF_HOST_API_V1_0_SIZE;
inline constexpr size_t kCallV1Size = TF_CALL_V1_0_SIZE;
inline constexpr size_t kOpDeclV11Size = TF_OP_DECL_V1_1_SIZE;

// Sanity caps that no real plugin comes near.
inline constexpr size_t kMaxKernels = 1u << 16;
inline constexpr size_t kMaxKernelStructSize = 4096;
inline constexpr size_t kMaxNameLength = 63;
inline constexpr size_t kMaxDeclaredOps = TF_MAX_DECLARED_OPS;
inline constexpr size_t kMaxDocLength = 1023;

// A kernel left out because the host's ABI minor lacks its op or dtype.
struct SkippedKernel {
  std::string kernel;  // "embedding (cpu, float32)"
  std::string reason;  // "op 'embedding' is unknown to this host (ABI 1.1, ..."
};

// What the host keeps of one kernel: copied out of the descriptor when it
// is validated, so that nothing the plugin writes there later (ABI.md says
// it must not) reaches a call.
struct ValidatedKernel {
  size_t index;  // in the descriptor's kernel array
  int op_index;  // into kOpTable, or -1 for an op the plugin declares
  int declared;  // into ValidationResult::ops, or -1 for a built-in op
  int32_t device_type;
  tf_dtype dtype;
  tf_kernel_fn fn;  // never NULL
  void* kernel_data;
};

// An op the plugin declares (ABI 1.1), parsed and checked.
struct ValidatedOp {
  size_t index;  // in the descriptor's op array
  OpSchema schema;
  std::string spelling;  // schema.ToString(): equal spellings, same op
  std::string doc;
  tf_infer_fn infer;  // never NULL
};

struct ValidationResult {
  bool ok = false;
  // When !ok: why, naming the file, what was expected and what was found.
  std::string error;
  std::string name;
  std::string version;
  int32_t kind = TF_PLUGIN_NATIVE;
  uint32_t abi_major = 0;
  uint32_t abi_minor = 0;
  // Copied from the descriptor as it was validated; NULL when absent.
  tf_status (*init)(void* error_sink) = nullptr;
  tf_status (*set_option)(const char* key, const char* value,
                          void* error_sink) = nullptr;
  // The kernels to register, in the descriptor's order.
  std::vector<ValidatedKernel> kernels;
  // The ops it declares, in the descriptor's order.
  std::vector<ValidatedOp> ops;
  // Kernels left out without rejecting the plugin (an op or dtype this host
  // does not know yet, from a plugin of a newer minor): one line each, for
  // the log.
  std::vector<std::string> notes;
  // The same kernels, for `info`.
  std::vector<SkippedKernel> skipped_kernels;
};

// The op a validated kernel serves: a built-in op's name or a declared op's
// "namespace::name".
std::string KernelOpName(const ValidationResult& v, const ValidatedKernel& k);

// `file` labels the messages (the file name; tests pass any label). The
// descriptor may be NULL. Never throws except std::bad_alloc.
ValidationResult ValidateDescriptor(const tf_plugin* descriptor,
                                    std::string_view file,
                                    uint32_t host_major = TF_ABI_VERSION_MAJOR,
                                    uint32_t host_minor = TF_ABI_VERSION_MINOR);

// Whether the descriptor still says what `before` recorded, read after the
// plugin's init has run (the descriptor must not change while the library
// is loaded: ABI.md "Loading"). "" when it does; otherwise what changed,
// e.g. "kernels[0].fn changed from 0x7f.. to NULL", so that the plugin can be
// refused with that reason. Validates the descriptor again on the way, with
// the same host version `before` was made for.
std::string DescriptorChange(const ValidationResult& before,
                             const tf_plugin* descriptor, std::string_view file,
                             uint32_t host_major = TF_ABI_VERSION_MAJOR,
                             uint32_t host_minor = TF_ABI_VERSION_MINOR);

}  // namespace torchferry
