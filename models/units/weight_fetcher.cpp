#include "models/units/weight_fetcher.h"

#include <vector>

#include "models/common/transfer.h"
#include "models/units/activity.h"
#include "models/units/unit_stats.h"

namespace tessera::models {

using isa::Instruction;
using isa::Opcode;

WeightFetcher::WeightFetcher(sc_core::sc_module_name name, UnitContext& ctx, WeightFifo& fifo)
    : sc_module(name), socket("socket"), queue("queue", unit_queue_depth(ctx)), ctx_(ctx), fifo_(fifo) {
  stats_.add("tiles", "tiles", "weight tiles requested from weight memory", [this] { return tiles_; });
  stats_.add("fifo_bytes", "bytes", "weight bytes written into the weight FIFO (and read out by the array)",
             [this] { return fifo_bytes_; });
  add_kind_cycles(stats_, log_, kKindNames, "cycles the fetcher waited");
  SC_THREAD(run);
}

void WeightFetcher::run() {
  std::vector<unsigned char> dummy(1);
  for (;;) {
    queue.read(dispatch_);
    const int32_t idx = dispatch_.index;
    const Instruction& in = dispatch_.in;
    const int64_t asked = ctx_.clock.now();
    const int64_t slot = fifo_.reserve();  // a full FIFO stalls the fetcher here
    log_.add(asked, slot, kFifoFull, in.layer, idx);
    tiles_++;
    fifo_bytes_ += static_cast<int64_t>(activity_of(in, ctx_.array).weight_fifo_bytes);
    tlm::tlm_generic_payload payload;
    set_transfer(payload, tlm::TLM_READ_COMMAND, in.weight_address,
                 Transfer{static_cast<uint64_t>(in.bytes), in.layer, idx}, dummy.data());
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    socket->b_transport(payload, delay);
    // Requests are pipelined: the fetcher moves on while the tile is in flight.
    const int64_t ready = ctx_.clock.cycle_of(sc_core::sc_time_stamp() + delay);
    fifo_.fill(WeightTile{idx, in.bytes, ready, in.weight_source != isa::WeightSource::kUnifiedBuffer,
                          in.weight_source == isa::WeightSource::kHost});
    ctx_.tracker.finish_at(idx, ready);
  }
}

}  // namespace tessera::models
