#include "loader/validate.h"

#include <fmt/format.h>
#include <string.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>
#include <tuple>

#include "loader/known_values.h"
#include "loader/op_table.h"

namespace torchferry {
namespace {

// Reads a C string of at most `max` bytes; nullopt when no terminator comes
// within max + 1 bytes (too long, or not a string at all). strnlen never
// reads past the terminator or the bound.
std::optional<std::string_view> BoundedString(const char* s, size_t max) {
  if (s == nullptr) return std::nullopt;
  size_t length = ::strnlen(s, max + 1);
  if (length > max) return std::nullopt;
  return std::string_view(s, length);
}

bool IsValidName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

// Shows a found string safely: quoted, printable ASCII kept, the rest escaped.
std::string Quoted(std::string_view s) {
  std::string out = "'";
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '\'') {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  out.push_back('\'');
  return out;
}

constexpr size_t kMaxOpNameLength = 63;

class Validator {
 public:
  Validator(std::string_view file, uint32_t host_major, uint32_t host_minor)
      : file_(file), host_major_(host_major), host_minor_(host_minor) {}

  ValidationResult Run(const tf_plugin* p) {
    // Every field is read once, into this copy, and judged there: what is
    // checked is what the host keeps, even if the plugin writes to its
    // descriptor meanwhile. Strings and kernels are copied as they are read.
    tf_plugin copy{};
    if (!CheckHeader(p, &copy) || !CheckIdentity(&copy) ||
        !CheckKernels(&copy)) {
      result_.ok = false;
      result_.kernels.clear();
      return std::move(result_);
    }
    result_.init = copy.init;
    result_.set_option = copy.set_option;
    result_.ok = true;
    return std::move(result_);
  }

 private:
  template <typename... Args>
  bool Fail(fmt::format_string<Args...> format, Args&&... args) {
    result_.error = fmt::format("{}: ", file_) +
                    fmt::format(format, std::forward<Args>(args)...);
    return false;
  }

  bool CheckHeader(const tf_plugin* descriptor, tf_plugin* p) {
    if (descriptor == nullptr) {
      return Fail(
          "the entry function returned NULL: the plugin declined to "
          "serve this host (ABI {}.{}); run with TORCHFERRY_LOG=debug "
          "to see what it logged",
          host_major_, host_minor_);
    }
    constexpr size_t kVersionEnd =
        offsetof(tf_plugin, abi_version_minor) + sizeof(uint32_t);
    size_t declared;
    std::memcpy(&declared, descriptor, sizeof(declared));
    if (declared < kVersionEnd) {
      return Fail(
          "tf_plugin.struct_size is {}, too small to hold even the ABI "
          "version; expected at least {}; set struct_size = "
          "sizeof(tf_plugin)",
          declared, kPluginV1Size);
    }
    // A larger struct is a newer minor's: its tail is not ours to read.
    std::memcpy(static_cast<void*>(p), descriptor,
                std::min(declared, sizeof(tf_plugin)));
    p->struct_size = declared;
    result_.abi_major = p->abi_version_major;
    result_.abi_minor = p->abi_version_minor;
    if (p->abi_version_major != host_major_) {
      return Fail(
          "ABI major version mismatch: host speaks {}.x, plugin was "
          "built for {}.{}; rebuild the plugin against torchferry ABI "
          "{}",
          host_major_, p->abi_version_major, p->abi_version_minor, host_major_);
    }
    if (p->struct_size < kPluginV1Size) {
      return Fail(
          "tf_plugin.struct_size is {}; expected at least {}, the ABI 1.0 "
          "size; set struct_size = sizeof(tf_plugin) and rebuild against "
          "abi/torchferry.h",
          p->struct_size, kPluginV1Size);
    }
    return true;
  }

  bool CheckIdentity(const tf_plugin* p) {
    std::optional<std::string_view> name =
        BoundedString(p->name, kMaxNameLength);
    if (p->name == nullptr) {
      return Fail(
          "the plugin name is NULL; expected a name of [a-z0-9_], 1 "
          "to {} characters",
          kMaxNameLength);
    }
    if (!name || !IsValidName(*name)) {
      std::string shown =
          name ? Quoted(*name)
               : Quoted(std::string_view(p->name, kMaxNameLength)) +
                     "... (longer than " + std::to_string(kMaxNameLength) +
                     " characters)";
      return Fail(
          "invalid plugin name {}; expected [a-z0-9_], 1 to {} "
          "characters; rename the plugin",
          shown, kMaxNameLength);
    }
    result_.name = std::string(*name);
    if (p->version != nullptr) {
      constexpr size_t kMaxVersion = 255;
      std::optional<std::string_view> version =
          BoundedString(p->version, kMaxVersion);
      result_.version = version ? std::string(*version)
                                : std::string(p->version, kMaxVersion);
    }
    if (p->kind != TF_PLUGIN_NATIVE && p->kind != TF_PLUGIN_FALLBACK) {
      return Fail(
          "plugin '{}' has kind {}; expected TF_PLUGIN_NATIVE ({}) or "
          "TF_PLUGIN_FALLBACK ({})",
          result_.name, p->kind, TF_PLUGIN_NATIVE, TF_PLUGIN_FALLBACK);
    }
    result_.kind = p->kind;
    return true;
  }

  bool CheckKernels(const tf_plugin* p) {
    const size_t count = p->num_kernels;
    if (count == 0) return true;
    if (p->kernels == nullptr) {
      return Fail(
          "plugin '{}' has num_kernels = {} but kernels is NULL; "
          "expected an array of {} tf_kernel",
          result_.name, count, count);
    }
    if (count > kMaxKernels) {
      return Fail("plugin '{}' has num_kernels = {}; expected at most {}",
                  result_.name, count, kMaxKernels);
    }
    const size_t stride = p->kernels[0].struct_size;
    if (stride < kKernelV1Size || stride > kMaxKernelStructSize) {
      return Fail(
          "plugin '{}': kernels[0].struct_size is {}; expected at "
          "least ABI 1.0's {} (and at most {}); set struct_size = "
          "sizeof(tf_kernel) in every kernel",
          result_.name, stride, kKernelV1Size, kMaxKernelStructSize);
    }
    if (stride % alignof(tf_kernel) != 0) {
      return Fail(
          "plugin '{}': kernels[0].struct_size is {}, not a multiple of "
          "tf_kernel's alignment ({}); expected sizeof(tf_kernel) of a "
          "compiler for this platform",
          result_.name, stride, alignof(tf_kernel));
    }
    const auto* base = reinterpret_cast<const unsigned char*>(p->kernels);
    std::set<std::tuple<int, int32_t, uint8_t, uint8_t, uint16_t>> seen;
    for (size_t i = 0; i < count; ++i) {
      // The 1.0 fields, read once; a newer minor's tail is skipped.
      tf_kernel copy{};
      std::memcpy(static_cast<void*>(&copy), base + i * stride,
                  std::min(stride, sizeof(tf_kernel)));
      if (!CheckKernel(i, &copy, stride, &seen)) return false;
    }
    return true;
  }

  template <typename Seen>
  bool CheckKernel(size_t i, const tf_kernel* k, size_t stride, Seen* seen) {
    if (k->struct_size != stride) {
      return Fail(
          "plugin '{}': kernels[{}].struct_size is {} but "
          "kernels[0].struct_size is {}; expected the same size in "
          "every kernel (it is the array's stride)",
          result_.name, i, k->struct_size, stride);
    }
    std::optional<std::string_view> op = BoundedString(k->op, kMaxOpNameLength);
    if (!op) {
      return Fail(
          "plugin '{}': kernels[{}].op is {}; expected an op name "
          "from ABI.md",
          result_.name, i,
          k->op == nullptr ? "NULL" : "not a string of up to 63 bytes");
    }
    const std::string where = fmt::format(
        "plugin '{}': kernels[{}] ({}, {}, {})", result_.name, i, Quoted(*op),
        DeviceName(k->device_type), DtypeName(k->dtype));
    if (k->fn == nullptr) {
      return Fail("{}: fn is NULL; expected a kernel function", where);
    }
    if (!IsKnownDeviceType(k->device_type)) {
      return Fail(
          "{}: unknown device type {}; expected TF_DEVICE_CPU ({}), "
          "TF_DEVICE_CUDA ({}), TF_DEVICE_CUDA_HOST ({}) or "
          "TF_DEVICE_ROCM ({})",
          where, k->device_type, TF_DEVICE_CPU, TF_DEVICE_CUDA,
          TF_DEVICE_CUDA_HOST, TF_DEVICE_ROCM);
    }
    if (!IsKnownDtype(k->dtype)) {
      return Fail(
          "{}: unknown dtype (code {}, bits {}, lanes {}); expected "
          "one of float16/32/64, bfloat16, int8/16/32/64, uint8, bool "
          "with lanes 1",
          where, k->dtype.code, k->dtype.bits, k->dtype.lanes);
    }
    const int op_index = OpIndex(*op);
    if (op_index < 0) {
      if (result_.abi_minor > host_minor_) {
        // A newer minor may add ops; the plugin's other kernels still serve.
        result_.notes.push_back(fmt::format(
            "{}: op {} is unknown to this host (ABI {}.{}, plugin {}.{}); "
            "kernel skipped",
            where, Quoted(*op), host_major_, host_minor_, result_.abi_major,
            result_.abi_minor));
        return true;
      }
      return Fail(
          "{}: unknown op {}; expected one of the ABI {}.{} ops "
          "listed in abi/ABI.md",
          where, Quoted(*op), result_.abi_major, result_.abi_minor);
    }
    auto key = std::make_tuple(op_index, k->device_type, k->dtype.code,
                               k->dtype.bits, k->dtype.lanes);
    if (!seen->insert(key).second) {
      return Fail(
          "{}: duplicate kernel; expected each (op, device, dtype) "
          "once per plugin; remove one of them",
          where);
    }
    result_.kernels.push_back(
        {i, op_index, k->device_type, k->dtype, k->fn, k->kernel_data});
    return true;
  }

  std::string file_;
  uint32_t host_major_;
  uint32_t host_minor_;
  ValidationResult result_;
};

std::string Address(const void* p) {
  return p == nullptr ? "NULL"
                      : fmt::format("{:#x}", reinterpret_cast<uintptr_t>(p));
}

template <typename Fn>
std::string FnAddress(Fn* fn) {
  return fn == nullptr ? "NULL"
                       : fmt::format("{:#x}", reinterpret_cast<uintptr_t>(fn));
}

bool SameDtype(tf_dtype a, tf_dtype b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

}  // namespace

std::string DescriptorChange(const ValidationResult& before,
                             const tf_plugin* descriptor, std::string_view file,
                             uint32_t host_major, uint32_t host_minor) {
  const ValidationResult after =
      ValidateDescriptor(descriptor, file, host_major, host_minor);
  if (!after.ok) {
    // The reason without the "file: " that Fail puts in front.
    const std::string prefix = std::string(file) + ": ";
    const bool labelled = after.error.rfind(prefix, 0) == 0;
    return "it no longer validates: " +
           (labelled ? after.error.substr(prefix.size()) : after.error);
  }
  if (after.name != before.name) {
    return fmt::format("name changed from {} to {}", Quoted(before.name),
                       Quoted(after.name));
  }
  if (after.version != before.version) {
    return fmt::format("version changed from {} to {}", Quoted(before.version),
                       Quoted(after.version));
  }
  if (after.kind != before.kind) {
    return fmt::format("kind changed from {} to {}", before.kind, after.kind);
  }
  if (after.abi_major != before.abi_major ||
      after.abi_minor != before.abi_minor) {
    return fmt::format("ABI version changed from {}.{} to {}.{}",
                       before.abi_major, before.abi_minor, after.abi_major,
                       after.abi_minor);
  }
  if (after.set_option != before.set_option) {
    return fmt::format("set_option changed from {} to {}",
                       FnAddress(before.set_option),
                       FnAddress(after.set_option));
  }
  if (after.kernels.size() != before.kernels.size() ||
      after.notes.size() != before.notes.size()) {
    return fmt::format("the kernels changed from {} to {}",
                       before.kernels.size() + before.notes.size(),
                       after.kernels.size() + after.notes.size());
  }
  for (size_t i = 0; i < after.kernels.size(); ++i) {
    const ValidatedKernel& b = before.kernels[i];
    const ValidatedKernel& a = after.kernels[i];
    const std::string where = fmt::format("kernels[{}]", b.index);
    if (a.index != b.index || a.op_index != b.op_index ||
        a.device_type != b.device_type || !SameDtype(a.dtype, b.dtype)) {
      return fmt::format("{} changed from ({}, {}, {}) to ({}, {}, {})", where,
                         OpName(static_cast<OpId>(b.op_index)),
                         DeviceName(b.device_type), DtypeName(b.dtype),
                         OpName(static_cast<OpId>(a.op_index)),
                         DeviceName(a.device_type), DtypeName(a.dtype));
    }
    if (a.fn != b.fn) {
      return fmt::format("{}.fn changed from {} to {}", where, FnAddress(b.fn),
                         FnAddress(a.fn));
    }
    if (a.kernel_data != b.kernel_data) {
      return fmt::format("{}.kernel_data changed from {} to {}", where,
                         Address(b.kernel_data), Address(a.kernel_data));
    }
  }
  return "";
}

ValidationResult ValidateDescriptor(const tf_plugin* descriptor,
                                    std::string_view file, uint32_t host_major,
                                    uint32_t host_minor) {
  return Validator(file, host_major, host_minor).Run(descriptor);
}

}  // namespace torchferry
