// The built-in ops, one entry each: everything about an op is here, and
// every other list is derived from this one. The loader keys its kernel
// registry by an op's index in this table; core derives from each entry the
// Python function (name, signature, doc), the argument checks and the output
// shape; abi/ABI.md's op table, torchferry/ops.pyi and
// torchferry.ops.schemas() are generated from it (`./dev generate`, checked
// by tests/python/test_op_table.py).
//
// Adding an op: append an entry (an op's index is part of the registry key,
// so entries are never reordered or removed within ABI major 1; the frozen
// op lists of tests/abi/v1_*/ops.txt hold them there), date it with the
// header's TF_ABI_VERSION_MINOR (`minor`), give it a
// Geometry (a new one only when no existing rule shapes its output, and its
// rule in PrepareFor), write its kernels, and test it.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "loader/dtype_table.h"
#include "loader/op_schema.h"

namespace torchferry {

// A set of the dtypes in loader/dtype_table.h, one bit per DtypeIndex.
// Each op lists exactly the dtypes the default plugins (cpu, with the ATen
// fallback) serve on the CPU: ops.schemas() and ABI.md report it, and a test
// calls every one. An op whose set holds only float dtypes is refused other
// dtypes by the host; for the others, whether a kernel exists is the
// registry's business (a plugin may serve more than the set).
class DtypeSet {
 public:
  constexpr DtypeSet() = default;
  constexpr DtypeSet(std::initializer_list<DtypeIndex> dtypes) {
    for (DtypeIndex d : dtypes) bits_ |= Bit(d);
  }
  constexpr bool Has(DtypeIndex d) const { return (bits_ & Bit(d)) != 0; }
  constexpr DtypeSet operator|(DtypeSet other) const {
    DtypeSet joined;
    joined.bits_ = bits_ | other.bits_;
    return joined;
  }
  constexpr bool operator==(DtypeSet other) const {
    return bits_ == other.bits_;
  }
  // Nothing but float dtypes: the host checks that the input is one.
  constexpr bool FloatOnly() const {
    for (int i = 0; i < kNumDtypes; ++i) {
      const auto d = static_cast<DtypeIndex>(i);
      if (Has(d) && !Dtype(d).is_float) return false;
    }
    return bits_ != 0;
  }

 private:
  static constexpr uint32_t Bit(DtypeIndex d) { return 1u << d; }
  uint32_t bits_ = 0;
};

namespace dtype_sets {
inline constexpr DtypeSet kFloat{kFloat32, kFloat64, kFloat16, kBFloat16};
inline constexpr DtypeSet kSignedInt{kInt8, kInt16, kInt32, kInt64};
inline constexpr DtypeSet kUInt8{::torchferry::kUInt8};
inline constexpr DtypeSet kBool{::torchferry::kBool};
// torch computes little beyond mul, casts and data movement for these.
inline constexpr DtypeSet kWideUnsigned{
    ::torchferry::kUInt16, ::torchferry::kUInt32, ::torchferry::kUInt64};
inline constexpr DtypeSet kAll =
    kFloat | kSignedInt | kUInt8 | kBool | kWideUnsigned;
// abs and neg: torch has no kernel for bool or the wide unsigned dtypes.
inline constexpr DtypeSet kNumbers = kFloat | kSignedInt | kUInt8;
}  // namespace dtype_sets

// May an output be the very same view (data, shape, strides) as an input?
// No other overlap is ever passed to a kernel.
enum class AliasRule : uint8_t {
  kNone,
  kExact,
};

// How the output's shape follows from the inputs, and the rest of what the
// host checks and rewrites that a schema cannot say. Each value has one
// preparation rule, which PrepareFor (core/prepare/prepare.h) names.
enum class Geometry : uint8_t {
  kSameShape,      // out: the input's shape
  kBroadcast,      // tensor inputs broadcast together; out: the result
  kClamp,          // bounds: a number, a tensor (broadcast) or None
  kStack,          // out: the list's common shape with its count at dim
  kCast,           // out: the input's shape, any dtype (the cast's target)
  kLastDimHalved,  // out: the input's shape with its last dim halved
  kRowNorm,        // weight: 1-D, the input's last dim
  kSoftmax,        // dim wrapped; a 0-dim input reaches kernels as [1]
  kMatmul,         // [B, m, k] x [B, k, n] -> [B, m, n]
  kNoop,           // *tensors, no output: measures dispatch
  kEmbedding,      // ids (int32/int64) x table [num, dim] -> ids.shape + [dim]
  kCat,            // a list joined along an existing dim
  kDeclared,       // a plugin's op (ABI 1.1): its infer gives the output
  kRotary,         // cos, sin: [..., r/2], broadcast to input.shape[:-1]
  kAttention,      // q, k, v, mask: torch's scaled_dot_product_attention
  kLinear,      // input [..., K], weight [N, K] -> [..., N], as matmul's shapes
  kAddRowNorm,  // residual += input in place, then kRowNorm of residual
};

// Whether an op of this geometry combines many terms into one result (a
// row's norm, a dot product) in an order its kernel chooses: its float
// results are held to a looser tolerance (ops.schemas()'s "accumulates",
// torchferry.check). A declared op's results are its plugin's to bound.
constexpr bool Accumulates(Geometry geometry) {
  switch (geometry) {
    case Geometry::kRowNorm:
    case Geometry::kAddRowNorm:
    case Geometry::kSoftmax:
    case Geometry::kMatmul:
    case Geometry::kLinear:
    case Geometry::kAttention:
    case Geometry::kRotary:
      return true;
    default:
      return false;
  }
}

struct OpEntry {
  // Torch's schema language (loader/op_schema.h). Every op also takes the
  // keyword-only out= (unless the schema declares its own) and stream=.
  std::string_view schema;
  DtypeSet dtypes;  // exactly those the default plugins serve on the CPU
  AliasRule alias;
  Geometry geometry;
  std::string_view doc;       // one line: help(), schemas(), the stubs
  std::string_view contract;  // for ABI.md: what a kernel receives and does
  // The ABI minor that introduced the op (1.x): a host of an older minor does
  // not know it. Ops are appended in the order of their minors, and a new op
  // takes the minor of the header it enters (TF_ABI_VERSION_MINOR).
  uint32_t minor = 0;
};

inline constexpr OpEntry kOpTable[] = {
    {"abs(Tensor input) -> Tensor", dtype_sets::kNumbers, AliasRule::kExact,
     Geometry::kSameShape, "out = |input|",
     "inputs: x. out: x's shape and dtype. abs of a uint8 is itself. Results "
     "do not depend on the host's thread count: a kernel splits work over "
     "parallel_for only between independent outputs."},
    {"neg(Tensor input) -> Tensor", dtype_sets::kNumbers, AliasRule::kExact,
     Geometry::kSameShape, "out = -input",
     "inputs: x. out: x's shape and dtype. neg of a uint8 wraps modulo "
     "2**8, as torch's. Results do not depend on the host's thread count: a "
     "kernel splits work over parallel_for only between independent outputs."},
    {"exp(Tensor input) -> Tensor", dtype_sets::kFloat, AliasRule::kExact,
     Geometry::kSameShape, "out = e**input",
     "inputs: x. out: x's shape and dtype. Results do not depend on the host's "
     "thread count: a kernel splits work over parallel_for only between "
     "independent outputs."},
    {"silu(Tensor input) -> Tensor", dtype_sets::kFloat, AliasRule::kExact,
     Geometry::kSameShape, "out = input * sigmoid(input)",
     "inputs: x. out: x's shape and dtype; silu(x) = x / (1 + exp(-x)). "
     "Results do not depend on the host's thread count: a kernel splits work "
     "over parallel_for only between independent outputs."},
    {"add(Tensor input, Tensor other, Scalar alpha=1) -> Tensor",
     dtype_sets::kAll, AliasRule::kExact, Geometry::kBroadcast,
     "out = input + alpha * other, broadcasting; other may be a Python number",
     "inputs: x, y, broadcast to out's shape (same ndim, stride 0 on "
     "broadcast dims). attrs: alpha, `TF_ARG_FLOAT` for float dtypes, "
     "`TF_ARG_INT` for int dtypes. out = x + alpha * y, computed in the "
     "compute type (float32 for float16 and bfloat16) and rounded once. "
     "Numbers, as torch applies them: a Python number `other` is a 0-dim y "
     "of x's dtype, cast unchecked (an int wraps modulo 2**bits, a float "
     "rounds: 70000.0 is inf in float16); alpha is checked into the dtype (a "
     "value past its range is refused, a bool only for bool) and a float "
     "alpha arrives rounded to the dtype. The host also runs mul(x, n) of a "
     "float16 or bfloat16 x here, as add(-0.0, x, alpha=n) with n "
     "unrounded. Results do not depend on the host's thread count: a kernel "
     "splits work over parallel_for only between independent outputs."},
    {"mul(Tensor input, Tensor other) -> Tensor", dtype_sets::kAll,
     AliasRule::kExact, Geometry::kBroadcast,
     "out = input * other, broadcasting; other may be a Python number",
     "inputs: x, y, broadcast as for add. out = x * y. A Python number "
     "`other` is a 0-dim y of x's dtype, cast unchecked as add's; on "
     "float16 and bfloat16 torch keeps it in float32, so the host runs "
     "add's kernel instead (see add). Results do not depend on the host's "
     "thread count: a kernel splits work over parallel_for only between "
     "independent outputs."},
    {"clamp(Tensor input, Tensor? min=None, Tensor? max=None) -> Tensor",
     dtype_sets::kNumbers | dtype_sets::kBool, AliasRule::kExact,
     Geometry::kClamp,
     "out = min(max(input, min), max); each bound a number, a tensor or None",
     "inputs: x, min, max; each bound `TF_ARG_NONE`, `TF_ARG_TENSOR` (same "
     "dtype, broadcast to out's shape), `TF_ARG_FLOAT` (float dtypes) or "
     "`TF_ARG_INT` (int dtypes and bool, where nonzero is true); at least "
     "one is present. out = min(max(x, min), max); NaN in x propagates. A "
     "number bound is of x's category or a lower one (bool < int < float: "
     "torch would promote clamp(bool, max=-3) to int64, the host refuses "
     "it) and is checked into the dtype (int8 takes -128 to 127, uint8 "
     "-255 to 255, float16 -65504 to 65504, inf and NaN pass); a float "
     "arrives rounded to the dtype. Results do not depend on the host's thread "
     "count: a kernel splits work over parallel_for only between independent "
     "outputs."},
    {"stack(Tensor[] tensors, int dim=0) -> Tensor", dtype_sets::kAll,
     AliasRule::kNone, Geometry::kStack, "tensors joined along a new dim",
     "inputs: xs, `TF_ARG_TENSOR_LIST`, count >= 1, one shape and dtype. "
     "attrs: dim, `TF_ARG_INT` in [0, x.ndim]. out: x's shape with count "
     "inserted at dim. Results do not depend on the host's thread count: a "
     "kernel splits work over parallel_for only between independent outputs."},
    {"cast(Tensor input, *, Tensor(a!) out) -> Tensor(a!)", dtype_sets::kAll,
     AliasRule::kNone, Geometry::kCast, "input converted to out's dtype",
     "inputs: x. out: x's shape, any dtype the plugin carries. Float to int "
     "truncates toward zero; to bool is `x != 0`; the kernel is keyed by x's "
     "dtype and returns `TF_ERROR_UNSUPPORTED` for an out dtype it lacks. "
     "Results do not depend on the host's thread count: a kernel splits work "
     "over parallel_for only between independent outputs."},
    {"silu_and_mul(Tensor input) -> Tensor", dtype_sets::kFloat,
     AliasRule::kNone, Geometry::kLastDimHalved,
     "silu(input[..., :d]) * input[..., d:]",
     "inputs: x, ndim >= 1, last dim 2d. out: x's shape with last dim d; "
     "out = silu(x[..., :d]) * x[..., d:]. Results do not depend on the host's "
     "thread count: a kernel splits work over parallel_for only between "
     "independent outputs."},
    {"rms_norm(Tensor input, Tensor weight, float eps=1e-06) -> Tensor",
     dtype_sets::kFloat, AliasRule::kNone, Geometry::kRowNorm,
     "input / sqrt(mean(input**2) + eps) * weight, over the last dim",
     "inputs: x, ndim >= 1; weight, 1-D of x's last dim, same dtype. attrs: "
     "eps, `TF_ARG_FLOAT`. out: x's shape. out = x / sqrt(mean(x^2 over the "
     "last dim) + eps) * weight; accumulate in at least float32, no "
     "accumulator adding more than 256 terms in sequence: partial sums "
     "(lanes, blocks, threads) meet in float64, so that the error stays a "
     "blocked sum's at any length and stride. eps is any Python number, as "
     "torch's, never rounded to the dtype (1e-8 on float16 is not 0). Results "
     "do not depend on the host's thread count: a kernel splits work over "
     "parallel_for only between independent outputs."},
    {"softmax(Tensor input, int dim=-1) -> Tensor", dtype_sets::kFloat,
     AliasRule::kNone, Geometry::kSoftmax,
     "exp(input) / sum(exp(input)) "
     "along dim",
     "inputs: x, ndim >= 1 (0-dim arrives as shape [1]). attrs: dim, "
     "`TF_ARG_INT` in [0, ndim). out: x's shape; the sum of exponentials: "
     "accumulate in at least float32, no accumulator adding more than 256 "
     "terms in sequence: partial sums (lanes, blocks, threads) meet in "
     "float64, so that the error stays a blocked sum's at any length and "
     "stride. Results do not depend on the host's thread count: a kernel "
     "splits work over parallel_for only between independent outputs."},
    {"matmul(Tensor input, Tensor other) -> Tensor", dtype_sets::kFloat,
     AliasRule::kNone, Geometry::kMatmul,
     "matrix product with torch.matmul's rules: a 1-D operand is a row "
     "(input) or a column (other), batch dims of any count broadcast",
     "inputs: a [B, m, k], b [B, k, n]. out: [B, m, n]. Always 3-D: the host "
     "views a 1-D operand as [1, k] or [k, 1], merges the broadcast batch "
     "dims into B where their strides nest (stride 0 on a broadcast one) and "
     "calls the kernel once per index of the batch dims that do not. "
     "Accumulate in at least float32; a depth above 16384 in chunks of at "
     "most that, whose products meet in float64, so that a long depth's "
     "error stays near torch's (a kernel on a BLAS library keeps the "
     "library's order, as torch does). Results do not depend on the host's "
     "thread count: a kernel splits work over parallel_for only between "
     "independent outputs."},
    {"noop(Tensor[] tensors) -> ()", dtype_sets::kAll, AliasRule::kNone,
     Geometry::kNoop,
     "bridges every tensor and calls a kernel that reads the views and does "
     "nothing (measures dispatch)",
     "inputs: any number of `TF_ARG_TENSOR`. Reads every view and does "
     "nothing; keyed by the first tensor, or (CPU, float32) when there is "
     "none."},
    // --- attention (core/prepare/prepare_attention.cc) ---
    {"rotary_embedding(Tensor input, Tensor cos, Tensor sin, *, bool "
     "interleaved=False) -> Tensor",
     dtype_sets::kFloat, AliasRule::kExact, Geometry::kRotary,
     "rotates input's first r of the last dim by (cos, sin) of last dim r/2: "
     "pairs (i, i + r/2), or (2i, 2i + 1) when interleaved",
     "inputs: x [..., D]; cos, sin of x's dtype, each [..., h] with 2h <= D, "
     "broadcast to x.shape[:-1] + [h] (same ndim as x, stride 0 on broadcast "
     "dims). attrs: interleaved, `TF_ARG_BOOL`. out: x's shape; for each "
     "pair (a, b) = (i, i + h), or (2i, 2i + 1) when interleaved, out[a] = "
     "x[a] cos[i] - x[b] sin[i], out[b] = x[b] cos[i] + x[a] sin[i]; dims "
     "from 2h on are x's. Compute in at least float32. Results do not depend "
     "on the host's thread count: a kernel splits work over parallel_for only "
     "between independent outputs.",
     2},
    {"scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, "
     "Tensor? attn_mask=None, *, bool is_causal=False, float? scale=None, "
     "bool enable_gqa=False, bool lower_right=False) -> Tensor",
     dtype_sets::kFloat, AliasRule::kNone, Geometry::kAttention,
     "softmax(query @ key.mT * scale + mask) @ value, as torch's "
     "scaled_dot_product_attention without dropout; lower_right aligns the "
     "causal diagonal to the end of the keys",
     "inputs: q [..., H, L, E], k [..., Hkv, S, E], v [..., Hkv, S, Ev], "
     "mask (`TF_ARG_NONE`, or bool or q's dtype, [..., H, L, S]): one ndim "
     ">= 3, batch dims broadcast to out's (stride 0); H a multiple of Hkv, "
     "head h reads kv head h / (H / Hkv). attrs: causal, `TF_ARG_INT` (0: "
     "none, 1: key j <= query i, 2: j <= i + S - L), scale, `TF_ARG_FLOAT`, "
     "any Python number as torch's, never rounded to the dtype "
     "(the host passes 1 when E is 0: every score is then 0, unscaled, as in "
     "torch). out: [..., H, L, Ev]. A bool mask keeps True; a row that keeps "
     "no key is 0, as in torch (2.5 and later); a NaN scale with E and S "
     "above 0 makes every element of out NaN, masked rows too, as in torch. "
     "Accumulate in float32 within a block of at most 256 keys; the running "
     "sum of weights and the output carry across blocks in float64. Results do "
     "not depend on the host's thread count: a kernel splits work over "
     "parallel_for only between independent outputs.",
     2},
    // --- linear (core/prepare/prepare_linear.cc) ---
    {"linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
     dtype_sets::kFloat, AliasRule::kNone, Geometry::kLinear,
     "input @ weight.T + bias, weight in nn.Linear's [out_features, "
     "in_features] layout, any batch dims",
     "inputs: x [B, M, K]; w [B, K, N], the view weight.t() of the [N, K] "
     "weight with batch stride 0 (a matmul kernel takes it as is); bias "
     "`TF_ARG_NONE` or [N]. out: [B, M, N]. The host views input [..., K] "
     "and out [..., N] as [B, M, ...] (every leading dim in M when their "
     "strides nest, else the last in M and the others in B when those nest, "
     "else the last two as B and M and the host repeats the call over the "
     "others). out = x @ w + bias; x @ w accumulated as matmul's. Results do "
     "not depend on the host's thread count: a kernel splits work over "
     "parallel_for only between independent outputs.",
     2},
    // embedding and cat.
    {"embedding(Tensor input, Tensor weight) -> Tensor", dtype_sets::kAll,
     AliasRule::kNone, Geometry::kEmbedding,
     "rows of weight picked by the int32/int64 ids in input",
     "inputs: ids, int32 or int64, any shape; table [num, dim], any dtype. "
     "out: ids' shape + [dim], the table's dtype; keyed by the table's "
     "dtype. out[i..., :] = table[ids[i...], :]. The kernel checks every id: "
     "one outside [0, num) is `TF_ERROR_OUT_OF_RANGE` naming the id, its "
     "index and num, and no row outside the table is read. Results do not "
     "depend on the host's thread count: a kernel splits work over "
     "parallel_for only between independent outputs.",
     2},
    {"cat(Tensor[] tensors, int dim=0) -> Tensor", dtype_sets::kAll,
     AliasRule::kNone, Geometry::kCat, "tensors joined along an existing dim",
     "inputs: xs, `TF_ARG_TENSOR_LIST`, count >= 1, one dtype and ndim >= 1, "
     "shapes equal except at dim (the host drops torch's legacy 1-D empty "
     "tensors beside tensors of another ndim). attrs: dim, `TF_ARG_INT` in "
     "[0, ndim). out: the shape with the sizes at dim summed. Results do not "
     "depend on the host's thread count: a kernel splits work over "
     "parallel_for only between independent outputs.",
     2},
    {"add_rms_norm(Tensor input, Tensor(a!) residual, Tensor weight, *, "
     "float eps=1e-06) -> Tensor",
     dtype_sets::kFloat, AliasRule::kNone, Geometry::kAddRowNorm,
     "residual += input in place, then rms_norm(residual, weight, eps): a "
     "decoder's residual add and norm in one pass, as vLLM's "
     "fused_add_rms_norm",
     "inputs: x, ndim >= 1; weight, 1-D of x's last dim, same dtype. attrs: "
     "eps, `TF_ARG_FLOAT`. outputs: out, then residual, both x's shape and "
     "dtype; residual is read and written. residual = residual + x (rounded "
     "to the dtype, as add), then out = rms_norm of the new residual, as "
     "rms_norm computes it (its accumulation and eps included). No two of "
     "x, weight, residual and out overlap. Results do not depend on the host's "
     "thread count: a kernel splits work over parallel_for only between "
     "independent outputs.",
     2},
};

inline constexpr size_t kNumOps = std::size(kOpTable);

// Ops enter in the order of their minors and never beyond the header's, so
// that the ops of minor m are exactly a prefix of the table.
constexpr bool OpMinorsAscend() {
  for (size_t i = 0; i < kNumOps; ++i) {
    if (kOpTable[i].minor > TF_ABI_VERSION_MINOR) return false;
    if (i > 0 && kOpTable[i].minor < kOpTable[i - 1].minor) return false;
  }
  return true;
}
static_assert(OpMinorsAscend(),
              "kOpTable: an op's minor is below an earlier op's or above "
              "TF_ABI_VERSION_MINOR; date a new op with the header's minor");

// Whether a host of ABI minor `host_minor` knows built-in op `index`.
constexpr bool OpKnownAtMinor(int index, uint32_t host_minor) {
  return index >= 0 && static_cast<size_t>(index) < kNumOps &&
         kOpTable[index].minor <= host_minor;
}

// An op's index in kOpTable. A strong type: the registry, core's caches and
// the Python functions all key on it.
enum class OpId : uint16_t {};

// Built-in ops only: ids past kNumOps are ops that plugins declared, which
// the registry names (Registry::declared_ops).
constexpr std::string_view OpName(OpId op) {
  return SchemaName(kOpTable[static_cast<size_t>(op)].schema);
}
constexpr const OpEntry& Entry(OpId op) {
  return kOpTable[static_cast<size_t>(op)];
}

// The index of `op` in kOpTable, or -1 when the host has no such op.
constexpr int OpIndex(std::string_view op) {
  for (size_t i = 0; i < kNumOps; ++i) {
    if (SchemaName(kOpTable[i].schema) == op) return static_cast<int>(i);
  }
  return -1;
}

namespace op_table_detail {
// Not constexpr: naming an op the table lacks in OpOf() fails to compile.
inline OpId UnknownOp() { return OpId{}; }
}  // namespace op_table_detail

// The id of a built-in op by name, for code that means one op.
constexpr OpId OpOf(std::string_view op) {
  return OpIndex(op) >= 0 ? static_cast<OpId>(OpIndex(op))
                          : op_table_detail::UnknownOp();
}

}  // namespace torchferry
