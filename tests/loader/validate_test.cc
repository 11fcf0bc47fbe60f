// Descriptor validation on descriptors built in memory, without dlopen.
#include "loader/validate.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstddef>
#include <string>
#include <vector>

using namespace torchferry;

namespace {

tf_status Noop(const tf_call*) { return TF_OK; }

tf_kernel Kernel(const char* op) {
  return {sizeof(tf_kernel),       op,    TF_DEVICE_CPU,
          {TF_DTYPE_FLOAT, 32, 1}, &Noop, nullptr};
}

tf_plugin Descriptor(const char* name, const tf_kernel* kernels, size_t n) {
  tf_plugin p{};
  p.struct_size = sizeof(tf_plugin);
  p.abi_version_major = TF_ABI_VERSION_MAJOR;
  p.abi_version_minor = TF_ABI_VERSION_MINOR;
  p.name = name;
  p.version = "1";
  p.kind = TF_PLUGIN_NATIVE;
  p.kernels = kernels;
  p.num_kernels = n;
  return p;
}

}  // namespace

TEST_CASE("the ABI 1.0 sizes the validator holds plugins to", "[validate]") {
  // The sizes of the frozen 1.0 header's structs (tests/abi/v1_0), which
  // stay when a minor appends fields and sizeof grows.
  CHECK(kPluginV1Size == sizeof(tf_plugin) - 2 * sizeof(void*));  // 1.1: ops
  CHECK(kPluginV11Size == sizeof(tf_plugin));
  CHECK(kKernelV1Size == sizeof(tf_kernel));
  // 1.2 appended parallel_for, num_threads and thread_index.
  CHECK(kHostApiV1Size == sizeof(tf_host_api) - 3 * sizeof(void*));
  CHECK(TF_HOST_API_V1_2_SIZE == sizeof(tf_host_api));
  CHECK(kCallV1Size == sizeof(tf_call));
  CHECK(kOpDeclV11Size == sizeof(tf_op_decl));
}

TEST_CASE("a correct descriptor validates", "[validate]") {
  const tf_kernel kernels[] = {Kernel("abs"), Kernel("silu_and_mul")};
  const tf_plugin p = Descriptor("mem_ok", kernels, 2);
  ValidationResult r = ValidateDescriptor(&p, "mem");
  REQUIRE(r.ok);
  CHECK(r.error.empty());
  CHECK(r.name == "mem_ok");
  CHECK(r.version == "1");
  REQUIRE(r.kernels.size() == 2);
  CHECK(r.kernels[0].index == 0);
  CHECK(r.kernels[0].fn == &Noop);
  CHECK(r.kernels[0].device_type == TF_DEVICE_CPU);
  CHECK(r.kernels[1].op_index == 9);  // silu_and_mul in ABI.md's table
  const tf_plugin empty = Descriptor("no_kernels", nullptr, 0);
  CHECK(ValidateDescriptor(&empty, "mem").ok);
}

TEST_CASE("NULL and wrong majors", "[validate]") {
  CHECK_THAT(ValidateDescriptor(nullptr, "mem").error,
             Catch::StartsWith("mem: the entry function returned NULL"));
  const tf_plugin p = Descriptor("x", nullptr, 0);
  CHECK_THAT(ValidateDescriptor(&p, "mem", 2, 0).error,
             Catch::Contains("host speaks 2.x, plugin was built for 1." +
                             std::to_string(TF_ABI_VERSION_MINOR)));
  tf_plugin tiny = p;
  tiny.struct_size = 4;
  CHECK_THAT(ValidateDescriptor(&tiny, "mem").error,
             Catch::Contains("too small to hold even the ABI version"));
}

TEST_CASE("names are [a-z0-9_]{1,63} and read within bounds", "[validate]") {
  std::string max(63, 'a');
  std::string over(200, 'b');  // terminated far past the bound
  for (auto [name, ok] :
       std::vector<std::pair<const char*, bool>>{{"a", true},
                                                 {"cpu_2", true},
                                                 {max.c_str(), true},
                                                 {"", false},
                                                 {"Cpu", false},
                                                 {"a-b", false},
                                                 {"caf\xc3\xa9", false},
                                                 {over.c_str(), false}}) {
    const tf_plugin p = Descriptor(name, nullptr, 0);
    ValidationResult r = ValidateDescriptor(&p, "mem");
    INFO(name);
    CHECK(r.ok == ok);
    if (!ok) CHECK_THAT(r.error, Catch::Contains("invalid plugin name"));
  }
  const tf_plugin p = Descriptor(over.c_str(), nullptr, 0);
  CHECK_THAT(ValidateDescriptor(&p, "mem").error,
             Catch::Contains("(longer than 63 characters)"));
  const tf_plugin null_name = Descriptor(nullptr, nullptr, 0);
  CHECK_THAT(ValidateDescriptor(&null_name, "mem").error,
             Catch::Contains("the plugin name is NULL"));
}

TEST_CASE("an unknown op rejects the plugin unless it is from a newer minor",
          "[validate]") {
  const tf_kernel kernels[] = {Kernel("abs"), Kernel("gelu"), Kernel("exp")};
  tf_plugin p = Descriptor("ops", kernels, 3);
  ValidationResult same = ValidateDescriptor(&p, "mem");
  CHECK_FALSE(same.ok);
  CHECK_THAT(same.error, Catch::Contains("unknown op 'gelu'"));
  CHECK(same.kernels.empty());

  p.abi_version_minor = TF_ABI_VERSION_MINOR + 1;
  ValidationResult newer = ValidateDescriptor(&p, "mem");
  REQUIRE(newer.ok);
  REQUIRE(newer.kernels.size() == 2);
  CHECK(newer.kernels[1].index == 2);
  REQUIRE(newer.notes.size() == 1);
  CHECK_THAT(newer.notes[0], Catch::Contains("op 'gelu' is unknown"));

  // A host of a newer minor still rejects an unknown op from an older plugin.
  p.abi_version_minor = 0;
  CHECK_FALSE(ValidateDescriptor(&p, "mem", 1, 3).ok);
}

TEST_CASE("every known dtype and device is accepted", "[validate]") {
  const std::vector<tf_dtype> dtypes = {
      {TF_DTYPE_FLOAT, 16, 1}, {TF_DTYPE_FLOAT, 32, 1},
      {TF_DTYPE_FLOAT, 64, 1}, {TF_DTYPE_BFLOAT, 16, 1},
      {TF_DTYPE_INT, 8, 1},    {TF_DTYPE_INT, 16, 1},
      {TF_DTYPE_INT, 32, 1},   {TF_DTYPE_INT, 64, 1},
      {TF_DTYPE_UINT, 8, 1},   {TF_DTYPE_BOOL, 8, 1},
      {TF_DTYPE_UINT, 16, 1},  {TF_DTYPE_UINT, 32, 1},
      {TF_DTYPE_UINT, 64, 1}};
  const std::vector<int32_t> devices = {TF_DEVICE_CPU, TF_DEVICE_CUDA,
                                        TF_DEVICE_CUDA_HOST, TF_DEVICE_ROCM};
  std::vector<tf_kernel> kernels;
  for (tf_dtype dtype : dtypes) {
    for (int32_t device : devices) {
      tf_kernel k = Kernel("cast");
      k.dtype = dtype;
      k.device_type = device;
      kernels.push_back(k);
    }
  }
  const tf_plugin p = Descriptor("all", kernels.data(), kernels.size());
  ValidationResult r = ValidateDescriptor(&p, "mem");
  CHECK(r.error.empty());
  CHECK(r.kernels.size() == dtypes.size() * devices.size());

  for (tf_dtype bad : std::vector<tf_dtype>{{TF_DTYPE_FLOAT, 8, 1},
                                            {TF_DTYPE_BFLOAT, 32, 1},
                                            {TF_DTYPE_UINT, 128, 1},
                                            {TF_DTYPE_BOOL, 1, 1},
                                            {5, 64, 1}}) {
    tf_kernel k = Kernel("abs");
    k.dtype = bad;
    const tf_plugin one = Descriptor("bad", &k, 1);
    CHECK_THAT(ValidateDescriptor(&one, "mem").error,
               Catch::Contains("unknown dtype"));
  }
}

TEST_CASE("absurd counts and strides are refused before reading",
          "[validate]") {
  const tf_kernel k = Kernel("abs");
  tf_plugin p = Descriptor("huge", &k, kMaxKernels + 1);
  CHECK_THAT(ValidateDescriptor(&p, "mem").error,
             Catch::Contains("expected at most 65536"));
  tf_kernel wide = Kernel("abs");
  wide.struct_size = kMaxKernelStructSize + 1;
  p = Descriptor("wide", &wide, 2);
  CHECK_THAT(ValidateDescriptor(&p, "mem").error,
             Catch::Contains("kernels[0].struct_size is 4097"));
  tf_kernel null_op = Kernel(nullptr);
  p = Descriptor("nullop", &null_op, 1);
  CHECK_THAT(ValidateDescriptor(&p, "mem").error,
             Catch::Contains("kernels[0].op is NULL"));
}

TEST_CASE("what validation copied stays, whatever the descriptor becomes",
          "[validate]") {
  tf_kernel kernels[] = {Kernel("abs"), Kernel("neg")};
  kernels[1].kernel_data = &kernels[1];
  tf_plugin p = Descriptor("steady", kernels, 2);
  const ValidationResult before = ValidateDescriptor(&p, "mem");
  REQUIRE(before.ok);
  CHECK(DescriptorChange(before, &p, "mem").empty());

  SECTION("a kernel function cleared") {
    kernels[0].fn = nullptr;
    CHECK(before.kernels[0].fn == &Noop);  // the copy is the host's
    CHECK_THAT(DescriptorChange(before, &p, "mem"),
               Catch::Contains("it no longer validates: plugin 'steady': "
                               "kernels[0] ('abs', cpu, float32): fn is NULL"));
  }
  SECTION("a kernel function swapped") {
    kernels[1].fn = [](const tf_call*) -> tf_status { return TF_OK; };
    CHECK_THAT(DescriptorChange(before, &p, "mem"),
               Catch::Contains("kernels[1].fn changed from 0x"));
  }
  SECTION("kernel data swapped") {
    kernels[1].kernel_data = nullptr;
    CHECK_THAT(DescriptorChange(before, &p, "mem"),
               Catch::Contains("kernels[1].kernel_data changed from 0x") &&
                   Catch::Contains("to NULL"));
  }
  SECTION("a kernel's op changed") {
    kernels[1].op = "exp";
    CHECK_THAT(DescriptorChange(before, &p, "mem"),
               Catch::Contains("kernels[1] changed from (neg, cpu, float32) "
                               "to (exp, cpu, float32)"));
  }
  SECTION("fewer kernels") {
    p.num_kernels = 1;
    CHECK_THAT(DescriptorChange(before, &p, "mem"),
               Catch::Contains("the kernels changed from 2 to 1"));
  }
  SECTION("the name and the version") {
    p.name = "other";
    CHECK_THAT(DescriptorChange(before, &p, "mem"),
               Catch::Contains("name changed from 'steady' to 'other'"));
    p.name = "steady";
    p.version = "caf\xe9";
    CHECK_THAT(DescriptorChange(before, &p, "mem"),
               Catch::Contains("version changed from '1' to 'caf\\xe9'"));
  }
  SECTION("the whole descriptor gone bad") {
    p.abi_version_major = 2;
    CHECK_THAT(DescriptorChange(before, &p, "mem"),
               Catch::StartsWith("it no longer validates: ABI major version "
                                 "mismatch"));
  }
}

TEST_CASE("text fields are kept byte for byte, UTF-8 or not", "[validate]") {
  const tf_kernel k = Kernel("abs");
  tf_plugin p = Descriptor("bytes", &k, 1);
  p.version = "caf\xe9 \xff\xfe";
  const ValidationResult r = ValidateDescriptor(&p, "mem");
  REQUIRE(r.ok);
  CHECK(r.version == "caf\xe9 \xff\xfe");
  p.name = "caf\xe9";
  CHECK_THAT(ValidateDescriptor(&p, "mem").error,
             Catch::Contains("invalid plugin name 'caf\\xe9'"));
}

namespace {

tf_status NoInfer(const tf_call*, tf_tensor_spec*, int32_t) { return TF_OK; }

// A plugin declaring one op `name` (schema: `name(Tensor x) -> Tensor`) with
// `doc`; the kernel serves it.
ValidationResult Declaring(const std::string& name, const char* doc) {
  static std::string schema;  // outlives the descriptor below
  schema = name + "(Tensor x) -> Tensor";
  const tf_op_decl decl{sizeof(tf_op_decl), name.c_str(), schema.c_str(),
                        &NoInfer, doc};
  const tf_kernel k = Kernel(name.c_str());
  tf_plugin p = Descriptor("decl", &k, 1);
  p.ops = &decl;
  p.num_ops = 1;
  return ValidateDescriptor(&p, "mem");
}

}  // namespace

TEST_CASE("a declared namespace or op name is one Python can write",
          "[validate]") {
  CHECK(Declaring("acme::f", "a doc").ok);
  CHECK(Declaring("acme::match", "soft keywords are names").ok);
  for (const char* ns : {"__name__", "__spec__", "__builtins__", "__all__"}) {
    const ValidationResult r = Declaring(std::string(ns) + "::f", nullptr);
    CHECK_FALSE(r.ok);
    CHECK_THAT(r.error, Catch::Contains(fmt::format(
                            "the namespace '{}' is a dunder name", ns)));
  }
  CHECK_THAT(Declaring("acme::__class__", nullptr).error,
             Catch::Contains("the op name '__class__' is a dunder name"));
  CHECK_THAT(Declaring("lambda::f", nullptr).error,
             Catch::Contains("the namespace 'lambda' is a Python keyword"));
  CHECK_THAT(Declaring("acme::import", nullptr).error,
             Catch::Contains("the op name 'import' is a Python keyword"));
}

TEST_CASE("a declared op's doc is UTF-8, cut at a character boundary",
          "[validate]") {
  CHECK(Declaring("acme::f", "caf\xc3\xa9").ops.at(0).doc == "caf\xc3\xa9");
  for (const char* bad : {"caf\xe9", "\xff", "\xc0\xaf", "\xed\xa0\x80",
                          "\xf4\x90\x80\x80", "end \xe2\x82"}) {
    const ValidationResult r = Declaring("acme::f", bad);
    CHECK_FALSE(r.ok);
    CHECK_THAT(r.error, Catch::Contains("doc is not UTF-8 (byte "));
  }
  // 1022 bytes, then a 2-byte character the 1023-byte limit would split.
  const std::string long_doc =
      std::string(kMaxDocLength - 1, 'a') + "\xc3\xa9" + std::string(100, 'b');
  const ValidationResult r = Declaring("acme::f", long_doc.c_str());
  REQUIRE(r.ok);
  CHECK(r.ops.at(0).doc == std::string(kMaxDocLength - 1, 'a'));
  const std::string fits = std::string(kMaxDocLength - 2, 'a') + "\xc3\xa9";
  CHECK(Declaring("acme::f", fits.c_str()).ops.at(0).doc == fits);
}
