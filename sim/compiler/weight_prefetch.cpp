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
  p_.instructions.reserve(body_.size() + weight_reads_.size() + 1);
  for (size_t b = 0; b < body_.size(); ++b) {
    auto& in = body_[b];
    while (next_read < weight_reads_.size() && next_read < consumed + depth &&
           weight_reads_[next_read].earliest_body <= b) {
      p_.weight_bytes_read += weight_reads_[next_read].in.bytes;
      p_.instructions.push_back(std::move(weight_reads_[next_read++].in));
    }
    if (in.op == Opcode::kMatmul) consumed += static_cast<size_t>(in.weight_tiles);
    p_.instructions.push_back(std::move(in));
  }
}

}  // namespace tessera::compiler::detail
