#include "models/units/matrix_unit.h"

#include <string>

#include "models/array/matmul_cost.h"
#include "models/units/unit_stats.h"

namespace tessera::models {

using isa::Instruction;
using isa::Opcode;

MatrixUnit::MatrixUnit(sc_core::sc_module_name name, UnitContext& ctx, WeightFifo& fifo, UnifiedBufferPorts& ub)
    : sc_module(name),
      queue("queue", unit_queue_depth(ctx)),
      ctx_(ctx),
      fifo_(fifo),
      ub_(ub),
      dataflow_(array::dataflow_model(ctx.array.dataflow)),
      pipeline_(ctx.array.dataflow, array::ArrayDims{ctx.array.rows, ctx.array.cols},
                ctx.array.double_buffered) {
  stats_.add("macs", "MACs", "multiply-accumulates of all matmul tiles", [this] { return macs_; });
  stats_.add("tiles", "tiles", "matmul tiles run", [this] { return tiles_; });
  pairs_ = mac_pairs(ctx.program, ctx.array);
  pair_macs_.assign(pairs_.size(), 0);
  pair_idle_macs_.assign(pairs_.size(), 0);
  for (size_t i = 0; i < pairs_.size(); ++i) {
    const std::string pair = std::string(dtype_name(pairs_[i].first)) + "x" + std::string(dtype_name(pairs_[i].second));
    stats_.add("macs_" + pair, "MACs", "useful multiply-accumulates at " + pair, [this, i] { return pair_macs_[i]; });
    stats_.add("idle_macs_" + pair, "MACs",
               "PEs clocked outside the tile while it streams at " + pair + " (one per PE per MAC step)",
               [this, i] { return pair_idle_macs_[i]; });
  }
  stats_.add("register_bits", "bits", "array pipeline-register bits written (streamed operands, partial sums, stationary loads)",
             [this] { return register_bits_; });
  stats_.add("ub_read_bytes", "bytes", "unified-buffer bytes the matmuls read", [this] { return ub_read_bytes_; });
  stats_.add("accumulator_reads", "values", "accumulator values read back to accumulate", [this] { return accumulator_reads_; });
  stats_.add("accumulator_writes", "values", "accumulator values written", [this] { return accumulator_writes_; });
  add_kind_cycles(stats_, log_, kKindNames, "array cycles");
  stats_.add("useful_pe_cycles", "PE-cycles",
             "of the array's streaming (matmul) cycles, PE-cycles of PEs holding part of the tile (TPU paper Table 3 row 2)",
             [this] { return useful_pe_cycles_; });
  stats_.add("unused_pe_cycles", "PE-cycles",
             "of the array's streaming (matmul) cycles, PE-cycles of PEs outside a partial tile (TPU paper Table 3 row 3)",
             [this] { return unused_pe_cycles_; });
  stats_.add("drain_cycles", "cycles", "cycles results drained into the accumulators (overlapping tiles counted once each)",
             [this] { return drain_log_.busy(); });
  SC_THREAD(run);
}

void MatrixUnit::run() {
  const auto& arr = ctx_.array;
  const array::ArrayDims dims{arr.rows, arr.cols};
  for (;;) {
    queue.read(dispatch_);
    const int32_t idx = dispatch_.index;
    const Instruction& in = dispatch_.in;
    const int64_t requested = ctx_.clock.now();
    // The streamed or stationary operand from the unified buffer is there once the
    // controller dispatched the matmul (its hazards cleared), not only when this unit takes
    // it from its queue: an input-stationary tile loads its inputs into the shadow buffer
    // while the previous tile still streams. Nothing of this matmul is logged before it.
    const int64_t dispatched = ctx_.tracker.dispatch(idx);
    const int64_t operands_from = dispatched >= 0 ? std::min(dispatched, requested) : requested;
    busy_since_ = operands_from;
    // The tile's weights, in the FIFO tiles the compiler split them into (B held: one;
    // B streamed: one per array tile of B, in stream order). An empty FIFO is a weight stall.
    ready_cycles_.clear();
    bool from_weight_memory = false, from_host = false;
    for (int32_t t = 0; t < std::max<int32_t>(1, in.weight_tiles); ++t) {
      const WeightTile w = fifo_.pop();
      ready_cycles_.push_back(w.ready_cycle);
      from_weight_memory |= w.instruction >= 0 && w.from_weight_memory;
      from_host |= w.instruction >= 0 && w.from_host;
    }
    const int64_t popped = ctx_.clock.now();

    const array::TileTiming natural = array::tile_timing(arr.dataflow, dims, in.tile);
    const MacMode* mode = arr.find_mode(in.a_dtype, in.b_dtype);
    const array::MatmulCost cost = array::matmul_cost(
        dataflow_, dims, natural, mode ? mode->rate : 1.0, static_cast<int64_t>(in.ub_read_bytes),
        ctx_.unified_buffer.read_bytes_per_cycle, from_weight_memory && ctx_.weight_memory.fetch == WeightFetch::kTile,
        ctx_.ideal_memory);
    const int64_t mac_cycles = cost.stream.mac_cycles, ub_cycles = cost.stream.ub_read_cycles;
    const int64_t stream_cycles = std::max(natural.stream_cycles, cost.stream_cycles());

    const int64_t weights_ready = dataflow_.weights_ready(dims, ready_cycles_, natural.stream_cycles, stream_cycles);
    const array::OperandReadiness ready = dataflow_.readiness(weights_ready, operands_from);
    const array::TileSchedule s = pipeline_.issue(in.tile, ready.stationary_ready, ready.stream_ready,
                                                  cost.stream_cycles(), cost.min_preload_cycles);
    ub_.read.serve(s.stream_start, ub_cycles, in.layer, idx);

    // A streamed B's later FIFO tiles may arrive after the stream started (each in time
    // for its part of the stream): the wait before the stream is what stalled it.
    const int64_t stalled_until = std::min(popped, s.stream_start);
    log_.add(requested, stalled_until, from_host ? kHostWeightStall : kWeightStall, in.layer, idx);
    const int64_t active_end = std::min(s.stream_end, s.stream_start + std::max(mac_cycles, natural.stream_cycles));
    log_.add(stalled_until, s.stream_start, kWeightShift, in.layer, idx);
    log_.add(s.stream_start, active_end, kActive, in.layer, idx);
    {
      const int64_t active = std::max<int64_t>(0, active_end - s.stream_start);
      const int64_t used = std::min<int64_t>(dataflow_.occupancy(in.tile).pes, dims.rows * dims.cols);
      useful_pe_cycles_ += used * active;
      unused_pe_cycles_ += (dims.rows * dims.cols - used) * active;
    }
    log_.add(active_end, s.stream_end, kInputStall, in.layer, idx);
    drain_log_.add(s.stream_end, s.done, kActive, in.layer, idx);
    macs_ += in.tile.m * in.tile.k * in.tile.n;
    tiles_++;
    count(activity_of(in, arr));
    ctx_.clock.wait_until(s.stream_end);
    ctx_.tracker.finish_at(idx, s.done);
    busy_since_ = -1;
  }
}

void MatrixUnit::count(const InstructionActivity& a) {
  for (size_t i = 0; i < pairs_.size(); ++i) {
    if (pairs_[i] != std::pair{a.a_dtype, a.b_dtype}) continue;
    pair_macs_[i] += a.macs;
    pair_idle_macs_[i] += a.idle_macs;
  }
  register_bits_ += a.register_bits;
  ub_read_bytes_ += static_cast<int64_t>(a.ub_read_bytes);
  accumulator_reads_ += a.accumulator_reads;
  accumulator_writes_ += a.accumulator_writes;
}

}  // namespace tessera::models
