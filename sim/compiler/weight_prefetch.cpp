// Weight prefetch: read_weights merged into the program at the weight FIFO's depth.
#include "sim/compiler/lowering.h"

namespace tessera::compiler::detail {

Lowering::FifoReads& Lowering::fifo_of(const Instruction& in) {
  const auto slot = static_cast<size_t>(in.core) * static_cast<size_t>(arch_.array.count) + in.unit;
  if (slot >= fifo_reads_.size()) fifo_reads_.resize(slot + 1);
  return fifo_reads_[slot];
}

void Lowering::add_weight_read(Instruction in, size_t earliest_body) {
  FifoReads& f = fifo_of(in);
  f.pending.push_back({std::move(in), earliest_body});
  merge_weight_reads(false);
}

void Lowering::merge_weight_reads(bool final) {
  // Merge weight reads into the body: before every instruction, the reads of the
  // next `depth` tiles not yet consumed are issued, so the FIFO prefetches up to
  // its depth ahead, across layer boundaries, even while the in-order controller
  // waits on a hazard; more would only stall the fetcher, never deadlock. A tile
  // loaded from the unified buffer waits until its layer starts (its producer is an
  // earlier layer), and the FIFO keeps the tiles in order. Each matrix unit has its own
  // FIFO, so the window is per unit: a unit that runs many K steps in a row must not have
  // more reads ahead than its FIFO holds (its fetcher would stall with the controller
  // behind it).
  //
  // As the lowering emits (issue 19): body instruction b goes to the program, after the
  // reads placed before it, as soon as every read that could be placed before it is known
  // (read consumed + depth has been emitted, or the next read must wait for a later
  // layer). At the end (`final`) the rest goes; reads past the last body instruction are
  // not issued. The program folds repeats as they arrive. With several units, only a
  // matmul waits for reads of its own unit still to come.
  const size_t depth = static_cast<size_t>(arch_.weight_fifo.depth_tiles);
  const bool one_fifo = fifo_reads_.size() == 1 && slots() == 1;
  auto place = [&](FifoReads& f, size_t b) {
    while (!f.pending.empty() && f.base < f.consumed + depth && f.pending.front().earliest_body <= b) {
      p_.weight_bytes_read += f.pending.front().in.bytes;
      if (f.pending.front().in.weight_source == WeightSource::kHost) p_.host_weight_bytes += f.pending.front().in.bytes;
      p_.instructions.push_back(std::move(f.pending.front().in));
      f.pending.pop_front();
      ++f.base;
    }
  };
  while (!body_.empty()) {
    const size_t b = body_base_;
    for (FifoReads& f : fifo_reads_) place(f, b);
    Instruction& in = body_.front();
    if (!final) {
      // A read the lowering has not emitted yet could still belong before b.
      if (one_fifo) {
        const FifoReads& f = fifo_reads_.front();
        if (f.pending.empty() && f.base < f.consumed + depth) return;
      } else if (in.op == Opcode::kMatmul) {
        const FifoReads& f = fifo_of(in);
        if (f.pending.empty() && f.base < f.consumed + depth) return;
      }
    }
    if (in.op == Opcode::kMatmul) fifo_of(in).consumed += static_cast<size_t>(in.weight_tiles);
    p_.instructions.push_back(std::move(in));
    body_.pop_front();
    ++body_base_;
  }
  if (final) {
    for (FifoReads& f : fifo_reads_) f.pending.clear();
  }
}

}  // namespace tessera::compiler::detail
