#include "cpu_plugin.h"

#include <cstdlib>
#include <stdexcept>

#include "dtype_reference.h"

namespace torchferry::cpu_test {
namespace {

struct Loaded {
  Registry registry;
  const Plugin* plugin = nullptr;
};

Loaded& LoadOnce() {
  static Loaded* loaded = [] {
    auto* l = new Loaded;  // kept to exit: kernels stay callable
    const char* path = std::getenv("TF_TEST_CPU_PLUGIN");
    if (path == nullptr || *path == '\0') {
      throw std::runtime_error(
          "TF_TEST_CPU_PLUGIN is not set; run the tests through `meson test`");
    }
    l->plugin = l->registry.LoadFile(path);
    if (l->plugin == nullptr) {
      std::string reason =
          "the cpu plugin at " + std::string(path) + " did not load";
      for (const Skipped& s : l->registry.skipped()) reason += ": " + s.reason;
      throw std::runtime_error(reason);
    }
    return l;
  }();
  return *loaded;
}

tf_arg ScalarArg(int32_t kind) {
  tf_arg arg{};
  arg.kind = kind;
  return arg;
}

}  // namespace

const Registry& CpuRegistry() { return LoadOnce().registry; }
const Plugin& CpuPlugin() { return *LoadOnce().plugin; }

const KernelEntry* FindKernel(const std::string& op, tf_dtype dtype) {
  const KernelEntry* entry = CpuRegistry().Find(op, TF_DEVICE_CPU, dtype);
  if (entry == nullptr || entry->plugin != &CpuPlugin()) return nullptr;
  return entry;
}

CallBuilder& CallBuilder::Input(const TestTensor& t) {
  views_.push_back(t.View());
  tf_arg arg = ScalarArg(TF_ARG_TENSOR);
  arg.value.tensor = &views_.back();
  inputs_.push_back(arg);
  return *this;
}

CallBuilder& CallBuilder::InputNone() {
  inputs_.push_back(ScalarArg(TF_ARG_NONE));
  return *this;
}

CallBuilder& CallBuilder::InputInt(int64_t value) {
  tf_arg arg = ScalarArg(TF_ARG_INT);
  arg.value.i = value;
  inputs_.push_back(arg);
  return *this;
}

CallBuilder& CallBuilder::InputFloat(double value) {
  tf_arg arg = ScalarArg(TF_ARG_FLOAT);
  arg.value.f = value;
  inputs_.push_back(arg);
  return *this;
}

CallBuilder& CallBuilder::InputList(
    const std::vector<const TestTensor*>& tensors) {
  std::vector<tf_tensor>& list = lists_.emplace_back();
  for (const TestTensor* t : tensors) list.push_back(t->View());
  tf_arg arg = ScalarArg(TF_ARG_TENSOR_LIST);
  arg.value.list.items = list.data();
  arg.value.list.count = static_cast<int64_t>(list.size());
  inputs_.push_back(arg);
  return *this;
}

CallBuilder& CallBuilder::AttrInt(int64_t value) {
  tf_arg arg = ScalarArg(TF_ARG_INT);
  arg.value.i = value;
  attrs_.push_back(arg);
  return *this;
}

CallBuilder& CallBuilder::AttrFloat(double value) {
  tf_arg arg = ScalarArg(TF_ARG_FLOAT);
  arg.value.f = value;
  attrs_.push_back(arg);
  return *this;
}

CallBuilder& CallBuilder::Output(const TestTensor& t) {
  outputs_.push_back(t.View());
  return *this;
}

CallResult CallBuilder::Run(const std::string& op, tf_dtype dtype) const {
  const KernelEntry* kernel = FindKernel(op, dtype);
  if (kernel == nullptr) {
    throw std::runtime_error("the cpu plugin has no " + op + " kernel for " +
                             DtypeName(dtype));
  }
  ErrorSink sink;
  tf_call call{};
  call.struct_size = sizeof(tf_call);
  call.inputs = inputs_.data();
  call.num_inputs = static_cast<int32_t>(inputs_.size());
  call.attrs = attrs_.data();
  call.num_attrs = static_cast<int32_t>(attrs_.size());
  call.outputs = outputs_.data();
  call.num_outputs = static_cast<int32_t>(outputs_.size());
  call.stream = nullptr;
  call.kernel_data = kernel->kernel_data;
  call.host = HostApi();
  call.error_sink = &sink;
  const tf_status status = kernel->fn(&call);
  if (status != sink.status && sink.status != TF_OK) {
    throw std::runtime_error("kernel returned status " +
                             std::to_string(status) + " but set_error got " +
                             std::to_string(sink.status));
  }
  return {status, sink.message};
}

}  // namespace torchferry::cpu_test
