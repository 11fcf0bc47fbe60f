/*
 * torchferry.h - the stable C ABI between the torchferry host and its backend
 * plugins.
 *
 * A plugin is a shared library that includes this header and nothing else of
 * torchferry's. It exports exactly one symbol, TF_PLUGIN_ENTRY_SYMBOL, which
 * the host calls once with its ABI version and a table of host services; the
 * plugin answers with a descriptor that lists its kernels. A kernel is a C
 * function that takes one call struct and returns a status. Nothing else
 * crosses the boundary: no C++ types, no exceptions, no allocator.
 *
 * Rules (abi/ABI.md states them in full):
 *  - Every struct that may grow starts with `struct_size`, set by whoever
 *    fills it to sizeof() of the struct it was compiled with. Readers accept a
 *    larger size (a newer minor) and reject a smaller one than the first
 *    version of that struct.
 *  - A minor version only appends fields, statuses, codes and host services.
 *    A major version breaks; the host refuses plugins of another major.
 *  - Everything carries the minor that brought it: what has no date is 1.0;
 *    a `since 1.N` on a declaration's line dates it, one that starts the
 *    comment right above a declaration dates it and those after it up to
 *    the next blank line, and a `--- since 1.N ---` line inside a struct
 *    dates every field after it. abi/ABI.md's history is generated
 *    from these dates, and tests/abi holds each released minor's header.
 *  - Pointers are borrowed for the duration of the call they arrive in unless
 *    a comment says otherwise. A comment that starts with `out` marks what
 *    the callee writes.
 *
 * Compiles as C99 and as C++; includes only <stdint.h> and <stddef.h>.
 */
#ifndef TORCHFERRY_ABI_H_
#define TORCHFERRY_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Versions
 * ------------------------------------------------------------------------- */

#define TF_ABI_VERSION_MAJOR 1
#define TF_ABI_VERSION_MINOR 2

/* The one symbol a plugin exports; its type is tf_plugin_entry_fn. */
#define TF_PLUGIN_ENTRY_SYMBOL "torchferry_plugin_entry"

#if defined(_WIN32)
#define TF_PLUGIN_EXPORT __declspec(dllexport)
#else
#define TF_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* ---------------------------------------------------------------------------
 * Status codes. Kernels, init and host services return one of these.
 * ------------------------------------------------------------------------- */

typedef int32_t tf_status;
#define TF_OK 0
#define TF_ERROR_INVALID_ARGUMENT 1 /* the arguments break the op's contract */
#define TF_ERROR_UNSUPPORTED 2      /* valid, but this kernel cannot do it */
#define TF_ERROR_OUT_OF_MEMORY 3
#define TF_ERROR_DEVICE 4   /* the device or its driver reported a failure */
#define TF_ERROR_INTERNAL 5 /* a bug: the plugin's own invariant broke */
/* since 1.2: an index in the data (an embedding id) is outside its range. A
   host that predates it reports it as any other failure. */
#define TF_ERROR_OUT_OF_RANGE 6

/* ---------------------------------------------------------------------------
 * Tensor view, layout-compatible with DLPack's DLTensor (dlpack.h v0.6+):
 * a pointer to a tf_tensor may be read as a DLTensor*.
 * ------------------------------------------------------------------------- */

/* Device types use DLPack's DLDeviceType values. */
#define TF_DEVICE_CPU 1
#define TF_DEVICE_CUDA 2
#define TF_DEVICE_CUDA_HOST 3
#define TF_DEVICE_ROCM 10
#define TF_DEVICE_META 0 /* not in DLPack; never handed to a kernel */

typedef struct tf_device {
  int32_t device_type; /* TF_DEVICE_* (DLDeviceType) */
  int32_t device_id;   /* ordinal of the device, 0 for the CPU */
} tf_device;

/* Type codes use DLPack's DLDataTypeCode values. A kernel is keyed by one of
   these (code, bits) pairs, with lanes 1:
     dtype float32, float64, float16 (TF_DTYPE_FLOAT), bfloat16: since 1.0
     dtype int8, int16, int32, int64, uint8, bool: since 1.0
     dtype uint16, uint32, uint64: since 1.2 */
#define TF_DTYPE_INT 0
#define TF_DTYPE_UINT 1
#define TF_DTYPE_FLOAT 2
#define TF_DTYPE_BFLOAT 4
#define TF_DTYPE_BOOL 6

typedef struct tf_dtype {
  uint8_t code;   /* TF_DTYPE_* */
  uint8_t bits;   /* 8, 16, 32 or 64; bool is 8 bits, one byte each */
  uint16_t lanes; /* always 1 in ABI v1 */
} tf_dtype;

/* Bits of tf_tensor.flags. */
#define TF_TENSOR_CONTIGUOUS 1u /* row-major compact: a kernel may index
                                   data[i] for i < numel */

/* Where tf_tensor.source comes from. */
#define TF_SOURCE_NONE 0
#define TF_SOURCE_ATEN 1 /* source is an `at::Tensor*` of the torch that the
                            host runs under, borrowed for the call */

typedef struct tf_tensor {
  /* --- the DLTensor prefix --- */
  void* data;         /* start of the allocation's view; add byte_offset */
  tf_device device;   /* where data lives */
  int32_t ndim;       /* 0 for a scalar tensor */
  tf_dtype dtype;     /* element type */
  int64_t* shape;     /* ndim sizes; borrowed, never NULL when ndim > 0 */
  int64_t* strides;   /* ndim strides in ELEMENTS; never NULL when ndim > 0;
                         0 on a broadcast dimension */
  uint64_t byte_offset; /* bytes from data to element 0; always 0 from the
                           host (the offset is folded into data) */
  /* --- torchferry's own fields --- */
  const void* source; /* opaque handle of the tensor this view was read
                         from, or NULL; see source_kind */
  int32_t source_kind; /* TF_SOURCE_* */
  uint32_t flags;      /* TF_TENSOR_* bits, computed by the host */
} tf_tensor;

/* ---------------------------------------------------------------------------
 * Arguments. Inputs and attributes are tagged values so that one slot can hold
 * a tensor, an absent optional, a tensor list or a scalar.
 * ------------------------------------------------------------------------- */

#define TF_ARG_NONE 0        /* an absent optional */
#define TF_ARG_TENSOR 1      /* value.tensor */
#define TF_ARG_TENSOR_LIST 2 /* value.list.items[0 .. value.list.count) */
#define TF_ARG_INT 3         /* value.i */
#define TF_ARG_FLOAT 4       /* value.f */
#define TF_ARG_BOOL 5        /* value.i, 0 or 1 */

typedef struct tf_tensor_list {
  const tf_tensor* items;
  int64_t count;
} tf_tensor_list;

typedef struct tf_arg {
  int32_t kind; /* TF_ARG_* */
  int32_t reserved;
  union {
    const tf_tensor* tensor;
    tf_tensor_list list;
    int64_t i;
    double f;
  } value;
} tf_arg;

/* ---------------------------------------------------------------------------
 * The call. The host fills it, checked against the op's schema (ABI.md lists
 * the v1 ops and what the host guarantees for each), and hands it to a kernel.
 * ------------------------------------------------------------------------- */

typedef struct tf_host_api tf_host_api;

typedef struct tf_call {
  size_t struct_size;
  const tf_arg* inputs; /* tensors, optional tensors, tensor lists, and the
                           scalars that stand in for tensors */
  int32_t num_inputs;
  int32_t num_attrs;
  const tf_arg* attrs; /* scalar attributes, in the op's order */
  const tf_tensor* outputs; /* out: the kernel writes their elements; never
                               alias an input unless the op allows it */
  int32_t num_outputs;
  int32_t reserved;
  void* stream;      /* cudaStream_t (or the device's equivalent) to enqueue
                        on; NULL on the CPU */
  void* kernel_data; /* tf_kernel.kernel_data of the kernel being called */
  const tf_host_api* host; /* the same table the entry received */
  void* error_sink; /* pass to host->set_error to report a failure */
} tf_call;

typedef tf_status (*tf_kernel_fn)(const tf_call* call);

/* ---------------------------------------------------------------------------
 * Ops a plugin declares (since 1.1). Besides the built-in ops (ABI.md), a
 * plugin may bring ops of its own: each is declared once, with a schema, and
 * then served by the plugin's kernels like any other op.
 * ------------------------------------------------------------------------- */

/* since 1.1: the most dimensions of any tensor a kernel sees, and of an
   output a declared op's infer gives: the host refuses a deeper tensor before
   any other check. */
#define TF_MAX_NDIM 64

/* since 1.2: the most ops one plugin may declare (tf_plugin.num_ops); the
   loader has refused more since 1.1, and names the limit. */
#define TF_MAX_DECLARED_OPS 256

/* since 1.1: what an output will be, filled by tf_op_decl.infer. */
typedef struct tf_tensor_spec {
  tf_dtype dtype;             /* out */
  int32_t ndim;               /* out: 0 .. TF_MAX_NDIM */
  int64_t shape[TF_MAX_NDIM]; /* out: ndim sizes, each >= 0 */
} tf_tensor_spec;

/* since 1.1: gives each return's dtype and shape from the call's inputs and attrs (as a
   kernel would see them; `outputs` and `stream` are NULL and tensor data must
   not be read: under torch.compile the tensors have no data). Fills
   specs[0 .. num_specs), one per return in the schema's order (an argument
   written in place has none), and returns TF_OK, or reports why the
   arguments do not fit the op through call->host->set_error (e.g.
   TF_ERROR_INVALID_ARGUMENT: "x and y differ in shape: [2, 3] and [3]"). The
   host allocates the outputs from the specs, or checks the user's out=
   against them; it refuses a negative size, a rank above TF_MAX_NDIM or an
   unknown dtype. Must be re-entrant, like a kernel. */
typedef tf_status (*tf_infer_fn)(const tf_call* call, tf_tensor_spec* specs,
                                 int32_t num_specs);

/* since 1.1 */
typedef struct tf_op_decl {
  size_t struct_size;
  /* "namespace::name", each part [a-z_][a-z0-9_]*, 1 to 63 characters, not
     a Python keyword nor a dunder name (__x__); the namespace is the
     vendor's (the plugin's name is a good choice). */
  const char* name;
  /* torch's schema language, the name included (ABI.md "Declared ops"):
     "acme::fused_gelu(Tensor x, *, float approximate=0.0) -> Tensor". */
  const char* schema;
  tf_infer_fn infer; /* never NULL */
  const char* doc;   /* one line for Python's help(), UTF-8; may be NULL */
} tf_op_decl;

/* ---------------------------------------------------------------------------
 * Host services, handed to the entry function. Valid until the process ends.
 * ------------------------------------------------------------------------- */

#define TF_LOG_DEBUG 0
#define TF_LOG_INFO 1
#define TF_LOG_WARN 2
#define TF_LOG_ERROR 3

/* since 1.2: one share of a parallel loop, the indices [begin, end). */
typedef void (*tf_parallel_fn)(int64_t begin, int64_t end, void* ctx);

struct tf_host_api {
  size_t struct_size;
  uint32_t abi_version_major; /* the host's TF_ABI_VERSION_* */
  uint32_t abi_version_minor;
  /* Writes one line to the host's log, tagged with the plugin's name. */
  void (*log)(int32_t level, const char* plugin_name, const char* message);
  /* Records why a kernel or init failed; the host copies `message` (UTF-8),
     adds the plugin's name and raises it in the caller's language. Returns
     `status` so a kernel can `return host->set_error(sink, status, msg);`. */
  tf_status (*set_error)(void* error_sink, tf_status status,
                         const char* message); /* out: error_sink */
  /* Answers a question about the running host, or NULL for an unknown key
     (a key newer than the host). The string lives until the process ends.
       key "host.version": since 1.0
       key "torch.version": since 1.0 (e.g. "2.14.1", NULL before torch is
         found) */
  const char* (*query)(const char* key);
  /* --- since 1.2 --- */
  /* Parallel work on the host's intra-op threads: torch's own pool where
     torch exports one (torch_parallel_for), else the host's pool, which
     follows torch.set_num_threads. parallel_for splits [begin, end) into at
     most min(num_threads(), ceil((end - begin) / grain)) contiguous shares
     (grain < 1 counts as 1; a share may hold fewer than grain indices) and
     calls fn once per share, each index exactly once; the calling thread runs
     a share too, and the call returns when every share has. fn runs inline
     over the whole range on the calling thread when the range is at most one
     grain, when num_threads() is 1, when called from inside fn (nested), and
     when another thread's region holds the host's own pool. Which thread runs
     which share is unspecified: a result that must not depend on the thread
     count must not depend on the split. fn must not throw, call into Python,
     or use any host service but num_threads and thread_index; it reports
     failure through ctx (the host cannot stop the other shares). Returns
     TF_ERROR_INVALID_ARGUMENT for end < begin or a NULL fn (fn not called),
     TF_ERROR_INTERNAL if torch's pool reports a failure (shares may have
     run), else TF_OK once every share has run. Safe after fork() in the
     child (the host's own pool serves there), and from many threads at
     once. */
  tf_status (*parallel_for)(int64_t begin, int64_t end, int64_t grain,
                            tf_parallel_fn fn, void* ctx);
  /* The threads parallel_for may use, the caller's included (>= 1). */
  int32_t (*num_threads)(void);
  /* Inside a share: the running thread's index, 0 .. num_threads() - 1, for
     per-thread scratch; 0 outside a parallel region. */
  int32_t (*thread_index)(void);
};

/* ---------------------------------------------------------------------------
 * The plugin descriptor, returned by the entry function. It and everything
 * it points to stay valid and unchanged until the library is unloaded.
 * ------------------------------------------------------------------------- */

/* Plugin kinds decide precedence: a native kernel is always chosen before a
   fallback kernel for the same (op, device type, dtype). */
#define TF_PLUGIN_NATIVE 0
#define TF_PLUGIN_FALLBACK 1

typedef struct tf_kernel {
  size_t struct_size;
  const char* op;      /* the op's name, e.g. "add" (ABI.md lists them) */
  int32_t device_type; /* TF_DEVICE_* */
  tf_dtype dtype;      /* dtype of the op's first tensor input */
  tf_kernel_fn fn;     /* never NULL */
  void* kernel_data;   /* passed back as tf_call.kernel_data */
} tf_kernel;

typedef struct tf_plugin {
  size_t struct_size;
  uint32_t abi_version_major; /* the TF_ABI_VERSION_* the plugin was built
                                 against */
  uint32_t abi_version_minor;
  const char* name;    /* [a-z0-9_]+, unique among loaded plugins */
  const char* version; /* the plugin's own version, free text */
  int32_t kind;        /* TF_PLUGIN_NATIVE or TF_PLUGIN_FALLBACK */
  int32_t reserved;
  /* Called once after validation, before any kernel. May be NULL. A failure
     (with a message through host->set_error) makes the host skip the plugin
     and report the message. */
  tf_status (*init)(void* error_sink);
  /* Sets a plugin-defined option (e.g. "strategy" = "pool") from the user
     (torchferry.plugins.set_option in Python). May be NULL: no options.
     An unknown key or bad value is reported through host->set_error. May be
     called while kernels of this plugin run on other threads: apply the
     change atomically (the host does not stop them). */
  tf_status (*set_option)(const char* key, const char* value,
                          void* error_sink);
  /* An array of num_kernels entries; each has struct_size set to the same
     sizeof(tf_kernel), which is also the array's stride. */
  const tf_kernel* kernels;
  size_t num_kernels;
  /* --- since 1.1 --- */
  /* An array of num_ops declarations, each with struct_size set to the same
     sizeof(tf_op_decl), which is also the array's stride. Kernels name a
     declared op by its full name ("acme::fused_gelu"). NULL when none.
     The loader refuses a plugin with more than TF_MAX_DECLARED_OPS. */
  const tf_op_decl* ops;
  size_t num_ops;
} tf_plugin;

/* since 1.1: the size each growing struct had in a minor version, the end
   of its last field then. A reader compares struct_size with these, never
   with the sizeof() it was compiled with (that grows with every minor). A
   minor that appends to a struct adds its TF_*_V1_N_SIZE here, dated on its
   own line with a trailing since 1.N. */
#define TF_PLUGIN_V1_0_SIZE (offsetof(tf_plugin, num_kernels) + sizeof(size_t))
#define TF_PLUGIN_V1_1_SIZE (offsetof(tf_plugin, num_ops) + sizeof(size_t))
#define TF_KERNEL_V1_0_SIZE (offsetof(tf_kernel, kernel_data) + sizeof(void*))
#define TF_HOST_API_V1_0_SIZE (offsetof(tf_host_api, query) + sizeof(void*))
#define TF_CALL_V1_0_SIZE (offsetof(tf_call, error_sink) + sizeof(void*))
#define TF_OP_DECL_V1_1_SIZE (offsetof(tf_op_decl, doc) + sizeof(void*))
#define TF_HOST_API_V1_2_SIZE \
  (offsetof(tf_host_api, thread_index) + sizeof(void*)) /* since 1.2 */

/* The entry function. Returns the plugin's descriptor, or NULL when the plugin
   cannot serve this host (it should log why through host->log first). */
typedef const tf_plugin* (*tf_plugin_entry_fn)(uint32_t host_abi_major,
                                               uint32_t host_abi_minor,
                                               const tf_host_api* host);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TORCHFERRY_ABI_H_ */
