#include "loader/validate.h"

#include <fmt/format.h>
#include <string.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

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

// The length of the well-formed UTF-8 that `s` starts with, by Python's
// rules (no overlong forms, no surrogates, nothing past U+10FFFF): the host
// hands a declared op's doc to Python, which refuses anything else.
size_t Utf8ValidPrefix(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n;
    unsigned char lo = 0x80, hi = 0xbf;  // the second byte's range
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) {
      n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
      n = 3;
      if (c == 0xe0) lo = 0xa0;  // overlong
      if (c == 0xed) hi = 0x9f;  // surrogates
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 4;
      if (c == 0xf0) lo = 0x90;  // overlong
      if (c == 0xf4) hi = 0x8f;  // past U+10FFFF
    } else {
      return i;
    }
    if (i + n > s.size()) return i;
    for (size_t k = 1; k < n; ++k) {
      const unsigned char t = static_cast<unsigned char>(s[i + k]);
      if (k == 1 ? (t < lo || t > hi) : (t < 0x80 || t > 0xbf)) return i;
    }
    i += n;
  }
  return i;
}

// `text` cut to at most `max` bytes without splitting a UTF-8 character:
// the bytes of a character that the cut would split go with it.
std::string_view CutAtCharacter(std::string_view text, size_t max) {
  if (text.size() <= max) return text;
  size_t end = max;
  // Back over continuation bytes (at most three) to the character's start.
  for (size_t k = 0; k < 3 && end > 0 &&
                     (static_cast<unsigned char>(text[end]) & 0xc0) == 0x80;
       ++k) {
    --end;
  }
  return text.substr(0, end);
}

class Validator {
 public:
  Validator(std::string_view file, uint32_t host_major, uint32_t host_minor)
      : file_(file), host_major_(host_major), host_minor_(host_minor) {}

  ValidationResult Run(const tf_plugin* p) {
    // Every field is read once, into this copy, and judged there: what is
    // checked is what the host keeps, even if the plugin writes to its
    // descriptor meanwhile. Strings and kernels are copied as they are read.
    tf_plugin copy{};
    if (!CheckHeader(p, &copy) || !CheckIdentity(&copy) || !CheckOps(&copy) ||
        !CheckKernels(&copy)) {
      result_.ok = false;
      result_.kernels.clear();
      result_.ops.clear();
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
    if (p->abi_version_minor >= 1 && p->struct_size < kPluginV11Size) {
      return Fail(
          "tf_plugin.struct_size is {} but the plugin says ABI {}.{}, whose "
          "tf_plugin is at least {} bytes; set struct_size = "
          "sizeof(tf_plugin) and rebuild against abi/torchferry.h",
          p->struct_size, p->abi_version_major, p->abi_version_minor,
          kPluginV11Size);
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

  // ABI 1.1 declarations. Kernels are checked after, so that they may name
  // the ops declared here.
  bool CheckOps(const tf_plugin* p) {
    // A 1.0 host reads no declarations: its tf_plugin ends before them.
    if (p->abi_version_minor < 1 || host_minor_ < 1 || p->num_ops == 0) {
      return true;
    }
    const size_t count = p->num_ops;
    if (p->ops == nullptr) {
      return Fail(
          "plugin '{}' has num_ops = {} but ops is NULL; expected an array "
          "of {} tf_op_decl",
          result_.name, count, count);
    }
    if (count > kMaxDeclaredOps) {
      return Fail(
          "plugin '{}' has num_ops = {}; expected at most {} "
          "(TF_MAX_DECLARED_OPS)",
          result_.name, count, kMaxDeclaredOps);
    }
    const size_t stride = p->ops[0].struct_size;
    if (stride < kOpDeclV11Size || stride > kMaxKernelStructSize ||
        stride % alignof(tf_op_decl) != 0) {
      return Fail(
          "plugin '{}': ops[0].struct_size is {}; expected at least ABI "
          "1.1's {} (at most {}, a multiple of {}); set struct_size = "
          "sizeof(tf_op_decl) in every declaration",
          result_.name, stride, kOpDeclV11Size, kMaxKernelStructSize,
          alignof(tf_op_decl));
    }
    const auto* base = reinterpret_cast<const unsigned char*>(p->ops);
    for (size_t i = 0; i < count; ++i) {
      tf_op_decl copy{};
      std::memcpy(static_cast<void*>(&copy), base + i * stride,
                  std::min(stride, sizeof(tf_op_decl)));
      if (!CheckOp(i, copy, stride)) return false;
    }
    return true;
  }

  bool CheckOp(size_t i, const tf_op_decl& d, size_t stride) {
    if (d.struct_size != stride) {
      return Fail(
          "plugin '{}': ops[{}].struct_size is {} but ops[0].struct_size is "
          "{}; expected the same size in every declaration (it is the "
          "array's stride)",
          result_.name, i, d.struct_size, stride);
    }
    constexpr size_t kMaxQualified = 2 * kMaxIdentifierLength + 2;
    std::optional<std::string_view> name = BoundedString(d.name, kMaxQualified);
    if (!name) {
      return Fail(
          "plugin '{}': ops[{}].name is {}; expected \"namespace::name\"",
          result_.name, i,
          d.name == nullptr ? "NULL" : "not a string of up to 128 bytes");
    }
    const std::string where = fmt::format("plugin '{}': ops[{}] ({})",
                                          result_.name, i, Quoted(*name));
    const size_t colons = name->find("::");
    auto ident = [](std::string_view part) {
      if (part.empty() || part.size() > kMaxIdentifierLength ||
          (part[0] >= '0' && part[0] <= '9')) {
        return false;
      }
      for (char c : part) {
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
          return false;
        }
      }
      return true;
    };
    if (colons == std::string_view::npos || !ident(name->substr(0, colons)) ||
        !ident(name->substr(colons + 2))) {
      return Fail(
          "{}: expected a name \"namespace::name\", each part "
          "[a-z_][a-z0-9_]*, 1 to {} characters",
          where, kMaxIdentifierLength);
    }
    const std::string_view ns = name->substr(0, colons);
    const std::string_view op_name = name->substr(colons + 2);
    for (const auto& [what, part] :
         {std::pair{"namespace", ns}, std::pair{"op name", op_name}}) {
      const std::string problem = PythonNameProblem(part);
      if (!problem.empty()) {
        return Fail(
            "{}: the {} {} {}; expected a name that Python reaches as "
            "torchferry.ops.<namespace>.<name>",
            where, what, Quoted(part), problem);
      }
    }
    if (OpIndex(ns) >= 0 || ns == "schemas") {
      return Fail(
          "{}: the namespace {} is taken by torchferry.ops.{}; choose "
          "another (the plugin's name is a good one)",
          where, Quoted(ns), ns);
    }
    for (const ValidatedOp& other : result_.ops) {
      if (other.schema.qualified_name() == *name) {
        return Fail("{}: declared twice (also ops[{}]); expected each op once",
                    where, other.index);
      }
    }
    std::optional<std::string_view> schema =
        BoundedString(d.schema, kMaxSchemaLength);
    if (!schema) {
      return Fail("{}: schema is {}; expected torch's schema language", where,
                  d.schema == nullptr
                      ? "NULL"
                      : fmt::format("longer than {} bytes", kMaxSchemaLength));
    }
    ValidatedOp op{i, {}, {}, {}, d.infer};
    std::string error;
    if (!ParseSchema(*schema, &op.schema, &error)) {
      return Fail("{}: the schema {} is malformed {}", where, Quoted(*schema),
                  error);
    }
    if (op.schema.qualified_name() != *name) {
      return Fail(
          "{}: the schema declares {}; expected the declaration's "
          "name",
          where, Quoted(op.schema.qualified_name()));
    }
    // What this host's preparation of a declared op needs.
    const std::vector<SchemaArg>& args = op.schema.args;
    if (args.empty() || args[0].type != ArgType::kTensor || args[0].optional ||
        args[0].written) {
      return Fail(
          "{}: the first argument must be a Tensor (it keys the kernel "
          "lookup by device and dtype)",
          where);
    }
    size_t num_outs = 0, num_in_place = 0;
    for (const SchemaArg& a : args) {
      if (a.type == ArgType::kTensorList) {
        return Fail(
            "{}: argument '{}' is a Tensor[]; declared ops take "
            "tensors one by one in ABI 1.1",
            where, a.name);
      }
      num_outs += a.is_out();
      num_in_place += a.in_place();
      if (a.is_out() && a.name != "out") {
        return Fail(
            "{}: the output '{}' after '*' must be called 'out' (Python "
            "passes it as out=)",
            where, a.name);
      }
    }
    const size_t num_returns = op.schema.returns.size();
    if (num_outs > 0 && num_returns > 1) {
      return Fail(
          "{}: returns {} tensors and declares 'out'; an op with several "
          "returns takes them as out=(...) and declares no 'out'",
          where, num_returns);
    }
    if (num_returns + num_in_place > kMaxOpOutputs) {
      return Fail(
          "{}: writes {} tensors ({} returned, {} in place); expected at "
          "most {}",
          where, num_returns + num_in_place, num_returns, num_in_place,
          kMaxOpOutputs);
    }
    if (d.infer == nullptr) {
      return Fail(
          "{}: infer is NULL; expected the function that gives the "
          "output's shape and dtype",
          where);
    }
    if (d.doc != nullptr) {
      // One byte past the limit tells a long doc from one that just fits,
      // and shows whether the limit falls inside a character.
      std::optional<std::string_view> bounded =
          BoundedString(d.doc, kMaxDocLength);
      const std::string_view doc =
          bounded ? *bounded
                  : CutAtCharacter(std::string_view(d.doc, kMaxDocLength + 1),
                                   kMaxDocLength);
      const size_t valid = Utf8ValidPrefix(doc);
      if (valid != doc.size()) {
        return Fail(
            "{}: doc is not UTF-8 (byte {} is 0x{:02x}); expected UTF-8 "
            "text",
            where, valid, static_cast<unsigned char>(doc[valid]));
      }
      op.doc = std::string(doc);
    }
    op.spelling = op.schema.ToString();
    result_.ops.push_back(std::move(op));
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

  // Leaves out a kernel of a newer plugin for something this host's minor
  // lacks, with a note naming it and both versions. `since` is the minor
  // that brought it when today's tables know it, else -1.
  bool SkipNewer(const std::string& where, const std::string& kernel,
                 std::string_view what, const std::string& name,
                 int64_t since) {
    const std::string came =
        since < 0 ? std::string()
                  : fmt::format("; {} came in ABI {}.{}",
                                what == "declared op" ? "declared ops" : "it",
                                host_major_, since);
    std::string reason = fmt::format(
        "{} {} is unknown to this host (ABI {}.{}, plugin {}.{}{})", what, name,
        host_major_, host_minor_, result_.abi_major, result_.abi_minor, came);
    result_.notes.push_back(
        fmt::format("{}: {}; kernel skipped", where, reason));
    result_.skipped_kernels.push_back({kernel, std::move(reason)});
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
    const std::string kernel = fmt::format(
        "{} ({}, {})", *op, DeviceName(k->device_type), DtypeName(k->dtype));
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
    const DtypeIndex dtype_index =
        DtypeFromDlpack(k->dtype.code, k->dtype.bits, k->dtype.lanes);
    if (!DtypeKnownAtMinor(dtype_index, host_minor_)) {
      // A newer minor may add dtypes; the plugin's other kernels still serve.
      if (k->dtype.lanes == 1 && result_.abi_minor > host_minor_) {
        return SkipNewer(where, kernel, "dtype", DtypeName(k->dtype),
                         dtype_index == kNoDtype
                             ? -1
                             : static_cast<int64_t>(Dtype(dtype_index).minor));
      }
      return Fail(
          "{}: unknown dtype (code {}, bits {}, lanes {}); expected "
          "one of the dtypes of ABI {}.{} (float16/32/64, bfloat16, "
          "int8/16/32/64, uint8, bool{}) with lanes 1",
          where, k->dtype.code, k->dtype.bits, k->dtype.lanes, host_major_,
          host_minor_, host_minor_ >= 2 ? ", uint16/32/64" : "");
    }
    const int op_index = OpIndex(*op);
    int declared = -1;
    for (const ValidatedOp& d : result_.ops) {
      if (d.schema.qualified_name() == *op)
        declared = static_cast<int>(d.index);
    }
    if (declared < 0 && !OpKnownAtMinor(op_index, host_minor_)) {
      // A newer minor may add ops (declared ops came in 1.1); the plugin's
      // other kernels still serve. A plugin of this host's minor or older
      // that names an op the host lacks has a typo.
      if (result_.abi_minor > host_minor_) {
        const bool namespaced = op->find("::") != std::string_view::npos;
        return SkipNewer(
            where, kernel, namespaced ? "declared op" : "op", Quoted(*op),
            namespaced      ? 1
            : op_index >= 0 ? static_cast<int64_t>(kOpTable[op_index].minor)
                            : -1);
      }
      if (op->find("::") != std::string_view::npos) {
        return Fail(
            "{}: op {} is not declared by this plugin; expected a kernel for "
            "a built-in op or for one of the plugin's tf_plugin.ops",
            where, Quoted(*op));
      }
      if (op_index >= 0) {
        return Fail(
            "{}: op {} came in ABI {}.{}, after this host's {}.{} and the "
            "plugin's {}.{}; expected one of the ABI {}.{} ops listed in "
            "abi/ABI.md, or a plugin that says {}.{}",
            where, Quoted(*op), host_major_, kOpTable[op_index].minor,
            host_major_, host_minor_, result_.abi_major, result_.abi_minor,
            host_major_, host_minor_, host_major_, kOpTable[op_index].minor);
      }
      return Fail(
          "{}: unknown op {}; expected one of the ABI {}.{} ops "
          "listed in abi/ABI.md",
          where, Quoted(*op), result_.abi_major, result_.abi_minor);
    }
    const int op_key =
        declared >= 0 ? static_cast<int>(kNumOps) + declared : op_index;
    auto key = std::make_tuple(op_key, k->device_type, k->dtype.code,
                               k->dtype.bits, k->dtype.lanes);
    if (!seen->insert(key).second) {
      return Fail(
          "{}: duplicate kernel; expected each (op, device, dtype) "
          "once per plugin; remove one of them",
          where);
    }
    result_.kernels.push_back({i, declared >= 0 ? -1 : op_index, declared,
                               k->device_type, k->dtype, k->fn,
                               k->kernel_data});
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

std::string KernelOpName(const ValidationResult& v, const ValidatedKernel& k) {
  if (k.declared >= 0) {
    for (const ValidatedOp& op : v.ops) {
      if (static_cast<int>(op.index) == k.declared) {
        return op.schema.qualified_name();
      }
    }
  }
  return k.op_index >= 0 ? std::string(OpName(static_cast<OpId>(k.op_index)))
                         : "?";
}

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
  if (after.ops.size() != before.ops.size()) {
    return fmt::format("the declared ops changed from {} to {}",
                       before.ops.size(), after.ops.size());
  }
  for (size_t i = 0; i < after.ops.size(); ++i) {
    const ValidatedOp& b = before.ops[i];
    const ValidatedOp& a = after.ops[i];
    if (a.spelling != b.spelling) {
      return fmt::format("ops[{}] changed from {} to {}", b.index,
                         Quoted(b.spelling), Quoted(a.spelling));
    }
    if (a.infer != b.infer) {
      return fmt::format("ops[{}].infer changed from {} to {}", b.index,
                         FnAddress(b.infer), FnAddress(a.infer));
    }
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
        a.declared != b.declared || a.device_type != b.device_type ||
        !SameDtype(a.dtype, b.dtype)) {
      return fmt::format("{} changed from ({}, {}, {}) to ({}, {}, {})", where,
                         KernelOpName(before, b), DeviceName(b.device_type),
                         DtypeName(b.dtype), KernelOpName(after, a),
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
