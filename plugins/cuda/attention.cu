// rotary_embedding and scaled_dot_product_attention, straightforward and
// correct rather than tuned.
//  - rotary_embedding: one thread per rotated pair (it reads both elements
//    before writing either, so out may be x) or per passed-through element.
//  - scaled_dot_product_attention: one block per query row. The keys go by
//    in chunks of the block's size: each thread scores one key, the block
//    folds the chunk into a running maximum and sum (online softmax), and the
//    threads then accumulate p * v over the value dims in shared memory.
//    Accumulates in float32 (float64 for float64) within a chunk; the
//    running sum and p @ v across chunks are float64, so that no float32
//    sum covers more than one chunk of keys however long S is. A row that
//    keeps no key is 0, as in torch.
#include "plugins/cuda/call_util.h"
#include "plugins/cuda/element_types.cuh"
#include "plugins/cuda/launch_config.h"
#include "plugins/cuda/math.cuh"
#include "plugins/cuda/ops.h"
#include "plugins/cuda/row_reduce.cuh"
#include "plugins/cuda/strided_layout.h"

namespace torchferry::cuda {
namespace {

// ---- rotary_embedding -----------------------------------------------------

struct RotaryArgs {
  StridedLayout<4> rows;  // leading dims; strides of x, cos, sin, out
  int64_t num_rows;
  int64_t half;      // pairs per row
  int64_t head_dim;  // the row's length
  int64_t x_step, c_step, s_step, out_step;
  bool interleaved;
  bool in_place;
};

template <typename T>
__global__ void RotaryKernel(const T* x, const T* c, const T* s, T* out,
                             RotaryArgs args) {
  using A = OpMathT<T>;
  const int64_t per_row = args.head_dim - args.half;  // pairs + passed dims
  const int64_t total = args.num_rows * per_row;
  for (int64_t idx =
           static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       idx < total; idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = idx / per_row;
    const int64_t t = idx - row * per_row;
    int64_t off[4];
    args.rows.Offsets(row, off);
    if (t < args.half) {
      const int64_t a_pos = args.interleaved ? 2 * t : t;
      const int64_t b_pos = args.interleaved ? 2 * t + 1 : t + args.half;
      const A a = ToOpMath(x[off[0] + a_pos * args.x_step]);
      const A b = ToOpMath(x[off[0] + b_pos * args.x_step]);
      const A cv = ToOpMath(c[off[1] + t * args.c_step]);
      const A sv = ToOpMath(s[off[2] + t * args.s_step]);
      out[off[3] + a_pos * args.out_step] = FromOpMath<T>(a * cv - b * sv);
      out[off[3] + b_pos * args.out_step] = FromOpMath<T>(b * cv + a * sv);
    } else if (!args.in_place) {
      const int64_t j = args.half + t;  // 2 * half + (t - half)
      out[off[3] + j * args.out_step] = x[off[0] + j * args.x_step];
    }
  }
}

template <typename T>
tf_status RotaryAs(const tf_call* call) {
  const tf_tensor& x = InputTensor(call, 0);
  const tf_tensor& c = InputTensor(call, 1);
  const tf_tensor& s = InputTensor(call, 2);
  const tf_tensor& out = call->outputs[0];
  const int last = x.ndim - 1;
  RotaryArgs args;
  args.head_dim = x.shape[last];
  args.half = c.shape[last];
  args.num_rows = NumElements(last, x.shape);
  if (args.num_rows == 0 || args.head_dim == 0) return TF_OK;
  args.x_step = x.strides[last];
  args.c_step = c.strides[last];
  args.s_step = s.strides[last];
  args.out_step = out.strides[last];
  args.interleaved = AttrAsInt(call, 0, 0) != 0;
  args.in_place = out.data == x.data && args.out_step == args.x_step;
  const int64_t* strides[4] = {x.strides, c.strides, s.strides, out.strides};
  if (!BuildLayout(last, x.shape, strides, &args.rows)) {
    return Fail(call, TF_ERROR_UNSUPPORTED,
                "rotary_embedding: expected leading dimensions whose strides "
                "merge into at most %d, found %d that do not; make x "
                "contiguous first",
                kMaxRank, last);
  }
  const int64_t work = args.num_rows * (args.head_dim - args.half);
  RotaryKernel<T><<<GridFor(work), kThreadsPerBlock, 0, StreamOf(call)>>>(
      static_cast<const T*>(DataOf(x)), static_cast<const T*>(DataOf(c)),
      static_cast<const T*>(DataOf(s)), static_cast<T*>(DataOf(out)), args);
  return CheckLaunch(call, "rotary_embedding");
}

// ---- scaled_dot_product_attention ----------------------------------------

constexpr int kAttentionThreads = 128;

struct AttentionArgs {
  // The batch dims; strides of q, k, v, mask, out.
  StridedLayout<5> batch;
  int64_t batch_count, heads, group, L, S, E, Ev;
  int64_t q_head, q_row, q_step;
  int64_t k_head, k_row, k_step;
  int64_t v_head, v_row, v_step;
  int64_t m_head, m_row, m_step;
  int64_t o_head, o_row, o_step;
  int causal;  // 0 none, 1 top-left, 2 lower-right
  int mask;    // 0 none, 1 bool (keep True), 2 additive
  double scale;
};

template <typename T>
__global__ void AttentionKernel(const T* q, const T* k, const T* v,
                                const void* mask, T* out, AttentionArgs a) {
  using A = OpMathT<T>;
  extern __shared__ unsigned char shared_bytes[];
  double* acc = reinterpret_cast<double*>(shared_bytes);  // Ev
  A* q_row = reinterpret_cast<A*>(acc + a.Ev);            // E
  A* p = q_row + a.E;                                     // kAttentionThreads
  const int64_t rows = a.batch_count * a.heads * a.L;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t i = row % a.L;
    const int64_t h = (row / a.L) % a.heads;
    const int64_t b = row / (a.L * a.heads);
    int64_t off[5];
    a.batch.Offsets(b, off);
    const int64_t kvh = h / a.group;
    const T* qr = q + off[0] + h * a.q_head + i * a.q_row;
    const T* kh = k + off[1] + kvh * a.k_head;
    const T* vh = v + off[2] + kvh * a.v_head;
    const int64_t m_off = off[3] + h * a.m_head + i * a.m_row;
    T* orow = out + off[4] + h * a.o_head + i * a.o_row;
    if (IsNan(static_cast<A>(a.scale)) && a.E > 0 && a.S > 0) {
      // Every score is NaN, masked ones too (torch adds the mask to them):
      // the row is NaN, as in torch. Every thread of the block takes this.
      for (int64_t e = threadIdx.x; e < a.Ev; e += blockDim.x) {
        orow[e * a.o_step] = FromOpMath<T>(static_cast<A>(a.scale));
      }
      continue;
    }
    int64_t keys = a.S;
    if (a.causal != 0) {
      const int64_t last = a.causal == 1 ? i : i + a.S - a.L;
      keys = last + 1 < a.S ? (last + 1 > 0 ? last + 1 : 0) : a.S;
    }
    __syncthreads();  // the previous row is done with the shared arrays
    for (int64_t e = threadIdx.x; e < a.E; e += blockDim.x) {
      q_row[e] = ToOpMath(qr[e * a.q_step]);
    }
    for (int64_t e = threadIdx.x; e < a.Ev; e += blockDim.x) acc[e] = 0;
    __syncthreads();
    A max = NegativeInfinity<A>();
    double sum = 0;
    for (int64_t j0 = 0; j0 < keys; j0 += blockDim.x) {
      const int64_t j = j0 + threadIdx.x;
      A score = NegativeInfinity<A>();
      if (j < keys) {
        bool kept = true;
        if (a.mask == 1) {
          kept = static_cast<const uint8_t*>(mask)[m_off + j * a.m_step] != 0;
        }
        if (kept) {
          A dot = 0;
          for (int64_t e = 0; e < a.E; ++e) {
            dot += q_row[e] * ToOpMath(kh[j * a.k_row + e * a.k_step]);
          }
          score = dot * static_cast<A>(a.scale);
          if (a.mask == 2) {
            score +=
                ToOpMath(static_cast<const T*>(mask)[m_off + j * a.m_step]);
          }
        }
      }
      const A chunk_max = RowReduce<kAttentionThreads>(score, Max{});
      // All masked: skipped. A chunk of NaN scores (a NaN query row) is
      // not: its exponentials poison the sum and the row is NaN, as in
      // torch. Every thread of the block reaches both reductions.
      const bool any_nan = __syncthreads_or(IsNan(score));
      if (chunk_max == NegativeInfinity<A>() && !any_nan) continue;
      const A new_max = chunk_max > max ? chunk_max : max;
      const A correction = Exp(max - new_max);
      const A pj = j < keys ? Exp(score - new_max) : A{0};
      sum = sum * static_cast<double>(correction) +
            static_cast<double>(RowReduce<kAttentionThreads>(pj, Plus{}));
      max = new_max;
      __syncthreads();  // the previous chunk's p is read no more
      p[threadIdx.x] = pj;
      __syncthreads();
      const int64_t threads = blockDim.x;
      const int64_t len = keys - j0 < threads ? keys - j0 : threads;
      for (int64_t e = threadIdx.x; e < a.Ev; e += blockDim.x) {
        A value = 0;
        for (int64_t jj = 0; jj < len; ++jj) {
          value += p[jj] * ToOpMath(vh[(j0 + jj) * a.v_row + e * a.v_step]);
        }
        acc[e] = acc[e] * static_cast<double>(correction) +
                 static_cast<double>(value);
      }
    }
    const double inv = sum > 0 || IsNan(sum) ? 1.0 / sum : 0.0;
    for (int64_t e = threadIdx.x; e < a.Ev; e += blockDim.x) {
      orow[e * a.o_step] = FromOpMath<T>(static_cast<A>(acc[e] * inv));
    }
  }
}

template <typename T>
tf_status AttentionAs(const tf_call* call) {
  using A = OpMathT<T>;
  const tf_tensor& q = InputTensor(call, 0);
  const tf_tensor& k = InputTensor(call, 1);
  const tf_tensor& v = InputTensor(call, 2);
  const tf_tensor* mask = call->inputs[3].kind == TF_ARG_TENSOR
                              ? call->inputs[3].value.tensor
                              : nullptr;
  const tf_tensor& out = call->outputs[0];
  const int n = q.ndim;
  AttentionArgs a;
  a.heads = out.shape[n - 3];
  a.group = a.heads / k.shape[n - 3];
  a.L = q.shape[n - 2];
  a.E = q.shape[n - 1];
  a.S = k.shape[n - 2];
  a.Ev = v.shape[n - 1];
  a.batch_count = NumElements(n - 3, out.shape);
  if (NumElements(n, out.shape) == 0) return TF_OK;
  // E and Ev bounded first: stride-0 operands may have head dims near
  // 2**63, whose sum of bytes would wrap to a small size.
  constexpr int64_t kShared = 48 * 1024;
  const size_t shared =
      a.E > kShared || a.Ev > kShared
          ? kShared + 1
          : sizeof(double) * a.Ev + sizeof(A) * (a.E + kAttentionThreads);
  if (shared > kShared) {
    return Fail(call, TF_ERROR_UNSUPPORTED,
                "scaled_dot_product_attention: head dims E = %lld and Ev = "
                "%lld need more shared memory than this kernel uses (48 KiB)",
                static_cast<long long>(a.E), static_cast<long long>(a.Ev));
  }
  const int64_t* m_strides = mask != nullptr ? mask->strides : out.strides;
  const int64_t* strides[5] = {q.strides, k.strides, v.strides, m_strides,
                               out.strides};
  if (!BuildLayout(n - 3, out.shape, strides, &a.batch)) {
    return Fail(call, TF_ERROR_UNSUPPORTED,
                "scaled_dot_product_attention: expected batch dimensions "
                "whose strides merge into at most %d",
                kMaxRank);
  }
  a.q_head = q.strides[n - 3], a.q_row = q.strides[n - 2];
  a.q_step = q.strides[n - 1];
  a.k_head = k.strides[n - 3], a.k_row = k.strides[n - 2];
  a.k_step = k.strides[n - 1];
  a.v_head = v.strides[n - 3], a.v_row = v.strides[n - 2];
  a.v_step = v.strides[n - 1];
  a.m_head = mask != nullptr ? mask->strides[n - 3] : 0;
  a.m_row = mask != nullptr ? mask->strides[n - 2] : 0;
  a.m_step = mask != nullptr ? mask->strides[n - 1] : 0;
  a.o_head = out.strides[n - 3], a.o_row = out.strides[n - 2];
  a.o_step = out.strides[n - 1];
  a.causal = static_cast<int>(AttrAsInt(call, 0, 0));
  a.scale = AttrAsDouble(call, 1, 1.0);
  a.mask = mask == nullptr ? 0 : mask->dtype.code == TF_DTYPE_BOOL ? 1 : 2;
  const int64_t rows = NumElements(n - 1, out.shape);
  const unsigned grid =
      static_cast<unsigned>(rows < kMaxBlocks ? rows : kMaxBlocks);
  AttentionKernel<T><<<grid, kAttentionThreads, shared, StreamOf(call)>>>(
      static_cast<const T*>(DataOf(q)), static_cast<const T*>(DataOf(k)),
      static_cast<const T*>(DataOf(v)),
      mask != nullptr ? DataOf(*mask) : nullptr, static_cast<T*>(DataOf(out)),
      a);
  return CheckLaunch(call, "scaled_dot_product_attention");
}

}  // namespace

tf_status RotaryEmbedding(const tf_call* call) {
  const Dtype dtype = DtypeOf(InputTensor(call, 0).dtype);
  DeviceGuard guard(call, call->outputs[0].device.device_id);
  if (guard.status() != TF_OK) return guard.status();
  return DispatchFloat(
      dtype,
      [&](auto tag) { return RotaryAs<typename decltype(tag)::type>(call); },
      [&] {
        return Fail(call, TF_ERROR_UNSUPPORTED,
                    "rotary_embedding: no kernel for %s", DtypeName(dtype));
      });
}

tf_status Attention(const tf_call* call) {
  const Dtype dtype = DtypeOf(InputTensor(call, 0).dtype);
  DeviceGuard guard(call, call->outputs[0].device.device_id);
  if (guard.status() != TF_OK) return guard.status();
  return DispatchFloat(
      dtype,
      [&](auto tag) { return AttentionAs<typename decltype(tag)::type>(call); },
      [&] {
        return Fail(call, TF_ERROR_UNSUPPORTED,
                    "scaled_dot_product_attention: no kernel for %s",
                    DtypeName(dtype));
      });
}

}  // namespace torchferry::cuda
