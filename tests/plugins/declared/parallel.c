/*
 * A plugin whose declared op runs on the host's parallel_for (ABI 1.2), for
 * tests/python/test_parallel_host.py, which builds it with `cc`.
 *
 * ptest::mark(Tensor x, Tensor(a!) acc, *, int grain=1) -> (Tensor, Tensor):
 * over the elements of the int32 tensor acc (x, of its shape, only keys the
 * kernel), in parallel, acc[i] += 1 (an index run
 * twice or never shows), ids[i] = host->thread_index() (int32) and os[i] =
 * the running OS thread (int64, pthread_self), so the test counts the threads
 * a call used. Each share also checks the contract from inside: thread_index
 * within num_threads(), and a nested parallel_for running inline on the same
 * thread with the same index; a breach fails the call.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "abi/torchferry.h"

static const tf_host_api* g_host;

typedef struct {
  int32_t* acc;
  int32_t* ids;
  int64_t* os;
  atomic_int breaches;
} mark_ctx;

typedef struct {
  pthread_t thread;
  int32_t index;
  int64_t begin, end;
  int calls;
  int same;
} nested_ctx;

static void nested(int64_t begin, int64_t end, void* data) {
  nested_ctx* n = (nested_ctx*)data;
  ++n->calls;
  n->same = n->same && pthread_equal(n->thread, pthread_self()) &&
            n->index == g_host->thread_index() && begin == n->begin &&
            end == n->end;
}

static void share(int64_t begin, int64_t end, void* data) {
  mark_ctx* m = (mark_ctx*)data;
  const int32_t index = g_host->thread_index();
  const int64_t self = (int64_t)(uintptr_t)pthread_self();
  nested_ctx n = {pthread_self(), index, begin, end, 0, 1};
  int64_t i;
  if (index < 0 || index >= g_host->num_threads()) {
    atomic_fetch_add(&m->breaches, 1);
  }
  /* grain 1 over the whole share: it would split were it not nested. */
  if (g_host->parallel_for(begin, end, 1, nested, &n) != TF_OK ||
      n.calls != 1 || !n.same) {
    atomic_fetch_add(&m->breaches, 1);
  }
  for (i = begin; i < end; ++i) {
    m->acc[i] += 1;
    m->ids[i] = index;
    m->os[i] = self;
  }
}

static tf_status mark(const tf_call* call) {
  const tf_tensor* acc = &call->outputs[2];
  mark_ctx m;
  int64_t n = 1;
  int32_t d;
  tf_status status;
  for (d = 0; d < acc->ndim; ++d) n *= acc->shape[d];
  if (!(acc->flags & TF_TENSOR_CONTIGUOUS)) {
    return call->host->set_error(call->error_sink, TF_ERROR_UNSUPPORTED,
                                 "acc must be contiguous");
  }
  m.acc = (int32_t*)acc->data;
  m.ids = (int32_t*)call->outputs[0].data;
  m.os = (int64_t*)call->outputs[1].data;
  atomic_init(&m.breaches, 0);
  status = call->host->parallel_for(0, n, call->attrs[0].value.i, share, &m);
  if (status != TF_OK) {
    return call->host->set_error(call->error_sink, status,
                                 "parallel_for failed");
  }
  if (atomic_load(&m.breaches) != 0) {
    return call->host->set_error(call->error_sink, TF_ERROR_INTERNAL,
                                 "a share saw parallel_for break its contract");
  }
  return TF_OK;
}

/* ptest::bad_range(Tensor x) -> Tensor: parallel_for(5, 2, ...) must be
   refused without calling fn; the op then returns x + 0 (a copy). */
static void never(int64_t begin, int64_t end, void* data) {
  (void)begin;
  (void)end;
  *(int*)data = 1;
}

static tf_status bad_range(const tf_call* call) {
  const tf_tensor* x = call->inputs[0].value.tensor;
  int called = 0;
  int64_t n = 1, i;
  int32_t d;
  if (call->host->parallel_for(5, 2, 1, never, &called) !=
          TF_ERROR_INVALID_ARGUMENT ||
      call->host->parallel_for(0, 10, 1, NULL, NULL) !=
          TF_ERROR_INVALID_ARGUMENT ||
      called) {
    return call->host->set_error(call->error_sink, TF_ERROR_INTERNAL,
                                 "end < begin or a NULL fn was not refused");
  }
  for (d = 0; d < x->ndim; ++d) n *= x->shape[d];
  for (i = 0; i < n; ++i) {
    ((int32_t*)call->outputs[0].data)[i] = ((const int32_t*)x->data)[i];
  }
  return TF_OK;
}

static tf_status infer_mark(const tf_call* call, tf_tensor_spec* specs,
                            int32_t num_specs) {
  const tf_tensor* acc = call->inputs[0].value.tensor;
  int32_t d;
  if (num_specs != 2) {
    return call->host->set_error(call->error_sink, TF_ERROR_INTERNAL,
                                 "expected two specs");
  }
  for (d = 0; d < acc->ndim; ++d) {
    specs[0].shape[d] = acc->shape[d];
    specs[1].shape[d] = acc->shape[d];
  }
  specs[0].ndim = specs[1].ndim = acc->ndim;
  specs[0].dtype = acc->dtype;
  specs[1].dtype = acc->dtype;
  specs[1].dtype.bits = 64;
  return TF_OK;
}

static tf_status infer_same(const tf_call* call, tf_tensor_spec* specs,
                            int32_t num_specs) {
  const tf_tensor* x = call->inputs[0].value.tensor;
  int32_t d;
  (void)num_specs;
  specs[0].dtype = x->dtype;
  specs[0].ndim = x->ndim;
  for (d = 0; d < x->ndim; ++d) specs[0].shape[d] = x->shape[d];
  return TF_OK;
}

static const tf_op_decl ops[] = {
    {sizeof(tf_op_decl), "ptest::mark",
     "ptest::mark(Tensor x, Tensor(a!) acc, *, int grain=1) -> (Tensor, "
     "Tensor)",
     infer_mark, "acc += 1 in parallel; thread indices and OS threads"},
    {sizeof(tf_op_decl), "ptest::bad_range",
     "ptest::bad_range(Tensor x) -> Tensor", infer_same,
     "checks that bad ranges are refused; returns a copy of x"},
};

static const tf_kernel kernels[] = {
    {sizeof(tf_kernel), "ptest::mark", TF_DEVICE_CPU, {TF_DTYPE_INT, 32, 1},
     mark, NULL},
    {sizeof(tf_kernel), "ptest::bad_range", TF_DEVICE_CPU,
     {TF_DTYPE_INT, 32, 1}, bad_range, NULL},
};

static const tf_plugin plugin = {
    sizeof(tf_plugin),
    TF_ABI_VERSION_MAJOR,
    TF_ABI_VERSION_MINOR,
    "ptest",
    "0.0.1",
    TF_PLUGIN_NATIVE,
    0,
    NULL,
    NULL,
    kernels,
    sizeof(kernels) / sizeof(kernels[0]),
    ops,
    sizeof(ops) / sizeof(ops[0]),
};

TF_PLUGIN_EXPORT const tf_plugin* torchferry_plugin_entry(
    uint32_t host_abi_major, uint32_t host_abi_minor, const tf_host_api* host) {
  (void)host_abi_major;
  /* parallel_for is there from 1.2 on: refuse an older host. */
  if (host_abi_minor < 2 || host->struct_size < TF_HOST_API_V1_2_SIZE) {
    return NULL;
  }
  g_host = host;
  return &plugin;
}
