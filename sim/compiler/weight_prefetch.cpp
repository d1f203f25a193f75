// Weight prefetch: read_weights merged into the program at the weight FIFO's depth.
#include "sim/compiler/lowering.h"

namespace tessera::compiler::detail {

void Lowering::merge_weight_reads() {
  // Merge weight reads into the body: before every instruction, the reads of the
  // next `depth` tiles not yet consumed are issued, so the FIFO prefetches up to
  // its depth ahead, across layer boundaries, even while the in-order controller
  // waits on a hazard; more would only stall the fetcher, never deadlock. A tile
  // loaded from the unified buffer waits until its layer starts (its producer is an
  // earlier layer), and the FIFO keeps the tiles in order.
  const size_t depth = static_cast<size_t>(arch_.weight_fifo.depth_tiles);
  size_t next_read = 0, consumed = 0;
  // Where each read goes: before body instruction place[r] (reads past the last body
  // instruction are not issued).
  std::vector<size_t> place(weight_reads_.size());
  for (size_t b = 0; b < body_.size(); ++b) {
    while (next_read < weight_reads_.size() && next_read < consumed + depth && weight_reads_[next_read].earliest_body <= b) {
      place[next_read++] = b;
    }
    if (body_[b].op == Opcode::kMatmul) consumed += static_cast<size_t>(body_[b].weight_tiles);
  }
  // In place, from the back: body instruction b moves up by the number of reads placed at
  // or before it, and the reads placed at b go right below it, in their order. Every
  // destination is at or above its source, and above every source not yet moved. The
  // body becomes the program: one copy of the instructions, never two (issue 19).
  const size_t body = body_.size(), total = body + next_read;
  body_.reserve(total + 1);  // + the halt
  body_.resize(total);
  size_t out = total, r = next_read;
  for (size_t b = body; b-- > 0;) {
    --out;
    if (out != b) body_[out] = std::move(body_[b]);
    for (; r > 0 && place[r - 1] == b; --r) {
      p_.weight_bytes_read += weight_reads_[r - 1].in.bytes;
      body_[--out] = std::move(weight_reads_[r - 1].in);
    }
  }
  weight_reads_ = {};
  p_.instructions = std::move(body_);
  body_ = {};
}

}  // namespace tessera::compiler::detail
