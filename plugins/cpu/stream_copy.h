// Outputs too large to stay in cache (copies in embedding, cat and stack;
// elementwise results, map.h) are written with non-temporal stores, which write
// whole lines to memory without first reading them in. A plain store to a line
// not in cache reads it first ("read for ownership"), so a copy into a large
// output moves each byte of it twice. Measured on zen3 (32 MiB L3), 4096 rows
// copied from a 64-row table, one thread / two: 64 MiB out 8.09 / 5.04 ms with
// memcpy, 3.40 / 3.20 ms streamed; 32 MiB out 4.31 / 2.30 against 2.17 / 1.57
// ms; but 8 MiB out 0.27 / 0.14 against 0.40 / 0.21 ms, where the output stays
// in cache and streaming it out only costs. Hence a threshold on the whole
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

// The cache line: what a non-temporal store writes whole.
constexpr size_t kLineBytes = 64;

// Elements of `word` bytes from p up to the first line boundary at or after
// it; -1 where p is not a multiple of `word`, so that no element of it starts
// a line.
inline int64_t ElementsToLine(const void* p, size_t word) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  if (address % word != 0) return -1;
  return static_cast<int64_t>((kLineBytes - address % kLineBytes) % kLineBytes /
                              word);
}

// Writes `lines` lines from src to dst with non-temporal stores; dst starts
// a line, src need not (x86; elsewhere plain memcpy).
inline void StreamLines(void* dst, const void* src, size_t lines) {
#if defined(__SSE2__)
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  for (size_t l = 0; l < lines; ++l, d += kLineBytes, s += kLineBytes) {
    const __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    const __m128i v1 =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16));
    const __m128i v2 =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 32));
    const __m128i v3 =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d), v0);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16), v1);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 32), v2);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 48), v3);
  }
#else
  std::memcpy(dst, src, lines * kLineBytes);
#endif
}

// memcpy(dst, src, bytes); with `stream`, the aligned middle of dst is
// written with non-temporal stores. A thread that streamed calls
// StreamFence() before it reports its share done, so that the stores are
// visible to whoever reads out next.
inline void CopyBytes(void* dst, const void* src, size_t bytes, bool stream) {
  if (stream && bytes >= 4 * kLineBytes) {
    auto* d = static_cast<char*>(dst);
    const auto* s = static_cast<const char*>(src);
    const auto head = static_cast<size_t>(ElementsToLine(d, 1));
    std::memcpy(d, s, head);
    const size_t lines = (bytes - head) / kLineBytes;
    StreamLines(d + head, s + head, lines);
    const size_t done = head + lines * kLineBytes;
    std::memcpy(d + done, s + done, bytes - done);
    return;
  }
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
