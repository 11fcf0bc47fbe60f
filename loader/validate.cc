#include "loader/validate.h"

#include <fmt/format.h>
#include <string.h>

#include <optional>
#include <set>
#include <tuple>

#include "loader/known_values.h"
#include "loader/op_names.h"

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
    if (!CheckHeader(p) || !CheckIdentity(p) || !CheckKernels(p)) {
      result_.ok = false;
      result_.kernels.clear();
      return std::move(result_);
    }
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

  bool CheckHeader(const tf_plugin* p) {
    if (p == nullptr) {
      return Fail(
          "the entry function returned NULL: the plugin declined to "
          "serve this host (ABI {}.{}); run with TORCHFERRY_LOG=debug "
          "to see what it logged",
          host_major_, host_minor_);
    }
    constexpr size_t kVersionEnd =
        offsetof(tf_plugin, abi_version_minor) + sizeof(uint32_t);
    if (p->struct_size < kVersionEnd) {
      return Fail(
          "tf_plugin.struct_size is {}, too small to hold even the ABI "
          "version; expected at least {}; set struct_size = "
          "sizeof(tf_plugin)",
          p->struct_size, kPluginV1Size);
    }
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
      const auto* k = reinterpret_cast<const tf_kernel*>(base + i * stride);
      if (!CheckKernel(i, k, stride, &seen)) return false;
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
    result_.kernels.push_back({k, op_index});
    return true;
  }

  std::string file_;
  uint32_t host_major_;
  uint32_t host_minor_;
  ValidationResult result_;
};

}  // namespace

ValidationResult ValidateDescriptor(const tf_plugin* descriptor,
                                    std::string_view file, uint32_t host_major,
                                    uint32_t host_minor) {
  return Validator(file, host_major, host_minor).Run(descriptor);
}

}  // namespace torchferry
