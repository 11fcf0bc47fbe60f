// vendor_plugin: a torchferry plugin in C++ that builds out of the
// torchferry source tree, against the SDK the installed package carries
// (`python -m torchferry config`). It serves one built-in op, add for float32
// on the CPU, and declares an op of its own, vendor_plugin::scale, which it
// serves too. Copy the folder, rename the plugin, replace the kernels.
#include <torchferry.h>

#include <cstdint>

namespace {

// Walks every element of the output's shape in row-major order, keeping
// each tensor's element offset (its strides, in elements) up to date, so
// that transposed, sliced, broadcast (stride 0) and aliased tensors all
// work. The host has folded each view's storage offset into `data`.
template <int N>
class StridedWalk {
 public:
  StridedWalk(const tf_tensor& out, const tf_tensor* const (&tensors)[N])
      : ndim_(out.ndim), shape_(out.shape) {
    for (int t = 0; t < N; ++t) strides_[t] = tensors[t]->strides;
  }
  int64_t offset(int t) const { return offset_[t]; }
  void Next() {
    for (int32_t d = ndim_ - 1; d >= 0; --d) {
      for (int t = 0; t < N; ++t) offset_[t] += strides_[t][d];
      if (++index_[d] < shape_[d]) return;
      // This dimension wrapped: rewind it and carry into the next one out.
      for (int t = 0; t < N; ++t) offset_[t] -= strides_[t][d] * shape_[d];
      index_[d] = 0;
    }
  }

 private:
  int32_t ndim_;
  const int64_t* shape_;
  const int64_t* strides_[N] = {};
  int64_t offset_[N] = {};
  int64_t index_[TF_MAX_NDIM] = {};
};

int64_t Numel(const tf_tensor& t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

tf_status Unsupported(const tf_call* call, const char* why) {
  return call->host->set_error(call->error_sink, TF_ERROR_UNSUPPORTED, why);
}

// add: out = x + alpha * y, x and y already broadcast to out's shape by the
// host, which checked dtypes, devices and overlap (ABI.md, the op table).
tf_status Add(const tf_call* call) {
  const tf_tensor& x = *call->inputs[0].value.tensor;
  const tf_tensor& y = *call->inputs[1].value.tensor;
  const tf_tensor& out = call->outputs[0];
  if (out.ndim > TF_MAX_NDIM)
    return Unsupported(call, "at most TF_MAX_NDIM dims");
  const float alpha = static_cast<float>(call->attrs[0].value.f);
  const float* xs = static_cast<const float*>(x.data);
  const float* ys = static_cast<const float*>(y.data);
  float* os = static_cast<float*>(out.data);
  StridedWalk<3> walk(out, {&x, &y, &out});
  for (int64_t i = 0, n = Numel(out); i < n; ++i, walk.Next()) {
    os[walk.offset(2)] = xs[walk.offset(0)] + alpha * ys[walk.offset(1)];
  }
  return TF_OK;
}

// vendor_plugin::scale(x, *, factor) = x * factor. infer gives the output's
// dtype and shape from the input's; it never reads data (under
// torch.compile there is none).
tf_status ScaleInfer(const tf_call* call, tf_tensor_spec* specs,
                     int32_t num_specs) {
  const tf_tensor& x = *call->inputs[0].value.tensor;
  if (num_specs != 1 || x.ndim > TF_MAX_NDIM) {
    return call->host->set_error(
        call->error_sink, TF_ERROR_INVALID_ARGUMENT,
        "scale takes one tensor of at most TF_MAX_NDIM dims");
  }
  specs[0].dtype = x.dtype;
  specs[0].ndim = x.ndim;
  for (int32_t d = 0; d < x.ndim; ++d) specs[0].shape[d] = x.shape[d];
  return TF_OK;
}

tf_status Scale(const tf_call* call) {
  const tf_tensor& x = *call->inputs[0].value.tensor;
  const tf_tensor& out = call->outputs[0];
  const float factor = static_cast<float>(call->attrs[0].value.f);
  const float* xs = static_cast<const float*>(x.data);
  float* os = static_cast<float*>(out.data);
  StridedWalk<2> walk(out, {&x, &out});
  for (int64_t i = 0, n = Numel(out); i < n; ++i, walk.Next()) {
    os[walk.offset(1)] = xs[walk.offset(0)] * factor;
  }
  return TF_OK;
}

constexpr tf_dtype kFloat32 = {TF_DTYPE_FLOAT, 32, 1};

// The descriptor and the tables it points to are static: they must stay
// valid for as long as the library is loaded, which is until the process
// exits.
const tf_op_decl kOps[] = {
    {sizeof(tf_op_decl), "vendor_plugin::scale",
     "vendor_plugin::scale(Tensor x, *, float factor) -> Tensor", ScaleInfer,
     "x * factor"},
};

const tf_kernel kKernels[] = {
    {sizeof(tf_kernel), "add", TF_DEVICE_CPU, kFloat32, Add, nullptr},
    {sizeof(tf_kernel), "vendor_plugin::scale", TF_DEVICE_CPU, kFloat32, Scale,
     nullptr},
};

const tf_plugin kPlugin = {
    sizeof(tf_plugin),
    TF_ABI_VERSION_MAJOR,
    TF_ABI_VERSION_MINOR,
    "vendor_plugin",
    "0.1.0",
    TF_PLUGIN_NATIVE,
    0,        // reserved
    nullptr,  // init: nothing to set up
    nullptr,  // set_option: no options
    kKernels,
    sizeof(kKernels) / sizeof(kKernels[0]),
    kOps,
    sizeof(kOps) / sizeof(kOps[0]),
};

}  // namespace

// The one exported symbol (everything else is hidden: the SDK's flags say
// -fvisibility=hidden). A plugin built for ABI 1 serves no other major.
extern "C" TF_PLUGIN_EXPORT const tf_plugin* torchferry_plugin_entry(
    uint32_t host_abi_major, uint32_t /*host_abi_minor*/,
    const tf_host_api* host) {
  if (host_abi_major != TF_ABI_VERSION_MAJOR) {
    host->log(TF_LOG_WARN, "vendor_plugin",
              "built for torchferry ABI 1; this host speaks another major");
    return nullptr;
  }
  return &kPlugin;
}
