// Weight prefetch: read_weights merged into the program at the weight FIFO's depth.
#include "sim/compiler/lowering.h"

namespace tessera::compiler::detail {

void Lowering::add_weight_read(Instruction in, size_t earliest_body) {
  weight_reads_.push_back({std::move(in), earliest_body});
  merge_weight_reads(false);
}

void Lowering::merge_weight_reads(bool final) {
  // Merge weight reads into the body: before every instruction, the reads of the
  // next `depth` tiles not yet consumed are issued, so the FIFO prefetches up to
  // its depth ahead, across layer boundaries, even while the in-order controller
  // waits on a hazard; more would only stall the fetcher, never deadlock. A tile
  // loaded from the unified buffer waits until its layer starts (its producer is an
  // earlier layer), and the FIFO keeps the tiles in order.
  //
  // As the lowering emits (issue 19): body instruction b goes to the program, after the
  // reads placed before it, as soon as every read that could be placed before it is known
  // (read consumed + depth has been emitted, or the next read must wait for a later
  // layer). At the end (`final`) the rest goes; reads past the last body instruction are
  // not issued. The program folds repeats as they arrive.
  const size_t depth = static_cast<size_t>(arch_.weight_fifo.depth_tiles);
  while (!body_.empty()) {
    const size_t b = body_base_;
    while (!weight_reads_.empty() && reads_base_ < consumed_tiles_ + depth && weight_reads_.front().earliest_body <= b) {
      p_.weight_bytes_read += weight_reads_.front().in.bytes;
      p_.instructions.push_back(std::move(weight_reads_.front().in));
      weight_reads_.pop_front();
      ++reads_base_;
    }
    // A read the lowering has not emitted yet could still belong before b.
    if (!final && weight_reads_.empty() && reads_base_ < consumed_tiles_ + depth) return;
    Instruction& in = body_.front();
    if (in.op == Opcode::kMatmul) consumed_tiles_ += static_cast<size_t>(in.weight_tiles);
    p_.instructions.push_back(std::move(in));
    body_.pop_front();
    ++body_base_;
  }
  if (final) weight_reads_.clear();
}

}  // namespace tessera::compiler::detail
