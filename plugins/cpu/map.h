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

#include "call.h"
#include "strided.h"

namespace torchferry::cpu {

namespace detail {

// Outputs never overlap inputs except by exact aliasing (out == x), which
// elementwise ops allow. The __restrict loops let the compiler vectorise
// without runtime overlap checks; exact aliasing takes the plain copies,
// which are correct for it because each element is read before it is written.
template <typename O, typename A, typename F>
inline void FlatLoop1(O* __restrict o, const A* __restrict a, int64_t n,
                      const F& f) {
  for (int64_t i = 0; i < n; ++i) o[i] = f(a[i]);
}
template <typename O, typename A, typename F>
inline void FlatLoop1Aliased(O* o, const A* a, int64_t n, const F& f) {
  for (int64_t i = 0; i < n; ++i) o[i] = f(a[i]);
}
template <typename O, typename A, typename B, typename F>
inline void FlatLoop2(O* __restrict o, const A* __restrict a,
                      const B* __restrict b, int64_t n, const F& f) {
  for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
}
template <typename O, typename A, typename B, typename F>
inline void FlatLoop2Aliased(O* o, const A* a, const B* b, int64_t n,
                             const F& f) {
  for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
}
template <typename O, typename A, typename B, typename C, typename F>
inline void FlatLoop3(O* __restrict o, const A* __restrict a,
                      const B* __restrict b, const C* __restrict c, int64_t n,
                      const F& f) {
  for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i], c[i]);
}
template <typename O, typename A, typename B, typename C, typename F>
inline void FlatLoop3Aliased(O* o, const A* a, const B* b, const C* c,
                             int64_t n, const F& f) {
  for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i], c[i]);
}

inline bool Same(const void* a, const void* b) { return a == b; }

template <typename O, typename A, typename F>
inline void Flat1(O* o, const A* a, int64_t n, const F& f) {
  if (Same(o, a)) {
    FlatLoop1Aliased(o, a, n, f);
  } else {
    FlatLoop1(o, a, n, f);
  }
}
template <typename O, typename A, typename B, typename F>
inline void Flat2(O* o, const A* a, const B* b, int64_t n, const F& f) {
  if (Same(o, a) || Same(o, b)) {
    FlatLoop2Aliased(o, a, b, n, f);
  } else {
    FlatLoop2(o, a, b, n, f);
  }
}
template <typename O, typename A, typename B, typename C, typename F>
inline void Flat3(O* o, const A* a, const B* b, const C* c, int64_t n,
                  const F& f) {
  if (Same(o, a) || Same(o, b) || Same(o, c)) {
    FlatLoop3Aliased(o, a, b, c, n, f);
  } else {
    FlatLoop3(o, a, b, c, n, f);
  }
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
  if (out.contiguous && a.contiguous) {
    detail::Flat1(out.data, a.data, n, f);
    return true;
  }
  StridedWalker<2> walker;
  if (!walker.Init(ndim, shape, {out.strides, a.strides})) return false;
  walker.Run([&](const int64_t* off, int64_t len, const int64_t* st) {
    O* o = out.data + off[0];
    const A* pa = a.data + off[1];
    if (st[0] == 1 && st[1] == 1) {
      detail::Flat1(o, pa, len, f);
    } else if (st[0] == 1 && st[1] == 0) {
      const O value = f(*pa);
      for (int64_t i = 0; i < len; ++i) o[i] = value;
    } else {
      for (int64_t i = 0; i < len; ++i) o[i * st[0]] = f(pa[i * st[1]]);
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
  if (out.contiguous && a.contiguous && b.contiguous) {
    detail::Flat2(out.data, a.data, b.data, n, f);
    return true;
  }
  StridedWalker<3> walker;
  if (!walker.Init(ndim, shape, {out.strides, a.strides, b.strides})) {
    return false;
  }
  walker.Run([&](const int64_t* off, int64_t len, const int64_t* st) {
    O* o = out.data + off[0];
    const A* pa = a.data + off[1];
    const B* pb = b.data + off[2];
    if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
      detail::Flat2(o, pa, pb, len, f);
    } else if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
      // A broadcast operand (bias, scale) is one value along the run.
      const B bv = *pb;
      detail::Flat1(o, pa, len, [bv, &f](A av) { return f(av, bv); });
    } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
      const A av = *pa;
      detail::Flat1(o, pb, len, [av, &f](B bv) { return f(av, bv); });
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
  if (out.contiguous && a.contiguous && b.contiguous && c.contiguous) {
    detail::Flat3(out.data, a.data, b.data, c.data, n, f);
    return true;
  }
  StridedWalker<4> walker;
  if (!walker.Init(ndim, shape,
                   {out.strides, a.strides, b.strides, c.strides})) {
    return false;
  }
  walker.Run([&](const int64_t* off, int64_t len, const int64_t* st) {
    O* o = out.data + off[0];
    const A* pa = a.data + off[1];
    const B* pb = b.data + off[2];
    const C* pc = c.data + off[3];
    if (st[0] == 1 && st[1] == 1 && st[2] == 1 && st[3] == 1) {
      detail::Flat3(o, pa, pb, pc, len, f);
    } else if (st[0] == 1 && st[1] == 1 && st[2] == 0 && st[3] == 0) {
      // The common clamp: scalar bounds over a contiguous run.
      const B bv = *pb;
      const C cv = *pc;
      detail::Flat1(o, pa, len, [bv, cv, &f](A av) { return f(av, bv, cv); });
    } else {
      for (int64_t i = 0; i < len; ++i) {
        o[i * st[0]] = f(pa[i * st[1]], pb[i * st[2]], pc[i * st[3]]);
      }
    }
  });
  return true;
}

}  // namespace torchferry::cpu
