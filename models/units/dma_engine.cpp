#include "models/units/dma_engine.h"

#include <algorithm>
#include <vector>

#include "models/common/transfer.h"
#include "models/units/activity.h"
#include "models/units/unit_stats.h"

namespace tessera::models {

using isa::Instruction;
using isa::Opcode;

DmaEngine::DmaEngine(sc_core::sc_module_name name, UnitContext& ctx, int64_t latency_cycles, double bytes_per_ns)
    : sc_module(name),
      socket("socket"),
      queue("queue", unit_queue_depth(ctx)),
      ctx_(ctx),
      latency_cycles_(latency_cycles),
      bytes_per_ns_(bytes_per_ns) {
  stats_.add("transfers", "instructions", "transfer instructions run (read_host/write_host or dma_read/dma_write)",
             [this] { return log_.count(); });
  stats_.add("busy_cycles", "cycles", "cycles from a transfer's start to its last byte", [this] { return log_.busy(); });
  stats_.add("ub_read_bytes", "bytes", "unified-buffer bytes read for write_host / dma_write", [this] { return ub_read_bytes_; });
  stats_.add("ub_write_bytes", "bytes", "unified-buffer bytes written by read_host / dma_read", [this] { return ub_write_bytes_; });
  SC_THREAD(run);
}

void DmaEngine::run() {
  std::vector<unsigned char> dummy(1);
  for (;;) {
    queue.read(dispatch_);
    const int32_t idx = dispatch_.index;
    const Instruction& in = dispatch_.in;
    const int64_t start = ctx_.clock.now();
    const InstructionActivity act = activity_of(in, ctx_.array);
    ub_read_bytes_ += static_cast<int64_t>(act.ub_read_bytes);
    ub_write_bytes_ += static_cast<int64_t>(act.ub_write_bytes);
    tlm::tlm_generic_payload payload;
    // The engine reads host or device memory into the scratchpad, or writes it from there.
    const bool reads = in.op == Opcode::kReadHost || in.op == Opcode::kDmaRead;
    const uint64_t address = in.op == Opcode::kDmaRead || in.op == Opcode::kDmaWrite ? in.weight_address : in.ub_address;
    set_transfer(payload, reads ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND, address,
                 Transfer{static_cast<uint64_t>(in.bytes), in.layer, idx}, dummy.data());
    // The request reaches its target after the engine's own latency.
    sc_core::sc_time delay = ctx_.clock.at(saturating_add(start, latency_cycles_)) - sc_core::sc_time_stamp();
    socket->b_transport(payload, delay);
    int64_t end = ctx_.clock.cycle_of(sc_core::sc_time_stamp() + delay);
    // An engine slower than its target: after the first byte (the engine's and device
    // memory's latency) the bytes stream at its own rate (one transfer at a time).
    if (bytes_per_ns_ > 0) {
      const double ns = ctx_.weight_memory.latency_ns + static_cast<double>(in.bytes) / bytes_per_ns_;
      end = std::max(end, saturating_add(start, saturating_add(latency_cycles_, ctx_.clock.cycles_for_ns(ns))));
    }
    log_.add(start, end, static_cast<int32_t>(in.op), in.layer, idx);  // now: nothing logged later begins before it
    ctx_.clock.wait_until(end);
    ctx_.tracker.finish_at(idx, end);
  }
}

}  // namespace tessera::models
