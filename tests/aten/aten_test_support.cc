#include "aten_test_support.h"

#include <ATen/core/Formatting.h>
#include <ATen/ops/full.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace torchferry::aten_test {
namespace {

Registry& SharedRegistry() {
  // Leaked: the plugin's kernels may be referenced until exit.
  static Registry* registry = new Registry();
  return *registry;
}

std::string PluginPath() {
  const char* path = std::getenv("TF_TEST_ATEN_PLUGIN");
  if (path == nullptr || *path == '\0') {
    throw std::runtime_error(
        "TF_TEST_ATEN_PLUGIN is not set; run the tests through `meson test`");
  }
  return path;
}

// Written out rather than taken from the plugin so that a wrong mapping in
// the plugin cannot hide behind the same wrong mapping here.
struct DtypePair {
  c10::ScalarType type;
  tf_dtype dtype;
};
const DtypePair kDtypePairs[] = {
    {c10::kFloat, {TF_DTYPE_FLOAT, 32, 1}},
    {c10::kDouble, {TF_DTYPE_FLOAT, 64, 1}},
    {c10::kHalf, {TF_DTYPE_FLOAT, 16, 1}},
    {c10::kBFloat16, {TF_DTYPE_BFLOAT, 16, 1}},
    {c10::kChar, {TF_DTYPE_INT, 8, 1}},
    {c10::kShort, {TF_DTYPE_INT, 16, 1}},
    {c10::kInt, {TF_DTYPE_INT, 32, 1}},
    {c10::kLong, {TF_DTYPE_INT, 64, 1}},
    {c10::kByte, {TF_DTYPE_UINT, 8, 1}},
    {c10::kBool, {TF_DTYPE_BOOL, 8, 1}},
};

bool SameDtype(tf_dtype a, tf_dtype b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

}  // namespace

std::string BuiltTorchVersion() { return TORCHFERRY_TEST_TORCH_VERSION; }

const Plugin& AtenPlugin() {
  static const Plugin* plugin = [] {
    SetHostQuery("torch.version", BuiltTorchVersion());
    Registry& registry = SharedRegistry();
    const Plugin* loaded = registry.LoadFile(PluginPath());
    if (loaded == nullptr) {
      throw std::runtime_error("the aten plugin did not load: " +
                               registry.skipped().back().reason);
    }
    return loaded;
  }();
  return *plugin;
}

tf_dtype DtypeOf(c10::ScalarType type) {
  for (const DtypePair& pair : kDtypePairs) {
    if (pair.type == type) return pair.dtype;
  }
  throw std::runtime_error(std::string("no ABI dtype for ") +
                           c10::toString(type));
}

const KernelEntry& Kernel(const std::string& op, int32_t device_type,
                          c10::ScalarType dtype) {
  AtenPlugin();
  const KernelEntry* kernel =
      SharedRegistry().Find(op, device_type, DtypeOf(dtype));
  INFO("op " << op << ", device type " << device_type << ", dtype "
             << c10::toString(dtype));
  REQUIRE(kernel != nullptr);
  REQUIRE(kernel->plugin->name == "aten");
  return *kernel;
}

std::vector<c10::ScalarType> CpuDtypesOf(const std::string& op) {
  std::vector<c10::ScalarType> types;
  for (const KernelInfo& kernel : AtenPlugin().kernels) {
    if (kernel.op != op || kernel.device_type != TF_DEVICE_CPU) continue;
    for (const DtypePair& pair : kDtypePairs) {
      if (SameDtype(pair.dtype, kernel.dtype)) types.push_back(pair.type);
    }
  }
  return types;
}

aten::KernelState& StateOf(const KernelEntry& kernel) {
  return *static_cast<aten::KernelState*>(kernel.kernel_data);
}

void UseStrategy(const std::string& name) {
  const tf_plugin* descriptor = AtenPlugin().descriptor;
  REQUIRE(descriptor->set_option != nullptr);
  ErrorSink sink;
  const tf_status status =
      descriptor->set_option("strategy", name.c_str(), &sink);
  INFO(sink.message);
  REQUIRE(status == TF_OK);
}

std::unique_ptr<OwnedView> MakeView(const at::Tensor& described,
                                    const at::Tensor* source) {
  auto owned = std::make_unique<OwnedView>();
  owned->shape = described.sizes().vec();
  owned->strides = described.strides().vec();
  tf_tensor& view = owned->view;
  // As the host reads it: ATen reports no data pointer for an empty tensor.
  view.data = described.numel() == 0
                  ? nullptr
                  : const_cast<void*>(described.const_data_ptr());
  view.device = described.is_cuda()
                    ? tf_device{TF_DEVICE_CUDA, described.get_device()}
                    : tf_device{TF_DEVICE_CPU, 0};
  view.ndim = static_cast<int32_t>(described.dim());
  view.dtype = DtypeOf(described.scalar_type());
  view.shape = owned->shape.data();
  view.strides = owned->strides.data();
  view.byte_offset = 0;
  view.source = source;
  view.source_kind = source != nullptr ? TF_SOURCE_ATEN : TF_SOURCE_NONE;
  view.flags = described.is_contiguous() ? TF_TENSOR_CONTIGUOUS : 0u;
  return owned;
}

const tf_tensor* CallBuilder::Keep(const at::Tensor& described,
                                   const at::Tensor* source) {
  views_.push_back(MakeView(described, with_source_ ? source : nullptr));
  return &views_.back()->view;
}

CallBuilder& CallBuilder::Tensor(const at::Tensor& t) {
  return TensorViewOf(t, t);
}

CallBuilder& CallBuilder::TensorViewOf(const at::Tensor& described,
                                       const at::Tensor& source) {
  tf_arg arg{};
  arg.kind = TF_ARG_TENSOR;
  arg.value.tensor = Keep(described, &source);
  inputs_.push_back(arg);
  return *this;
}

CallBuilder& CallBuilder::List(const std::vector<at::Tensor>& tensors) {
  std::vector<tf_tensor> items;
  for (const at::Tensor& t : tensors) items.push_back(*Keep(t, &t));
  lists_.push_back(std::move(items));
  tf_arg arg{};
  arg.kind = TF_ARG_TENSOR_LIST;
  arg.value.list.items = lists_.back().data();
  arg.value.list.count = static_cast<int64_t>(lists_.back().size());
  inputs_.push_back(arg);
  return *this;
}

CallBuilder& CallBuilder::None() {
  tf_arg arg{};
  arg.kind = TF_ARG_NONE;
  inputs_.push_back(arg);
  return *this;
}

CallBuilder& CallBuilder::IntInput(int64_t value) {
  tf_arg arg{};
  arg.kind = TF_ARG_INT;
  arg.value.i = value;
  inputs_.push_back(arg);
  return *this;
}

CallBuilder& CallBuilder::FloatInput(double value) {
  tf_arg arg{};
  arg.kind = TF_ARG_FLOAT;
  arg.value.f = value;
  inputs_.push_back(arg);
  return *this;
}

CallBuilder& CallBuilder::IntAttr(int64_t value) {
  tf_arg arg{};
  arg.kind = TF_ARG_INT;
  arg.value.i = value;
  attrs_.push_back(arg);
  return *this;
}

CallBuilder& CallBuilder::FloatAttr(double value) {
  tf_arg arg{};
  arg.kind = TF_ARG_FLOAT;
  arg.value.f = value;
  attrs_.push_back(arg);
  return *this;
}

CallBuilder& CallBuilder::Output(const at::Tensor& t) {
  outputs_.push_back(*Keep(t, &t));
  return *this;
}

tf_status CallBuilder::Run(const KernelEntry& kernel, void* stream) {
  tf_call call{};
  call.struct_size = sizeof(tf_call);
  call.inputs = inputs_.data();
  call.num_inputs = static_cast<int32_t>(inputs_.size());
  call.attrs = attrs_.data();
  call.num_attrs = static_cast<int32_t>(attrs_.size());
  call.outputs = outputs_.data();
  call.num_outputs = static_cast<int32_t>(outputs_.size());
  call.stream = stream;
  call.kernel_data = kernel.kernel_data;
  call.host = HostApi();
  ErrorSink sink;
  call.error_sink = &sink;
  const tf_status status = kernel.fn(&call);
  message_ = sink.message;
  return status;
}

at::Tensor RandomTensor(c10::IntArrayRef sizes, c10::ScalarType dtype) {
  if (c10::isFloatingType(dtype)) {
    return at::randn(sizes, at::TensorOptions().dtype(c10::kFloat))
        .mul(3)
        .to(dtype);
  }
  const auto longs = at::TensorOptions().dtype(c10::kLong);
  if (dtype == c10::kBool) return at::randint(0, 2, sizes, longs).to(dtype);
  if (dtype == c10::kByte) return at::randint(0, 41, sizes, longs).to(dtype);
  return at::randint(-20, 21, sizes, longs).to(dtype);
}

const char* LayoutName(Layout layout) {
  switch (layout) {
    case Layout::kContiguous:
      return "contiguous";
    case Layout::kStridedWithOffset:
      return "strided with offset";
    case Layout::kTransposed:
      return "transposed";
    case Layout::kEmpty:
      return "empty";
  }
  return "?";
}

namespace {

// Every other element of a buffer twice as large plus one, starting at its
// second element in every dimension: strides double, storage offset > 0.
at::Tensor StridedSliceOf(const at::Tensor& base,
                          const std::vector<int64_t>& sizes) {
  at::Tensor view = base;
  for (size_t d = 0; d < sizes.size(); ++d) {
    view = view.slice(static_cast<int64_t>(d), 1, 1 + 2 * sizes[d], 2);
  }
  return view;
}

// A contiguous tensor of the reversed sizes, seen with its dimensions
// reversed: the sizes asked for, the strides in reverse order.
at::Tensor Reversed(const at::Tensor& reversed_contiguous) {
  std::vector<int64_t> order;
  for (int64_t d = reversed_contiguous.dim() - 1; d >= 0; --d) {
    order.push_back(d);
  }
  return reversed_contiguous.permute(order);
}

std::vector<int64_t> ReversedSizes(std::vector<int64_t> sizes) {
  return {sizes.rbegin(), sizes.rend()};
}

std::vector<int64_t> BaseSizes(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> base;
  for (const int64_t s : sizes) base.push_back(2 * s + 1);
  return base;
}

}  // namespace

at::Tensor RandomIn(Layout layout, std::vector<int64_t> sizes,
                    c10::ScalarType dtype) {
  switch (layout) {
    case Layout::kContiguous:
      return RandomTensor(sizes, dtype);
    case Layout::kStridedWithOffset: {
      at::Tensor view =
          StridedSliceOf(RandomTensor(BaseSizes(sizes), dtype), sizes);
      REQUIRE(!view.is_contiguous());
      REQUIRE(view.storage_offset() > 0);
      return view;
    }
    case Layout::kTransposed:
      return Reversed(RandomTensor(ReversedSizes(sizes), dtype));
    case Layout::kEmpty:
      sizes[0] = 0;
      return RandomTensor(sizes, dtype);
  }
  return {};
}

at::Tensor OutputIn(Layout layout, std::vector<int64_t> sizes,
                    c10::ScalarType dtype) {
  const auto options = at::TensorOptions().dtype(dtype);
  const c10::Scalar sentinel =
      dtype == c10::kBool ? c10::Scalar(true) : c10::Scalar(77);
  switch (layout) {
    case Layout::kContiguous:
      return at::full(sizes, sentinel, options);
    case Layout::kStridedWithOffset:
      return StridedSliceOf(at::full(BaseSizes(sizes), sentinel, options),
                            sizes);
    case Layout::kTransposed:
      return Reversed(at::full(ReversedSizes(sizes), sentinel, options));
    case Layout::kEmpty:
      return at::full(sizes, sentinel, options);
  }
  return {};
}

bool Matches(const at::Tensor& actual, const at::Tensor& expected) {
  if (actual.scalar_type() != expected.scalar_type() ||
      !actual.sizes().equals(expected.sizes())) {
    return false;
  }
  if (!c10::isFloatingType(actual.scalar_type())) {
    return actual.equal(expected);
  }
  double tolerance = 1e-5;
  switch (actual.scalar_type()) {
    case c10::kDouble:
      tolerance = 1e-10;
      break;
    case c10::kHalf:
      tolerance = 5e-3;
      break;
    case c10::kBFloat16:
      tolerance = 3e-2;
      break;
    default:
      break;
  }
  return actual.to(c10::kDouble)
      .allclose(expected.to(c10::kDouble), tolerance, tolerance,
                /*equal_nan=*/true);
}

std::string Show(const at::Tensor& t) {
  std::ostringstream text;
  text << c10::toString(t.scalar_type()) << t.sizes() << "\n" << t;
  return text.str();
}

int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t total_pages = 0;
  int64_t resident_pages = 0;
  statm >> total_pages >> resident_pages;
  return resident_pages * static_cast<int64_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace torchferry::aten_test
