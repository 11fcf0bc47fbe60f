// What the ATen plugin tests share: the plugin loaded through the real loader,
// tensor views of real at::Tensors (with or without their source handle), a
// call builder that fills tf_call the way the host does, and comparisons of a
// kernel's output with an independent reference.
#pragma once

#include <ATen/core/Tensor.h>

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "abi/torchferry.h"
#include "loader/loader.h"
#include "plugins/aten/kernel_table.h"

namespace torchferry::aten_test {

inline const char* const kStrategies[] = {"from_blob", "source", "pool"};

// The plugin under test, loaded once through torchferry::Registry with the
// host's torch version set to the one the tests were built against.
const Plugin& AtenPlugin();
// The plugin's kernel for (op, device type, dtype); fails the test if
// missing.
const KernelEntry& Kernel(const std::string& op, int32_t device_type,
                          c10::ScalarType dtype);
inline const KernelEntry& CpuKernel(const std::string& op,
                                    c10::ScalarType dtype) {
  return Kernel(op, TF_DEVICE_CPU, dtype);
}
// The dtypes the plugin registers for `op` on the CPU.
std::vector<c10::ScalarType> CpuDtypesOf(const std::string& op);
// The plugin's own state for a kernel (its wrapper pools), read in place.
aten::KernelState& StateOf(const KernelEntry& kernel);
// set_option("strategy", name) through the descriptor; fails the test on
// error.
void UseStrategy(const std::string& name);

// The torch.version the host would report, from the build.
std::string BuiltTorchVersion();
tf_dtype DtypeOf(c10::ScalarType type);

// A tf_tensor describing `described`, with its own shape and stride arrays.
// `source` becomes the view's TF_SOURCE_ATEN handle when not null; it need
// not be `described` (the host passes broadcast and reshaped views whose
// source is the original tensor). Both must outlive the view.
struct OwnedView {
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  tf_tensor view{};
};
std::unique_ptr<OwnedView> MakeView(const at::Tensor& described,
                                    const at::Tensor* source);

// Builds one call. Tensors are borrowed: they must outlive Run().
class CallBuilder {
 public:
  explicit CallBuilder(bool with_source) : with_source_(with_source) {}

  CallBuilder& Tensor(const at::Tensor& t);
  // A view of `described` whose source is `source` (e.g. the tensor that
  // was broadcast); the source is only attached when the builder attaches
  // sources at all.
  CallBuilder& TensorViewOf(const at::Tensor& described,
                            const at::Tensor& source);
  // The sources are the vector's elements: keep it alive until Run().
  CallBuilder& List(const std::vector<at::Tensor>& tensors);
  CallBuilder& None();
  CallBuilder& IntInput(int64_t value);
  CallBuilder& FloatInput(double value);
  CallBuilder& IntAttr(int64_t value);
  CallBuilder& FloatAttr(double value);
  CallBuilder& Output(const at::Tensor& t);

  // Calls the kernel with a fresh error sink; the message is kept.
  tf_status Run(const KernelEntry& kernel, void* stream = nullptr);
  const std::string& message() const { return message_; }

 private:
  const tf_tensor* Keep(const at::Tensor& described, const at::Tensor* source);

  bool with_source_;
  std::deque<std::unique_ptr<OwnedView>> views_;
  std::deque<std::vector<tf_tensor>> lists_;
  std::vector<tf_arg> inputs_;
  std::vector<tf_arg> attrs_;
  std::vector<tf_tensor> outputs_;
  std::string message_;
};

// Random test data of any v1 dtype, small enough that no op overflows:
// floats ~ N(0, 3^2); signed ints in [-20, 20]; uint8 in [0, 40]; bools.
at::Tensor RandomTensor(c10::IntArrayRef sizes, c10::ScalarType dtype);

// The layouts every op is checked on.
enum class Layout { kContiguous, kStridedWithOffset, kTransposed, kEmpty };
inline const Layout kLayouts[] = {Layout::kContiguous,
                                  Layout::kStridedWithOffset,
                                  Layout::kTransposed, Layout::kEmpty};
const char* LayoutName(Layout layout);
// A tensor of `sizes` in `layout`: kStridedWithOffset is a strided slice of a
// larger buffer that starts past its first element; kTransposed has its
// dimensions laid out in reverse order (column-major for a matrix); kEmpty
// replaces the first size with 0.
at::Tensor RandomIn(Layout layout, std::vector<int64_t> sizes,
                    c10::ScalarType dtype);
// An output of exactly `sizes` (take them from the inputs, which carry the
// empty layout's zero) in `layout`, filled with a sentinel so that an element
// the kernel failed to write shows; kEmpty is contiguous here.
at::Tensor OutputIn(Layout layout, std::vector<int64_t> sizes,
                    c10::ScalarType dtype);

// Exact for integers and bool; for floats within a tolerance that suits the
// dtype (a reference computed in float64 and rounded once, against a kernel
// that may round a few times more). NaNs must match.
bool Matches(const at::Tensor& actual, const at::Tensor& expected);
std::string Show(const at::Tensor& t);

// Resident memory of this process in bytes, from /proc/self/statm.
int64_t ResidentBytes();

}  // namespace torchferry::aten_test
