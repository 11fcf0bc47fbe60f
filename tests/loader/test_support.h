// What the loader tests share: where the built plugins are (meson passes the
// paths in the environment), how to call a kernel, how to read stderr.
#pragma once

#include <stdio.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "abi/torchferry.h"
#include "loader/loader.h"

namespace torchferry::testing {

inline std::string RequiredEnv(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    throw std::runtime_error(std::string(name) +
                             " is not set; run the tests through `meson test`");
  }
  return value;
}

inline std::string SyntheticDir() {
  return RequiredEnv("TF_TEST_SYNTHETIC_DIR");
}

// The synthetic plugin built from tests/plugins/<stem>.c.
inline std::string Synthetic(const std::string& stem) {
  return SyntheticDir() + "/torchferry_" + stem + ".so";
}

inline constexpr tf_dtype kF32 = {TF_DTYPE_FLOAT, 32, 1};

inline tf_tensor View(void* data, std::vector<int64_t>& shape,
                      std::vector<int64_t>& strides, tf_dtype dtype = kF32) {
  tf_tensor t{};
  t.data = data;
  t.device = {TF_DEVICE_CPU, 0};
  t.ndim = static_cast<int32_t>(shape.size());
  t.dtype = dtype;
  t.shape = shape.data();
  t.strides = strides.data();
  return t;
}

inline tf_arg TensorArg(const tf_tensor* t) {
  tf_arg arg{};
  arg.kind = TF_ARG_TENSOR;
  arg.value.tensor = t;
  return arg;
}

inline tf_arg FloatArg(double f) {
  tf_arg arg{};
  arg.kind = TF_ARG_FLOAT;
  arg.value.f = f;
  return arg;
}

// Calls a registered kernel the way the host does, with a fresh sink.
inline tf_status CallKernel(const KernelEntry& kernel,
                            const std::vector<tf_arg>& inputs,
                            const std::vector<tf_arg>& attrs,
                            const std::vector<tf_tensor>& outputs,
                            ErrorSink* sink) {
  tf_call call{};
  call.struct_size = sizeof(tf_call);
  call.inputs = inputs.data();
  call.num_inputs = static_cast<int32_t>(inputs.size());
  call.attrs = attrs.data();
  call.num_attrs = static_cast<int32_t>(attrs.size());
  call.outputs = outputs.data();
  call.num_outputs = static_cast<int32_t>(outputs.size());
  call.kernel_data = kernel.kernel_data;
  call.host = HostApi();
  call.error_sink = sink;
  return kernel.fn(&call);
}

// Sends fd 2 to a temporary file until Finish(), which returns what was
// written: the loader's log goes to the real stderr, so that is what we read.
class StderrCapture {
 public:
  StderrCapture() {
    std::fflush(stderr);
    file_ = std::tmpfile();
    saved_ = ::dup(2);
    ::dup2(::fileno(file_), 2);
  }
  ~StderrCapture() { Finish(); }

  std::string Finish() {
    if (file_ == nullptr) return text_;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    std::rewind(file_);
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, file_)) > 0) {
      text_.append(buffer, n);
    }
    std::fclose(file_);
    file_ = nullptr;
    return text_;
  }

 private:
  FILE* file_ = nullptr;
  int saved_ = -1;
  std::string text_;
};

// A fresh, empty folder that is removed with this object.
class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "torchferry_test_XXXXXX")
            .string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("mkdtemp failed for " + pattern);
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

  // Adds `name` as a symlink to `target`.
  std::string Link(const std::string& name, const std::string& target) const {
    std::filesystem::create_symlink(target, path_ / name);
    return (path_ / name).string();
  }

 private:
  std::filesystem::path path_;
};

}  // namespace torchferry::testing
