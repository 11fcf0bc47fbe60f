// libFuzzer target: bytes -> a plugin descriptor in memory -> the loader's
// ValidateDescriptor (loader/validate.cc), exactly as a plugin's entry
// function would hand it over, minus the dlopen.
//
// Every block is allocated with exactly the size the descriptor declares for
// it (a tf_plugin of `struct_size` bytes, a kernel array of count * stride
// bytes, strings of their length plus the NUL), so AddressSanitizer reports
// any read the declared sizes do not allow. Lies the validator cannot detect
// (an array shorter than a count it accepts) are never generated.
//
// After validation, what it accepted must hold up: a valid name, a known
// kind, the version byte for byte (UTF-8 or not), and for every kernel it
// returns a function, a known op, device and dtype, and no key twice. What
// it refused must come with a message that names the file. Every message is
// printable ASCII, whatever bytes the descriptor's text held.
//
// ABI 1.1 op declarations come with names, argument names and docs of any
// bytes: an accepted declaration names an identifier Python can reach
// (torchferry.ops.<namespace>.<name>: no keyword, no dunder name), and its
// doc is well-formed UTF-8 of at most kMaxDocLength bytes, a prefix of the
// plugin's (cut only before a character the limit would split).
//
// Then, as a plugin's init may, the rest of the input rewrites the accepted
// descriptor in place (kernel functions, data, ops, devices, dtypes, the
// count, the name, the version, the kind, the minor, set_option): what the
// validator returned must not change with it (the host keeps copies), and
// DescriptorChange must report a change exactly when a fresh validation of
// the rewritten descriptor differs from the first or fails. Anything else
// traps.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "abi/torchferry.h"
#include "byte_reader.h"
#include "loader/known_values.h"
#include "loader/op_table.h"
#include "loader/validate.h"

using torchferry::fuzz::ByteReader;

namespace {

tf_status DummyKernel(const tf_call*) { return TF_OK; }
tf_status OtherKernel(const tf_call*) { return TF_ERROR_INTERNAL; }
tf_status DummySetOption(const char*, const char*, void*) { return TF_OK; }
int kernel_data_a, kernel_data_b;

constexpr tf_dtype kKnownDtypes[] = {
    {TF_DTYPE_FLOAT, 32, 1},  {TF_DTYPE_FLOAT, 64, 1}, {TF_DTYPE_FLOAT, 16, 1},
    {TF_DTYPE_BFLOAT, 16, 1}, {TF_DTYPE_INT, 8, 1},    {TF_DTYPE_INT, 16, 1},
    {TF_DTYPE_INT, 32, 1},    {TF_DTYPE_INT, 64, 1},   {TF_DTYPE_UINT, 8, 1},
    {TF_DTYPE_BOOL, 8, 1},    {TF_DTYPE_UINT, 16, 1},  {TF_DTYPE_UINT, 32, 1},
    {TF_DTYPE_UINT, 64, 1},
};
constexpr uint32_t kNumKnownDtypes = std::size(kKnownDtypes);

// Owns every block of one descriptor; each block is exactly its size.
struct Arena {
  std::vector<std::unique_ptr<unsigned char[]>> blocks;
  unsigned char* Alloc(size_t size) {
    blocks.emplace_back(new unsigned char[size]);
    std::memset(blocks.back().get(), 0xa5, size);
    return blocks.back().get();
  }
  const char* String(const std::string& s) {
    auto* p = reinterpret_cast<char*>(Alloc(s.size() + 1));
    std::memcpy(p, s.data(), s.size());
    p[s.size()] = '\0';
    return p;
  }
};

// Writes `value` at `offset` of a block of `size` bytes when it fits.
template <typename T>
void Put(unsigned char* block, size_t size, size_t offset, const T& value) {
  if (offset + sizeof(T) <= size)
    std::memcpy(block + offset, &value, sizeof(T));
}

std::string NameBytes(ByteReader& in) {
  const uint32_t how = in.Pick(4);
  const size_t length = in.U8() % 80;
  std::string s = in.Bytes(length);
  if (how == 0) return "cpu";
  if (how == 1) {  // only valid characters, any length up to 79
    static const char kValid[] = "abcdefghijklmnopqrstuvwxyz0123456789_";
    for (char& c : s) c = kValid[static_cast<unsigned char>(c) % 37];
  }
  for (char& c : s) {
    if (c == '\0') c = 'x';  // the NUL we add is the one terminator
  }
  return s;
}

const char* OpName(ByteReader& in, Arena& arena) {
  switch (in.Pick(8)) {
    case 0:
      return nullptr;
    case 1: {
      std::string s = in.Bytes(in.U8() % 100);
      for (char& c : s) {
        if (c == '\0') c = 'y';
      }
      return arena.String(s);
    }
    case 2:
      return "fz::f";  // an op the plugin may declare (DeclName)
    default: {
      const auto op =
          static_cast<torchferry::OpId>(in.U8() % torchferry::kNumOps);
      return arena.String(std::string(torchferry::OpName(op)));
    }
  }
}

tf_status DummyInfer(const tf_call*, tf_tensor_spec*, int32_t) { return TF_OK; }

// Bytes without NUL (a C string would end there).
std::string TextBytes(ByteReader& in, size_t length, char nul_as) {
  std::string s = in.Bytes(length);
  for (char& c : s) {
    if (c == '\0') c = nul_as;
  }
  return s;
}

// A declared op's name: good, one Python cannot reach, or any bytes.
std::string DeclName(ByteReader& in) {
  switch (in.Pick(8)) {
    case 0:
      return "fz::f";
    case 1:
      return "lambda::f";
    case 2:
      return "fz::__class__";
    case 3:
      return "__all__::g";
    case 4:
      return "__name__::f";
    case 5:
      return "fz::import";
    case 6: {
      const std::string ns = TextBytes(in, in.U8() % 24, 'n');
      return ns + "::" + TextBytes(in, in.U8() % 24, 'n');
    }
    default:
      return "fz::" + TextBytes(in, in.U8() % 24, 'n');
  }
}

std::string ArgName(ByteReader& in) {
  switch (in.Pick(4)) {
    case 0:
      return "scale";
    case 1:
      return "lambda";
    case 2:
      return "__debug__";
    default:
      return TextBytes(in, in.U8() % 16, 'a');
  }
}

// A doc: short text, any bytes, or one that runs past kMaxDocLength with
// any bytes (a character, or a broken one) across the limit.
std::string DocBytes(ByteReader& in) {
  switch (in.Pick(3)) {
    case 0:
      return "a doc";
    case 1:
      return TextBytes(in, in.U8(), 'd');
    default: {
      const std::string head(torchferry::kMaxDocLength - 4 + in.Pick(8), 'a');
      return head + TextBytes(in, 1 + in.Pick(6), 'd');
    }
  }
}

bool IsPythonKeyword(const std::string& name) {
  static const char* const kKeywords[] = {
      "and",      "as",       "assert", "async", "await",  "break",  "class",
      "continue", "def",      "del",    "elif",  "else",   "except", "finally",
      "for",      "from",     "global", "if",    "import", "in",     "is",
      "lambda",   "nonlocal", "not",    "or",    "pass",   "raise",  "return",
      "try",      "while",    "with",   "yield"};
  for (const char* keyword : kKeywords) {
    if (name == keyword) return true;
  }
  return false;
}

// An identifier Python code can write as an attribute of any object.
bool ReachableName(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
      return false;
    }
  }
  const bool dunder = name.size() >= 2 && name.compare(0, 2, "__") == 0 &&
                      name.compare(name.size() - 2, 2, "__") == 0;
  return !dunder && !IsPythonKeyword(name);
}

// Decodes `s` as UTF-8 the way Python's strict decoder does.
bool DecodesAsUtf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80         ? 1
               : (c >> 5) == 6  ? 2
               : (c >> 4) == 14 ? 3
               : (c >> 3) == 30 ? 4
                                : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? c : c & (0x7f >> n);
    for (size_t k = 1; k < n; ++k) {
      const unsigned char t = static_cast<unsigned char>(s[i + k]);
      if ((t & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (t & 0x3f);
    }
    static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
      return false;
    }
    i += n;
  }
  return true;
}

[[noreturn]] void Broken(const char* what) {
  std::fprintf(stderr, "fuzz_descriptor: %s\n", what);
  std::abort();
}

bool PrintableAscii(const std::string& s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

// What an accepted result must hold, checked again after the descriptor was
// rewritten: a result that read through to the descriptor would change.
void CheckAccepted(const torchferry::ValidationResult& r, size_t count,
                   uint32_t host_minor) {
  if (r.name.empty() || r.name.size() > torchferry::kMaxNameLength) {
    Broken("accepted a name of a bad length");
  }
  for (char c : r.name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
      Broken("accepted a name with a character outside [a-z0-9_]");
    }
  }
  if (r.kind != TF_PLUGIN_NATIVE && r.kind != TF_PLUGIN_FALLBACK) {
    Broken("accepted an unknown kind");
  }
  if (r.abi_major != TF_ABI_VERSION_MAJOR) Broken("accepted another major");
  if (r.kernels.size() + r.notes.size() != count) {
    Broken("kernels plus notes do not add up to num_kernels");
  }
  if (!r.notes.empty() && r.abi_minor <= host_minor) {
    Broken("skipped an unknown op of a plugin that is not newer");
  }
  for (const std::string& note : r.notes) {
    if (!PrintableAscii(note)) Broken("a note that is not printable ASCII");
  }
  std::set<std::tuple<int, int32_t, uint8_t, uint8_t>> keys;
  for (const torchferry::ValidatedKernel& k : r.kernels) {
    if (k.fn == nullptr) Broken("accepted a NULL kernel function");
    if (k.index >= count) Broken("a kernel index past num_kernels");
    // A kernel serves a built-in op (an index into the op table) or one of
    // the plugin's own declarations (ABI 1.1), never both.
    if (k.declared >= 0) {
      if (k.op_index != -1) Broken("a declared op's kernel with an op index");
      if (static_cast<size_t>(k.declared) >= r.ops.size()) {
        Broken("a kernel for a declared op past the plugin's ops");
      }
    } else if (k.declared != -1 || k.op_index < 0 ||
               k.op_index >= static_cast<int>(torchferry::kNumOps)) {
      Broken("accepted an op index outside the op table");
    }
    if (!torchferry::IsKnownDeviceType(k.device_type) ||
        k.device_type == TF_DEVICE_META) {
      Broken("accepted an unknown device type");
    }
    if (!torchferry::IsKnownDtype(k.dtype) || k.dtype.lanes != 1) {
      Broken("accepted an unknown dtype");
    }
    const int op_key = k.declared >= 0
                           ? static_cast<int>(torchferry::kNumOps) + k.declared
                           : k.op_index;
    if (!keys.insert({op_key, k.device_type, k.dtype.code, k.dtype.bits})
             .second) {
      Broken("accepted the same (op, device, dtype) twice");
    }
  }
}

bool SameKernels(const torchferry::ValidationResult& a,
                 const torchferry::ValidationResult& b) {
  if (a.kernels.size() != b.kernels.size() ||
      a.notes.size() != b.notes.size()) {
    return false;
  }
  for (size_t i = 0; i < a.kernels.size(); ++i) {
    const torchferry::ValidatedKernel& x = a.kernels[i];
    const torchferry::ValidatedKernel& y = b.kernels[i];
    if (x.index != y.index || x.op_index != y.op_index ||
        x.declared != y.declared || x.device_type != y.device_type ||
        x.dtype.code != y.dtype.code || x.dtype.bits != y.dtype.bits ||
        x.dtype.lanes != y.dtype.lanes || x.fn != y.fn ||
        x.kernel_data != y.kernel_data) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ByteReader in(data, size);
  Arena arena;
  const uint32_t host_minor = in.Pick(3);

  // tf_plugin, allocated at its declared size.
  size_t declared;
  switch (in.Pick(8)) {
    case 0:
      declared = 0;
      break;
    case 1:
      declared = 8;
      break;
    case 2:
      declared = 16;
      break;
    case 3:
      declared = torchferry::kPluginV1Size - 8;
      break;
    case 5:
      declared = sizeof(tf_plugin) + 16;
      break;
    case 6:
      declared = in.Raw<uint16_t>();
      break;
    default:
      declared = sizeof(tf_plugin);
      break;
  }
  const size_t plugin_bytes = declared < 8 ? 8 : declared;
  unsigned char* plugin = arena.Alloc(plugin_bytes);
  Put(plugin, plugin_bytes, offsetof(tf_plugin, struct_size), declared);

  uint32_t major = 1, minor = 0;
  switch (in.Pick(4)) {
    case 2:
      major = 2;
      break;
    case 3:
      major = in.Raw<uint32_t>();
      break;
    default:
      break;
  }
  switch (in.Pick(4)) {
    case 1:
      minor = 1;
      break;
    case 2:
      minor = 2;
      break;
    case 3:
      minor = in.Raw<uint32_t>();
      break;
    default:
      break;
  }
  Put(plugin, plugin_bytes, offsetof(tf_plugin, abi_version_major), major);
  Put(plugin, plugin_bytes, offsetof(tf_plugin, abi_version_minor), minor);

  const char* name = in.Pick(6) == 0 ? nullptr : arena.String(NameBytes(in));
  Put(plugin, plugin_bytes, offsetof(tf_plugin, name), name);
  const char* version = nullptr;
  std::string version_bytes;
  switch (in.Pick(3)) {
    case 1: {
      std::string v = in.Bytes(in.U8() + in.U8());
      for (char& c : v) {
        if (c == '\0') c = 'v';
      }
      version = arena.String(v);
      version_bytes = v;
      break;
    }
    case 2:
      version = "1.0";
      version_bytes = version;
      break;
    default:
      break;
  }
  Put(plugin, plugin_bytes, offsetof(tf_plugin, version), version);
  int32_t kind = 0;
  switch (in.Pick(4)) {
    case 1:
      kind = 1;
      break;
    case 2:
      kind = 7;
      break;
    case 3:
      kind = in.Raw<int32_t>();
      break;
    default:
      break;
  }
  Put(plugin, plugin_bytes, offsetof(tf_plugin, kind), kind);

  // The kernel array: `count` entries of `stride` bytes, all really there
  // whenever the validator may read them.
  size_t count = 0;
  switch (in.Pick(6)) {
    case 0:
      count = 0;
      break;
    case 4:
      count = in.Raw<uint64_t>();
      break;
    case 5:
      count = torchferry::kMaxKernels + 1;
      break;
    default:
      count = in.U8() % 33;
      break;
  }
  size_t stride;
  switch (in.Pick(7)) {
    case 1:
      stride = sizeof(tf_kernel) + 8;
      break;
    case 2:
      stride = torchferry::kKernelV1Size - 8;
      break;
    case 3:
      stride = 0;
      break;
    case 4:
      stride = torchferry::kMaxKernelStructSize;
      break;
    case 5:
      stride = torchferry::kMaxKernelStructSize + 8;
      break;
    case 6:
      stride = in.Raw<uint16_t>();
      break;
    default:
      stride = sizeof(tf_kernel);
      break;
  }
  const bool null_kernels = in.Pick(8) == 0;
  const bool stride_ok = stride >= torchferry::kKernelV1Size &&
                         stride <= torchferry::kMaxKernelStructSize;
  if (count > torchferry::kMaxKernels) {
    // Refused on the count alone: one entry is all there is.
  } else if (count > 256) {
    count = 256;  // the truth must fit in memory
  }
  unsigned char* kernels = nullptr;
  if (!null_kernels && count > 0) {
    size_t entries = count <= torchferry::kMaxKernels ? count : 1;
    size_t bytes = stride_ok ? entries * stride : sizeof(size_t);
    kernels = arena.Alloc(bytes);
    for (size_t i = 0; i < entries; ++i) {
      unsigned char* k = kernels + i * (stride_ok ? stride : 0);
      const size_t room = stride_ok ? stride : bytes;
      // kernels[0].struct_size IS the array's stride; later entries may
      // disagree with it (the validator must refuse that).
      size_t own_size = i > 0 && in.Pick(8) == 0 ? in.Raw<uint16_t>() : stride;
      Put(k, room, offsetof(tf_kernel, struct_size), own_size);
      if (!stride_ok) break;  // only kernels[0].struct_size is read
      Put(k, room, offsetof(tf_kernel, op), OpName(in, arena));
      int32_t device;
      switch (in.Pick(6)) {
        case 0:
          device = TF_DEVICE_CPU;
          break;
        case 1:
          device = TF_DEVICE_CUDA;
          break;
        case 2:
          device = TF_DEVICE_CUDA_HOST;
          break;
        case 3:
          device = TF_DEVICE_ROCM;
          break;
        case 4:
          device = TF_DEVICE_META;
          break;
        default:
          device = in.Raw<int32_t>();
          break;
      }
      Put(k, room, offsetof(tf_kernel, device_type), device);
      tf_dtype dtype = kKnownDtypes[in.Pick(kNumKnownDtypes)];
      if (in.Pick(4) == 0) {
        dtype.code = in.U8();
        dtype.bits = in.U8();
        dtype.lanes = in.Raw<uint16_t>();
      }
      Put(k, room, offsetof(tf_kernel, dtype), dtype);
      tf_kernel_fn fn = in.Pick(10) == 0 ? nullptr : &DummyKernel;
      Put(k, room, offsetof(tf_kernel, fn), fn);
      Put(k, room, offsetof(tf_kernel, kernel_data),
          static_cast<void*>(nullptr));
    }
  }
  Put(plugin, plugin_bytes, offsetof(tf_plugin, kernels),
      reinterpret_cast<const tf_kernel*>(kernels));
  Put(plugin, plugin_bytes, offsetof(tf_plugin, num_kernels), count);
  Put(plugin, plugin_bytes, offsetof(tf_plugin, init),
      static_cast<void*>(nullptr));
  Put(plugin, plugin_bytes, offsetof(tf_plugin, set_option),
      static_cast<void*>(nullptr));
  // ABI 1.1's declarations: their names, argument names and docs (the
  // schema grammar itself is fuzz_schema's).
  const size_t num_ops = in.Pick(3);
  std::vector<std::string> docs(num_ops);
  unsigned char* decls =
      num_ops == 0 ? nullptr : arena.Alloc(num_ops * sizeof(tf_op_decl));
  for (size_t i = 0; i < num_ops; ++i) {
    const std::string op = DeclName(in);
    const std::string schema = in.Bit() ? op + "(Tensor x) -> Tensor"
                                        : op + "(Tensor x, *, float " +
                                              ArgName(in) + "=1.0) -> Tensor";
    const bool has_doc = in.Pick(4) != 0;
    if (has_doc) docs[i] = DocBytes(in);
    const tf_op_decl d{sizeof(tf_op_decl), arena.String(op),
                       arena.String(schema), &DummyInfer,
                       has_doc ? arena.String(docs[i]) : nullptr};
    std::memcpy(decls + i * sizeof(tf_op_decl), &d, sizeof d);
  }
  Put(plugin, plugin_bytes, offsetof(tf_plugin, ops),
      reinterpret_cast<const tf_op_decl*>(decls));
  Put(plugin, plugin_bytes, offsetof(tf_plugin, num_ops), num_ops);

  const auto* descriptor = reinterpret_cast<const tf_plugin*>(plugin);
  torchferry::ValidationResult r = torchferry::ValidateDescriptor(
      in.Pick(16) == 0 ? nullptr : descriptor, "fuzz.so", TF_ABI_VERSION_MAJOR,
      host_minor);

  if (!r.ok) {
    if (r.error.rfind("fuzz.so: ", 0) != 0)
      Broken("refused without naming the file");
    if (!PrintableAscii(r.error)) Broken("a refusal not in printable ASCII");
    if (!r.kernels.empty()) Broken("refused but returned kernels");
    return 0;
  }
  // Accepted: everything it hands on must be what the ABI allows.
  CheckAccepted(r, count, host_minor);
  for (const torchferry::ValidatedOp& op : r.ops) {
    if (op.index >= num_ops) Broken("a declared op index past num_ops");
    if (!ReachableName(op.schema.ns) || !ReachableName(op.schema.name)) {
      Broken("accepted a declared op Python cannot reach by its name");
    }
    for (const torchferry::SchemaArg& a : op.schema.args) {
      if (!ReachableName(a.name)) {
        Broken("accepted an argument Python cannot pass by its name");
      }
    }
    const std::string& doc = docs[op.index];
    if (op.doc.size() > torchferry::kMaxDocLength ||
        doc.compare(0, op.doc.size(), op.doc) != 0 ||
        (op.doc.size() < doc.size() &&
         op.doc.size() + 4 <= torchferry::kMaxDocLength)) {
      Broken("the doc is not the plugin's, cut only at the limit");
    }
    if (!DecodesAsUtf8(op.doc)) Broken("accepted a doc that is not UTF-8");
  }
  if (r.version != version_bytes.substr(0, 255)) {
    Broken("the version was not kept byte for byte");
  }
  for (const torchferry::ValidatedKernel& v : r.kernels) {
    const auto* k =
        reinterpret_cast<const tf_kernel*>(kernels + v.index * stride);
    const std::string op =
        v.declared >= 0 ? r.ops[v.declared].schema.qualified_name()
                        : std::string(torchferry::OpName(
                              static_cast<torchferry::OpId>(v.op_index)));
    if (op != k->op || v.fn != k->fn || v.device_type != k->device_type) {
      Broken("a kept kernel is not the descriptor's");
    }
  }

  // What an init may do to the descriptor after it was validated.
  const torchferry::ValidationResult kept = r;
  const uint32_t rewrites = in.Pick(4);
  auto kernel_at = [&](size_t i) {
    return kernels + i * stride;  // stride_ok: the validator accepted it
  };
  for (uint32_t n = 0; n < rewrites; ++n) {
    const uint32_t what = in.Pick(13);
    const bool has_kernels = kernels != nullptr && count > 0;
    const size_t i = has_kernels ? in.U8() % count : 0;
    switch (what) {
      case 0:
        if (has_kernels) {
          Put(kernel_at(i), stride, offsetof(tf_kernel, fn),
              static_cast<tf_kernel_fn>(nullptr));
        }
        break;
      case 1:
        if (has_kernels) {
          Put(kernel_at(i), stride, offsetof(tf_kernel, fn),
              in.Bit() ? &OtherKernel : &DummyKernel);
        }
        break;
      case 2:
        if (has_kernels) {
          Put(kernel_at(i), stride, offsetof(tf_kernel, kernel_data),
              static_cast<void*>(in.Bit() ? &kernel_data_a : &kernel_data_b));
        }
        break;
      case 3:
        if (has_kernels) {
          Put(kernel_at(i), stride, offsetof(tf_kernel, op), OpName(in, arena));
        }
        break;
      case 4:
        if (has_kernels) {
          const uint32_t choice = in.Pick(4);
          const int32_t device = choice == 0   ? TF_DEVICE_CPU
                                 : choice == 1 ? TF_DEVICE_CUDA
                                 : choice == 2 ? TF_DEVICE_META
                                               : in.Raw<int32_t>();
          Put(kernel_at(i), stride, offsetof(tf_kernel, device_type), device);
        }
        break;
      case 5:
        if (has_kernels) {
          Put(kernel_at(i), stride, offsetof(tf_kernel, dtype),
              kKnownDtypes[in.Pick(kNumKnownDtypes)]);
        }
        break;
      case 6:
        if (has_kernels && i > 0) {  // kernels[0]'s is the stride
          Put(kernel_at(i), stride, offsetof(tf_kernel, struct_size),
              static_cast<size_t>(in.Raw<uint16_t>()));
        }
        break;
      case 7:  // fewer kernels: the array stays as long as it was
        Put(plugin, plugin_bytes, offsetof(tf_plugin, num_kernels),
            static_cast<size_t>(in.U8() % (count + 1)));
        break;
      case 8:
        Put(plugin, plugin_bytes, offsetof(tf_plugin, name),
            in.Pick(6) == 0 ? nullptr : arena.String(NameBytes(in)));
        break;
      case 9: {
        std::string v = in.Bytes(in.U8());
        for (char& c : v) {
          if (c == '\0') c = 'w';
        }
        Put(plugin, plugin_bytes, offsetof(tf_plugin, version),
            in.Bit() ? nullptr : arena.String(v));
        break;
      }
      case 10:
        Put(plugin, plugin_bytes, offsetof(tf_plugin, kind),
            static_cast<int32_t>(in.Pick(3)));
        break;
      case 11:
        Put(plugin, plugin_bytes, offsetof(tf_plugin, abi_version_minor),
            in.Pick(3));
        break;
      default:
        Put(plugin, plugin_bytes, offsetof(tf_plugin, set_option),
            in.Bit() ? &DummySetOption : nullptr);
        break;
    }
  }
  const torchferry::ValidationResult again = torchferry::ValidateDescriptor(
      descriptor, "fuzz.so", TF_ABI_VERSION_MAJOR, host_minor);
  const bool same =
      again.ok && again.name == kept.name && again.version == kept.version &&
      again.kind == kept.kind && again.abi_major == kept.abi_major &&
      again.abi_minor == kept.abi_minor &&
      again.set_option == kept.set_option && SameKernels(again, kept);
  const std::string change = torchferry::DescriptorChange(
      kept, descriptor, "fuzz.so", TF_ABI_VERSION_MAJOR, host_minor);
  if (change.empty() != same) {
    Broken(same ? "reported a change where there was none"
                : "missed a change of the descriptor");
  }
  if (!PrintableAscii(change)) Broken("a change not in printable ASCII");
  // The first result is the host's copy: rewriting the descriptor must not
  // have reached it.
  CheckAccepted(r, count, host_minor);
  if (!SameKernels(r, kept) || r.name != kept.name ||
      r.version != kept.version) {
    Broken("the validated result changed with the descriptor");
  }
  return 0;
}
