// The elementwise engine every pointwise kernel runs on: applies a functor to
// one, two or three input views and writes one output view of the same shape.
//
// Three speeds, tried in order:
//  1. every operand flagged contiguous: one flat loop over numel elements;
//  2. otherwise StridedWalker merges what it can, and each inner run whose
//     strides are 1 (or 0 for a broadcast input, whose value is hoisted out)
//     goes to the same flat loops;
//  3. any other run takes a plain strided loop.
// The flat loops are simple indexed loops over raw pointers, which -O3
// vectorises. Functors take and return stored element types; the kernels wrap
// Load/Store around their arithmetic.
#pragma once

#include <cstdint>
#include <utility>

#include "call.h"
#include "convert.h"
#include "isa.h"
#include "parallel.h"
#include "stream_copy.h"
#include "strided.h"

namespace torchferry::cpu {

namespace detail {

// Outputs never overlap inputs except by exact aliasing (out == x), which
// elementwise ops allow. The __restrict loops let the compiler vectorise
// without runtime overlap checks; exact aliasing takes the plain copies,
// which are correct for it because each element is read before it is written.
// Each loop exists once per instruction-set tier (see isa.h).
template <typename O, typename F, typename... P>
TF_CPU_FLATTEN void FlatLoopBase(O* __restrict o, int64_t n, const F& f,
                                 const P* __restrict... in) {
  for (int64_t i = 0; i < n; ++i) o[i] = f(in[i]...);
}
template <typename O, typename F, typename... P>
TF_CPU_AVX2 TF_CPU_FLATTEN void FlatLoopAvx2(O* __restrict o, int64_t n,
                                             const F& f,
                                             const P* __restrict... in) {
  for (int64_t i = 0; i < n; ++i) o[i] = f(in[i]...);
}
template <typename O, typename F, typename... P>
TF_CPU_AVX512 TF_CPU_FLATTEN void FlatLoopAvx512(O* __restrict o, int64_t n,
                                                 const F& f,
                                                 const P* __restrict... in) {
  for (int64_t i = 0; i < n; ++i) o[i] = f(in[i]...);
}
template <typename O, typename F, typename... P>
TF_CPU_FLATTEN void FlatLoopAliasedBase(O* o, int64_t n, const F& f,
                                        const P*... in) {
  for (int64_t i = 0; i < n; ++i) o[i] = f(in[i]...);
}
template <typename O, typename F, typename... P>
TF_CPU_AVX2 TF_CPU_FLATTEN void FlatLoopAliasedAvx2(O* o, int64_t n, const F& f,
                                                    const P*... in) {
  for (int64_t i = 0; i < n; ++i) o[i] = f(in[i]...);
}
template <typename O, typename F, typename... P>
TF_CPU_AVX512 TF_CPU_FLATTEN void FlatLoopAliasedAvx512(O* o, int64_t n,
                                                        const F& f,
                                                        const P*... in) {
  for (int64_t i = 0; i < n; ++i) o[i] = f(in[i]...);
}

// The flat loop for an output too large to stay in cache (StreamsOutput):
// kStreamChunkBytes of results at a time go to a stack buffer, then to out
// with non-temporal stores, so that no output line is read in before it is
// written. add float32 [4096, 4096] at one thread on zen4, a C loop over the
// same buffers, median of 40: 10.1 ms with plain stores, 7.7 ms this way.
// Lines before out's first aligned one, and the tail, take plain stores.
constexpr int64_t kStreamChunkBytes = 256;

template <typename O, typename F, typename... P>
inline __attribute__((always_inline)) void StreamedLoop(
    O* __restrict o, int64_t n, const F& f, const P* __restrict... in) {
  constexpr int64_t kChunk = kStreamChunkBytes / sizeof(O);
  const int64_t head = ElementsToLine(o, sizeof(O));
  int64_t i = 0;
  if (head >= 0) {
    for (; i < head && i < n; ++i) o[i] = f(in[i]...);
    for (; i + kChunk <= n; i += kChunk) {
      alignas(kLineBytes) O chunk[kChunk];
      for (int64_t j = 0; j < kChunk; ++j) chunk[j] = f(in[i + j]...);
      StreamLines(o + i, chunk, kStreamChunkBytes / kLineBytes);
    }
  }
  for (; i < n; ++i) o[i] = f(in[i]...);
  StreamFence();
}
template <typename O, typename F, typename... P>
TF_CPU_FLATTEN void StreamedLoopBase(O* __restrict o, int64_t n, const F& f,
                                     const P* __restrict... in) {
  StreamedLoop(o, n, f, in...);
}
template <typename O, typename F, typename... P>
TF_CPU_AVX2 TF_CPU_FLATTEN void StreamedLoopAvx2(O* __restrict o, int64_t n,
                                                 const F& f,
                                                 const P* __restrict... in) {
  StreamedLoop(o, n, f, in...);
}
template <typename O, typename F, typename... P>
TF_CPU_AVX512 TF_CPU_FLATTEN void StreamedLoopAvx512(
    O* __restrict o, int64_t n, const F& f, const P* __restrict... in) {
  StreamedLoop(o, n, f, in...);
}

// A run shorter than this never streams: its fence would cost more than
// its few lines save.
constexpr int64_t kStreamRunBytes = 4 * kStreamChunkBytes;

// `stream`: the whole output is large enough to stream (StreamsOutput). An
// output aliased with an input is already in cache when it is written, so
// it never streams.
template <typename O, typename F, typename... P>
inline void FlatLoop(bool aliased, bool stream, O* o, int64_t n, const F& f,
                     const P*... in) {
  if (aliased) {
    TF_CPU_DISPATCH(FlatLoopAliased, o, n, f, in...);
  } else if (stream && n * static_cast<int64_t>(sizeof(O)) >= kStreamRunBytes) {
    TF_CPU_DISPATCH(StreamedLoop, o, n, f, in...);
  } else {
    TF_CPU_DISPATCH(FlatLoop, o, n, f, in...);
  }
}

inline bool Same(const void* a, const void* b) { return a == b; }

template <typename O, typename A, typename F>
inline void Flat1(bool stream, O* o, const A* a, int64_t n, const F& f) {
  FlatLoop(Same(o, a), stream, o, n, f, a);
}
template <typename O, typename A, typename B, typename F>
inline void Flat2(bool stream, O* o, const A* a, const B* b, int64_t n,
                  const F& f) {
  FlatLoop(Same(o, a) || Same(o, b), stream, o, n, f, a, b);
}
template <typename O, typename A, typename B, typename C, typename F>
inline void Flat3(bool stream, O* o, const A* a, const B* b, const C* c,
                  int64_t n, const F& f) {
  FlatLoop(Same(o, a) || Same(o, b) || Same(o, c), stream, o, n, f, a, b, c);
}

// Elementwise work splits in blocks of kSplitBlock positions, so that a
// share's vector loops group elements exactly as one thread's would.
constexpr int64_t kSplitBlock = 256;

template <typename Body>
inline void ParallelElements(int64_t n, const Body& body) {
  ParallelForBlocks(n, kSplitBlock, 1, body);
}

// walker.Run(body), with the positions split over threads.
template <int N, typename Body>
inline void ParallelWalk(const StridedWalker<N>& walker, const Body& body) {
  ParallelElements(walker.Size(), [&](int64_t first, int64_t last) {
    walker.RunRange(first, last, body);
  });
}

inline int64_t NumelOf(int ndim, const int64_t* shape) {
  int64_t n = 1;
  for (int d = 0; d < ndim; ++d) n *= shape[d];
  return n;
}

}  // namespace detail

// out[idx] = f(a[idx]) over `shape`. Returns false (having done nothing) when
// a strided walk is needed and ndim exceeds kMaxRank.
template <typename O, typename A, typename F>
bool Map1(int ndim, const int64_t* shape, View<O> out, View<const A> a,
          const F& f) {
  const int64_t n = detail::NumelOf(ndim, shape);
  if (n == 0) return true;
  const bool stream = StreamsOutput(n, sizeof(O));
  if (out.contiguous && a.contiguous) {
    detail::ParallelElements(n, [&](int64_t b, int64_t e) {
      detail::Flat1(stream, out.data + b, a.data + b, e - b, f);
    });
    return true;
  }
  StridedWalker<2> walker;
  if (!walker.Init(ndim, shape, {out.strides, a.strides})) return false;
  detail::ParallelWalk(walker,
                       [&](const int64_t* off, int64_t len, const int64_t* st) {
                         O* o = out.data + off[0];
                         const A* pa = a.data + off[1];
                         if (st[0] == 1 && st[1] == 1) {
                           detail::Flat1(stream, o, pa, len, f);
                         } else if (st[0] == 1 && st[1] == 0) {
                           const O value = f(*pa);
                           for (int64_t i = 0; i < len; ++i) o[i] = value;
                         } else {
                           for (int64_t i = 0; i < len; ++i)
                             o[i * st[0]] = f(pa[i * st[1]]);
                         }
                       });
  return true;
}

// out[idx] = f(a[idx], b[idx]).
template <typename O, typename A, typename B, typename F>
bool Map2(int ndim, const int64_t* shape, View<O> out, View<const A> a,
          View<const B> b, const F& f) {
  const int64_t n = detail::NumelOf(ndim, shape);
  if (n == 0) return true;
  const bool stream = StreamsOutput(n, sizeof(O));
  if (out.contiguous && a.contiguous && b.contiguous) {
    detail::ParallelElements(n, [&](int64_t i0, int64_t i1) {
      detail::Flat2(stream, out.data + i0, a.data + i0, b.data + i0, i1 - i0,
                    f);
    });
    return true;
  }
  StridedWalker<3> walker;
  if (!walker.Init(ndim, shape, {out.strides, a.strides, b.strides})) {
    return false;
  }
  detail::ParallelWalk(walker, [&](const int64_t* off, int64_t len,
                                   const int64_t* st) {
    O* o = out.data + off[0];
    const A* pa = a.data + off[1];
    const B* pb = b.data + off[2];
    if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
      detail::Flat2(stream, o, pa, pb, len, f);
    } else if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
      // A broadcast operand (bias, scale) is one value along the run.
      const B bv = *pb;
      detail::Flat1(stream, o, pa, len, [bv, &f](A av) { return f(av, bv); });
    } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
      const A av = *pa;
      detail::Flat1(stream, o, pb, len, [av, &f](B bv) { return f(av, bv); });
    } else {
      for (int64_t i = 0; i < len; ++i) {
        o[i * st[0]] = f(pa[i * st[1]], pb[i * st[2]]);
      }
    }
  });
  return true;
}

// out[idx] = f(a[idx], b[idx], c[idx]).
template <typename O, typename A, typename B, typename C, typename F>
bool Map3(int ndim, const int64_t* shape, View<O> out, View<const A> a,
          View<const B> b, View<const C> c, const F& f) {
  const int64_t n = detail::NumelOf(ndim, shape);
  if (n == 0) return true;
  const bool stream = StreamsOutput(n, sizeof(O));
  if (out.contiguous && a.contiguous && b.contiguous && c.contiguous) {
    detail::ParallelElements(n, [&](int64_t i0, int64_t i1) {
      detail::Flat3(stream, out.data + i0, a.data + i0, b.data + i0,
                    c.data + i0, i1 - i0, f);
    });
    return true;
  }
  StridedWalker<4> walker;
  if (!walker.Init(ndim, shape,
                   {out.strides, a.strides, b.strides, c.strides})) {
    return false;
  }
  detail::ParallelWalk(
      walker, [&](const int64_t* off, int64_t len, const int64_t* st) {
        O* o = out.data + off[0];
        const A* pa = a.data + off[1];
        const B* pb = b.data + off[2];
        const C* pc = c.data + off[3];
        if (st[0] == 1 && st[1] == 1 && st[2] == 1 && st[3] == 1) {
          detail::Flat3(stream, o, pa, pb, pc, len, f);
        } else if (st[0] == 1 && st[1] == 1 && st[2] == 0 && st[3] == 0) {
          // The common clamp: scalar bounds over a contiguous run.
          const B bv = *pb;
          const C cv = *pc;
          detail::Flat1(stream, o, pa, len,
                        [bv, cv, &f](A av) { return f(av, bv, cv); });
        } else {
          for (int64_t i = 0; i < len; ++i) {
            o[i * st[0]] = f(pa[i * st[1]], pb[i * st[2]], pc[i * st[3]]);
          }
        }
      });
  return true;
}

// ---- 16-bit floats: compute on float32 blocks ------------------------------

namespace detail {

constexpr int64_t kBlock = 256;

// One run of the blocked engine: `n` positions, operand k starting at in[k]
// with stride is[k] (1, 0 or anything), out at o with stride os. Each block
// of up to kBlock positions is widened into float32 stack buffers (a unit
// stride by the vectorised converters, a broadcast value by a fill, anything
// else element by element), `op` runs over the buffers, and the results are
// narrowed back in one pass. Exact aliasing of out with an input is safe: a
// block is read completely before any of it is written.
template <typename Isa, typename T, typename Op, size_t... Is>
inline void BlockedRun(bool stream, T* o, int64_t os, const T* const* in,
                       const int64_t* is, int64_t n, const Op& op,
                       std::index_sequence<Is...>) {
  constexpr size_t kInputs = sizeof...(Is);
  float buf[kInputs][kBlock];
  float res[kBlock];
  for (size_t k = 0; k < kInputs; ++k) {
    if (is[k] != 0) continue;
    const float v = Load(*in[k]);
    for (int64_t j = 0; j < kBlock; ++j) buf[k][j] = v;
  }
  int64_t start = 0;
  bool streamed = false;
  if constexpr (kHasConvert8<Isa, T>) {
    // All unit strides: eight at a time, the temporaries stay in registers
    // (one load, one store per vector instead of three through the
    // buffers).
    bool unit = os == 1;
    for (size_t k = 0; k < kInputs; ++k) unit = unit && is[k] == 1;
    auto sixteen = [&](int64_t at, T* dst) {
      float t[kInputs][16];
      for (size_t k = 0; k < kInputs; ++k) Widen16<Isa, T>(in[k] + at, t[k]);
      float r[16];
      for (int j = 0; j < 16; ++j) r[j] = op(t[Is][j]...);
      Narrow16<Isa, T>(r, dst);
    };
    const int64_t head = ElementsToLine(o, sizeof(T));
    if (unit && stream &&
        n * static_cast<int64_t>(sizeof(T)) >= kStreamRunBytes && head >= 0) {
      // As StreamedLoop: plain stores up to o's first whole line, then
      // kStreamChunkBytes at a time through a stack buffer.
      constexpr int64_t kChunk = kStreamChunkBytes / sizeof(T);
      static_assert(kChunk % 16 == 0);
      for (; start < head; ++start) {
        o[start] = Store<T>(op(Load(in[Is][start])...));
      }
      for (; start + kChunk <= n; start += kChunk) {
        alignas(kLineBytes) T chunk[kChunk];
        for (int64_t j = 0; j < kChunk; j += 16) sixteen(start + j, chunk + j);
        StreamLines(o + start, chunk, kStreamChunkBytes / kLineBytes);
      }
      streamed = true;
    }
    if (unit) {
      for (; start + 16 <= n; start += 16) sixteen(start, o + start);
      for (; start + 8 <= n; start += 8) {
        float t[kInputs][8];
        for (size_t k = 0; k < kInputs; ++k)
          Widen8<Isa, T>(in[k] + start, t[k]);
        float r[8];
        for (int j = 0; j < 8; ++j) r[j] = op(t[Is][j]...);
        Narrow8<Isa, T>(r, o + start);
      }
    }
  }
  for (int64_t i0 = start; i0 < n; i0 += kBlock) {
    const int64_t len = n - i0 < kBlock ? n - i0 : kBlock;
    for (size_t k = 0; k < kInputs; ++k) {
      if (is[k] == 1) {
        WidenBlock<Isa>(in[k] + i0, buf[k], len);
      } else if (is[k] != 0) {
        const T* p = in[k] + i0 * is[k];
        for (int64_t j = 0; j < len; ++j) buf[k][j] = Load(p[j * is[k]]);
      }
    }
    for (int64_t j = 0; j < len; ++j) res[j] = op(buf[Is][j]...);
    if (os == 1) {
      NarrowBlock<Isa>(res, o + i0, len);
    } else {
      T* p = o + i0 * os;
      for (int64_t j = 0; j < len; ++j) p[j * os] = Store<T>(res[j]);
    }
  }
  if (streamed) StreamFence();
}

template <typename T, typename Op, size_t... Is>
TF_CPU_FLATTEN void BlockedRunBase(bool stream, T* o, int64_t os,
                                   const T* const* in, const int64_t* is,
                                   int64_t n, const Op& op,
                                   std::index_sequence<Is...> seq) {
  BlockedRun<BaselineIsa>(stream, o, os, in, is, n, op, seq);
}
template <typename T, typename Op, size_t... Is>
TF_CPU_AVX2 TF_CPU_FLATTEN void BlockedRunAvx2(bool stream, T* o, int64_t os,
                                               const T* const* in,
                                               const int64_t* is, int64_t n,
                                               const Op& op,
                                               std::index_sequence<Is...> seq) {
  BlockedRun<Avx2Isa>(stream, o, os, in, is, n, op, seq);
}
template <typename T, typename Op, size_t... Is>
TF_CPU_AVX512 TF_CPU_FLATTEN void BlockedRunAvx512(
    bool stream, T* o, int64_t os, const T* const* in, const int64_t* is,
    int64_t n, const Op& op, std::index_sequence<Is...> seq) {
  BlockedRun<Avx512Isa>(stream, o, os, in, is, n, op, seq);
}

}  // namespace detail

// out[idx] = op(ins[idx]...) for float16 and bfloat16, with `op` over float32
// (float op(float...)); every input has out's dtype. Returns false (having
// done nothing) when a strided walk is needed and ndim exceeds kMaxRank.
template <typename T, typename Op, typename... Ins>
bool MapBlocked(int ndim, const int64_t* shape, View<T> out, const Op& op,
                const Ins&... ins) {
  static_assert(kBlocked<T>, "MapBlocked is for the 16-bit floats");
  constexpr size_t kInputs = sizeof...(Ins);
  const auto seq = std::make_index_sequence<kInputs>{};
  const int64_t n = detail::NumelOf(ndim, shape);
  if (n == 0) return true;
  const bool stream = StreamsOutput(n, sizeof(T));
  auto run = [&](T* o, int64_t os, const T* const* in, const int64_t* is,
                 int64_t len) {
    TF_CPU_DISPATCH(detail::BlockedRun, stream, o, os, in, is, len, op, seq);
  };
  if (out.contiguous && (ins.contiguous && ...)) {
    const T* const in[kInputs] = {ins.data...};
    int64_t unit[kInputs];
    for (size_t k = 0; k < kInputs; ++k) unit[k] = 1;
    detail::ParallelElements(n, [&](int64_t i0, int64_t i1) {
      const T* shifted[kInputs];
      for (size_t k = 0; k < kInputs; ++k) shifted[k] = in[k] + i0;
      run(out.data + i0, 1, shifted, unit, i1 - i0);
    });
    return true;
  }
  StridedWalker<kInputs + 1> walker;
  if (!walker.Init(ndim, shape, {out.strides, ins.strides...})) return false;
  detail::ParallelWalk(walker,
                       [&](const int64_t* off, int64_t len, const int64_t* st) {
                         const T* in[kInputs];
                         size_t k = 0;
                         ((in[k] = ins.data + off[k + 1], ++k), ...);
                         run(out.data + off[0], st[0], in, st + 1, len);
                       });
  return true;
}

}  // namespace torchferry::cpu
