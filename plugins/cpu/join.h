// Copying contiguous inputs into a contiguous out that holds, for each of
// `outer` rows, a block of every input in turn (cat and stack of contiguous
// tensors), split over the host's threads by ranges of out's elements.
#pragma once

#include <cstddef>
#include <cstdint>

#include "parallel.h"
#include "stream_copy.h"

namespace torchferry::cpu {

// Copies row i's block of input t, block_of(t) words long and found at
// source_of(t) + i * block_of(t) words of `word` bytes, to out, where rows
// follow each other and the blocks of a row come in input order. Each share
// copies whole or cut blocks of its own range of out, so out is written
// once whatever the thread count; a range starts on a multiple of kBlock
// words, so small calls stay on the caller. Inputs whose block is empty may
// have no data (source_of is then never read).
template <typename SourceOf, typename BlockOf>
void JoinRows(int64_t count, int64_t outer, size_t word, char* out,
              const SourceOf& source_of, const BlockOf& block_of) {
  int64_t row = 0;
  for (int64_t t = 0; t < count; ++t) row += block_of(t);
  if (row == 0 || outer == 0) return;
  constexpr int64_t kBlock = 4096;
  const bool stream = StreamsOutput(outer * row, word);
  ParallelForBlocks(outer * row, kBlock, 1, [&](int64_t first, int64_t last) {
    int64_t i = first / row;
    int64_t at = first % row;  // where in row i the share starts
    // The input whose block holds `at`, and that block's start in the row.
    int64_t t = 0, start = 0;
    while (at >= start + block_of(t)) start += block_of(t++);
    for (int64_t pos = first; pos < last;) {
      const int64_t len = block_of(t);
      const int64_t left = start + len - at;
      const int64_t n = left < last - pos ? left : last - pos;
      if (n > 0) {
        const char* src =
            source_of(t) + static_cast<size_t>(i * len + (at - start)) * word;
        CopyBytes(out + static_cast<size_t>(pos) * word, src,
                  static_cast<size_t>(n) * word, stream);
      }
      pos += n;
      at += n;
      start += len;
      if (++t == count) {  // on to the next row
        t = 0;
        start = 0;
        at = 0;
        ++i;
      }
    }
    if (stream) StreamFence();
  });
}

}  // namespace torchferry::cpu
