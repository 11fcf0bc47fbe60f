// Copies into outputs too large to stay in cache (embedding, cat, stack):
// non-temporal stores, which write whole lines to memory without first
// reading them in. A plain store to a line not in cache reads it first
// ("read for ownership"), so a copy into a large output moves each byte of
// it twice. Measured on zen3 (32 MiB L3), 4096 rows copied from a 64-row
// table, one thread / two: 64 MiB out 8.09 / 5.04 ms with memcpy, 3.40 /
// 3.20 ms streamed; 32 MiB out 4.31 / 2.30 against 2.17 / 1.57 ms; but
// 8 MiB out 0.27 / 0.14 against 0.40 / 0.21 ms, where the output stays in
// cache and streaming it out only costs. Hence a threshold on the whole
// output, not on a copy's length.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace torchferry::cpu {

// A call whose output holds at least this many bytes streams its copies:
// the L3 of the machine that measured the figures above.
constexpr int64_t kStreamOutputBytes = int64_t{32} << 20;

// Whether a call whose whole output is `elements` words of `word` bytes
// streams its copies (the `stream` of CopyBytes).
inline bool StreamsOutput(int64_t elements, size_t word) {
  return elements >= kStreamOutputBytes / static_cast<int64_t>(word);
}

// memcpy(dst, src, bytes); with `stream`, the aligned middle of dst is
// written with non-temporal stores (x86; elsewhere plain memcpy). A thread
// that streamed calls StreamFence() before it reports its share done, so
// that the stores are visible to whoever reads out next.
inline void CopyBytes(void* dst, const void* src, size_t bytes, bool stream) {
#if defined(__SSE2__)
  constexpr size_t kLine = 64;
  if (stream && bytes >= 4 * kLine) {
    auto* d = static_cast<char*>(dst);
    const auto* s = static_cast<const char*>(src);
    const size_t head =
        (kLine - reinterpret_cast<uintptr_t>(d) % kLine) % kLine;
    std::memcpy(d, s, head);
    size_t i = head;
    for (; i + kLine <= bytes; i += kLine) {
      const __m128i v0 =
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
      const __m128i v1 =
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
      const __m128i v2 =
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
      const __m128i v3 =
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), v0);
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), v1);
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), v2);
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), v3);
    }
    std::memcpy(d + i, s + i, bytes - i);
    return;
  }
#else
  (void)stream;
#endif
  std::memcpy(dst, src, bytes);
}

// Orders this thread's streamed stores before its later stores (the end of
// its share, which the thread that joins the share then reads).
inline void StreamFence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace torchferry::cpu
