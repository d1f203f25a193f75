#include "models/units/units.h"

#include <algorithm>
#include <span>
#include <unordered_map>
#include <utility>

#include "models/array/matmul_cost.h"
#include "models/common/transfer.h"

namespace tessera::models {

using isa::Instruction;
using isa::Opcode;

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int queue_depth(const UnitContext& ctx) { return static_cast<int>(ctx.controller.queue_depth); }

int64_t busy(const IntervalLog& log) { return log.busy(); }

// One "<kind>_cycles" counter per declared kind of `log`.
template <typename Kind, std::size_t N>
void add_kind_cycles(StatGroup& stats, const IntervalLog& log, const KindNames<Kind, N>& names, const std::string& what) {
  for (const auto& [kind, name] : names) {
    stats.add(std::string(name) + "_cycles", "cycles", what + ": " + std::string(name),
              [&log, k = static_cast<int32_t>(kind)] { return log.total(k); });
  }
}
}  // namespace

std::ostream& operator<<(std::ostream& os, const Dispatch& d) { return os << d.index; }

Unit unit_of(Opcode op) {
  switch (op) {
    case Opcode::kReadHost:
    case Opcode::kWriteHost: return Unit::kHostDma;
    case Opcode::kReadWeights: return Unit::kWeightFetcher;
    case Opcode::kMatmul: return Unit::kMatrix;
    case Opcode::kActivate:
    case Opcode::kVector: return Unit::kVector;
    case Opcode::kDmaRead:
    case Opcode::kDmaWrite: return Unit::kDeviceDma;
    case Opcode::kSync:
    case Opcode::kHalt: return Unit::kCount;
  }
  return Unit::kCount;
}

int QueueLayout::queue_of(const Instruction& in) const {
  const int u = static_cast<int>(in.unit);
  auto check = [&](int n, const char* what) {
    if (u >= n) {
      throw std::logic_error(std::string("controller: ") + std::string(isa::opcode_name(in.op)) + " names " + what + " " +
                             std::to_string(u) + " of " + std::to_string(n));
    }
  };
  switch (unit_of(in.op)) {
    case Unit::kHostDma:
      if (!host_dma) throw std::logic_error("controller: a host transfer on a chip with no host link");
      return host_dma_queue();
    case Unit::kWeightFetcher: check(matrix_units, "matrix unit"); return fetcher_queue(u);
    case Unit::kMatrix: check(matrix_units, "matrix unit"); return matrix_queue(u);
    case Unit::kVector: return vector_queue();
    case Unit::kDeviceDma: check(dma_engines, "DMA engine"); return dma_queue(u);
    case Unit::kCount: break;
  }
  throw std::logic_error("controller: no unit runs " + std::string(isa::opcode_name(in.op)));
}

// ---------------------------------------------------------------- DmaEngine
DmaEngine::DmaEngine(sc_core::sc_module_name name, UnitContext& ctx, int64_t latency_cycles, double bytes_per_ns)
    : sc_module(name),
      socket("socket"),
      queue("queue", queue_depth(ctx)),
      ctx_(ctx),
      latency_cycles_(latency_cycles),
      bytes_per_ns_(bytes_per_ns) {
  stats_.add("transfers", "instructions", "transfer instructions run (read_host/write_host or dma_read/dma_write)",
             [this] { return log_.count(); });
  stats_.add("busy_cycles", "cycles", "cycles from a transfer's start to its last byte", [this] { return busy(log_); });
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

// ---------------------------------------------------------------- WeightFetcher
WeightFetcher::WeightFetcher(sc_core::sc_module_name name, UnitContext& ctx, WeightFifo& fifo)
    : sc_module(name), socket("socket"), queue("queue", queue_depth(ctx)), ctx_(ctx), fifo_(fifo) {
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
    fifo_.fill(WeightTile{idx, in.bytes, ready, in.weight_source != isa::WeightSource::kUnifiedBuffer});
    ctx_.tracker.finish_at(idx, ready);
  }
}

// ---------------------------------------------------------------- MatrixUnit
MatrixUnit::MatrixUnit(sc_core::sc_module_name name, UnitContext& ctx, WeightFifo& fifo, UnifiedBufferPorts& ub)
    : sc_module(name),
      queue("queue", queue_depth(ctx)),
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
             [this] { return busy(drain_log_); });
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
    bool from_weight_memory = false;
    for (int32_t t = 0; t < std::max<int32_t>(1, in.weight_tiles); ++t) {
      const WeightTile w = fifo_.pop();
      ready_cycles_.push_back(w.ready_cycle);
      from_weight_memory |= w.instruction >= 0 && w.from_weight_memory;
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
    log_.add(requested, stalled_until, kWeightStall, in.layer, idx);
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

// ---------------------------------------------------------------- VectorUnit
VectorUnit::VectorUnit(sc_core::sc_module_name name, UnitContext& ctx, UnifiedBufferPorts& ub)
    : sc_module(name), queue("queue", queue_depth(ctx)), ctx_(ctx), ub_(ub) {
  stats_.add("instructions", "instructions", "activate and vector instructions run",
             [this] { return log_.count(); });
  stats_.add("busy_cycles", "cycles", "cycles the vector unit was busy", [this] { return busy(log_); });
  stats_.add("ub_read_bytes", "bytes", "unified-buffer bytes read by vector instructions", [this] { return ub_read_bytes_; });
  stats_.add("ub_write_bytes", "bytes", "unified-buffer bytes written by activate and vector instructions",
             [this] { return ub_write_bytes_; });
  stats_.add("accumulator_reads", "values", "accumulator values drained by activate", [this] { return accumulator_reads_; });
  functions_ = vector_functions(ctx.program);
  function_ops_.assign(functions_.size(), 0);
  for (size_t i = 0; i < functions_.size(); ++i) {
    stats_.add("ops_" + std::string(functions_[i]), "ops", "element operations of " + std::string(functions_[i]),
               [this, i] { return function_ops_[i]; });
  }
  SC_THREAD(run);
}

int64_t VectorUnit::compute_cycles(const VectorUnitConfig& cfg, const Instruction& in) {
  // activate drains one accumulator value per lane (and sublane) per cycle; element-wise
  // work moves lane_bytes per lane per cycle (TPU v1: 8-bit lanes, so 16-bit data takes two),
  // at its function class's rate (vector_unit.cycles_per_op).
  if (in.op == Opcode::kActivate) {
    return saturating_add(ceil_div(in.rows * in.cols, cfg.values_per_cycle()), cfg.pipeline_latency_cycles);
  }
  return saturating_add(cfg.element_cycles(in.elements, in.element_bytes, in.vector_class), cfg.pipeline_latency_cycles);
}

void VectorUnit::run() {
  const auto& ubc = ctx_.unified_buffer;
  for (;;) {
    queue.read(dispatch_);
    busy_since_ = ctx_.clock.now();
    const int32_t idx = dispatch_.index;
    const Instruction& in = dispatch_.in;
    // An activate waits here for the matmuls that fill its accumulator half.
    for (int32_t producer : ctx_.tracker.take_unit_waits(idx)) {
      while (ctx_.tracker.finish(producer) == CompletionTracker::kUnknown) sc_core::wait(ctx_.tracker.changed());
      ctx_.clock.wait_until(ctx_.tracker.finish(producer));
    }
    const int64_t start = ctx_.clock.now();
    const InstructionActivity act = activity_of(in, ctx_.array);
    ub_read_bytes_ += static_cast<int64_t>(act.ub_read_bytes);
    ub_write_bytes_ += static_cast<int64_t>(act.ub_write_bytes);
    accumulator_reads_ += act.accumulator_reads;
    for (const VectorOps& v : act.vector) {
      for (size_t i = 0; i < functions_.size(); ++i) {
        if (v.count > 0 && functions_[i] == v.function) function_ops_[i] += v.count;
      }
    }
    int64_t end = saturating_add(start, compute_cycles(ctx_.vector_unit, in));
    if (in.ub_read_bytes > 0 && !ctx_.ideal_memory) {
      end = std::max(end, ub_.read.serve(start, ceil_div(static_cast<int64_t>(in.ub_read_bytes), ubc.read_bytes_per_cycle), in.layer, idx));
    }
    if (in.ub_write_bytes > 0 && !ctx_.ideal_memory) {
      end = std::max(end, ub_.write.serve(start, ceil_div(static_cast<int64_t>(in.ub_write_bytes), ubc.write_bytes_per_cycle), in.layer, idx));
    }
    ctx_.clock.wait_until(end);
    log_.add(start, end, static_cast<int32_t>(in.op), in.layer, idx);
    ctx_.tracker.finish_at(idx, end);
    busy_since_ = -1;
  }
}

// ---------------------------------------------------------------- Controller
Controller::Controller(sc_core::sc_module_name name, UnitContext& ctx, std::vector<sc_core::sc_fifo<Dispatch>*> queues,
                       QueueLayout layout)
    : sc_module(name), ctx_(ctx), queues_(std::move(queues)), layout_(layout) {
  stats_.add("instructions", "instructions", "instructions in the program", [this] {
    return static_cast<int64_t>(ctx_.program.instructions.size());
  });
  add_kind_cycles(stats_, log_, kKindNames, "controller cycles");
  SC_THREAD(run);
}

void Controller::run() {
  // The program's fixed start-up (kernel launch) before its first instruction issues: the
  // controller's, booked to no layer.
  if (const int64_t launch = ctx_.clock.cycles_for_ns(ctx_.controller.launch_overhead_ns); launch > 0) {
    ctx_.clock.wait_until(launch);
    log_.add(0, launch, kIssue, -1, -1, static_cast<uint8_t>(Opcode::kSync));
  }
  // The program is read in order through its cursor (the compact program is never
  // expanded: issue 19); the instructions in flight are kept, decoded, for the hazard checks.
  const isa::InstructionStream& instrs = ctx_.program.instructions;
  for (auto it = instrs.begin(); it != instrs.end(); ++it) {
    const auto idx = static_cast<int32_t>(it.index());
    const Instruction& in = *it;
    issue(in, idx);
    if (in.op == Opcode::kHalt || in.op == Opcode::kSync) {
      wait_for_all(in, idx);
      if (in.op == Opcode::kHalt) break;
      continue;
    }
    const int unit = layout_.queue_of(in);
    wait_for_hazards(in, idx, unit);
    dispatch(in, idx, unit);
  }
  end_cycle_ = ctx_.clock.now();
  finished_ = true;
}

void Controller::issue(const Instruction& in, int32_t idx) {
  const int64_t issue_start = ctx_.clock.now();
  busy_since_ = issue_start;
  if (on_issue_ && idx > 0 && static_cast<uint32_t>(idx) % on_issue_every_ == 0) on_issue_(issue_start);
  ctx_.clock.wait_until(saturating_add(issue_start, ctx_.controller.issue_cycles));
  log_.add(issue_start, ctx_.clock.now(), kIssue, in.layer, idx, static_cast<uint8_t>(in.op));
}

void Controller::wait_for_all(const Instruction& in, int32_t idx) {
  const int64_t wait_start = ctx_.clock.now();
  // A barrier orders data: it need not wait for weight tiles fetched ahead into a FIFO,
  // which only a matmul after it may free (waiting for them could deadlock).
  const bool barrier = ctx_.barrier != nullptr && in.op == Opcode::kSync;
  auto prefetch = [&](const Flight& j) {
    return barrier && j.unit >= layout_.fetcher_queue(0) && j.unit < layout_.fetcher_queue(layout_.matrix_units);
  };
  for (;;) {
    int64_t latest = 0;
    bool unknown = false;
    for (const Flight& j : in_flight_) {
      if (prefetch(j)) continue;
      const int64_t f = ctx_.tracker.finish(j.index);
      if (f == CompletionTracker::kUnknown) unknown = true;
      else latest = std::max(latest, f);
    }
    if (unknown) {
      sc_core::wait(ctx_.tracker.changed());
      continue;
    }
    ctx_.clock.wait_until(latest);
    break;
  }
  // On a chip of several cores a sync is also a barrier: every core's share of the work
  // before it is done when any core goes on.
  if (barrier) ctx_.barrier->arrive_and_wait();
  std::erase_if(in_flight_, [&](const Flight& j) { return !prefetch(j); });
  log_.add(wait_start, ctx_.clock.now(), kHazardOnCompute, in.layer, idx, static_cast<uint8_t>(in.op));
  ctx_.tracker.dispatched(idx, ctx_.clock.now(), in.layer);
  ctx_.tracker.finish_at(idx, ctx_.clock.now());
}

void Controller::wait_for_hazards(const Instruction& in, int32_t idx, int my_unit) {
  const int64_t stall_start = ctx_.clock.now();
  int32_t blocker = -1;
  Opcode blocker_op = Opcode::kHalt;
  // The conflicts with in-flight instructions are tested once: while this one waits,
  // in_flight_ only loses the instructions that finish.
  {
    const int64_t now = ctx_.clock.now();
    std::erase_if(in_flight_, [&](const Flight& j) { return ctx_.tracker.finish(j.index) <= now; });
    hazards_.clear();
    conflicts_.trim();
    for (const Flight& j : in_flight_) {
      if (j.unit == my_unit) continue;  // a unit runs its own instructions in order
      const int spaces = conflicts_.spaces(in, j.in);
      if (spaces != 0) hazards_.push_back(Hazard{j.index, spaces, j.unit, j.in.op});
    }
  }
  const int vector_unit = layout_.vector_queue();
  for (;;) {
    const int64_t now = ctx_.clock.now();
    std::erase_if(in_flight_, [&](const Flight& j) { return ctx_.tracker.finish(j.index) <= now; });
    std::erase_if(hazards_, [&](const Hazard& h) { return ctx_.tracker.finish(h.index) <= now; });
    bool unknown = false;
    int64_t latest = -1;
    unit_waits_.clear();
    for (const Hazard& h : hazards_) {
      if (h.spaces == RegionConflicts::kAccumulators && my_unit == vector_unit && layout_.is_matrix(h.unit)) {
        unit_waits_.push_back(h.index);  // the accumulator half: waited for in the vector unit
        continue;
      }
      if (blocker < 0) blocker = h.index, blocker_op = h.op;
      const int64_t f = ctx_.tracker.finish(h.index);
      if (f == CompletionTracker::kUnknown) unknown = true;
      else latest = std::max(latest, f);
    }
    if (unknown) {
      sc_core::wait(ctx_.tracker.changed());
    } else if (latest > now) {
      ctx_.clock.wait_until(latest);
    } else {
      break;
    }
  }
  if (blocker >= 0) {
    const Opcode bop = blocker_op;
    // Waits for device memory (weights, device DMA) are memory waits, like weight reads.
    const int32_t kind = (bop == Opcode::kReadHost || bop == Opcode::kWriteHost) ? kHazardOnHost
                         : (bop == Opcode::kReadWeights || bop == Opcode::kDmaRead || bop == Opcode::kDmaWrite)
                             ? kHazardOnWeights
                             : kHazardOnCompute;
    log_.add(stall_start, ctx_.clock.now(), kind, in.layer, idx, static_cast<uint8_t>(in.op));
  }
  ctx_.tracker.wait_in_unit(idx, unit_waits_);
}

void Controller::dispatch(const Instruction& in, int32_t idx, int unit) {
  auto* queue = queues_[static_cast<size_t>(unit)];
  const int64_t queue_start = ctx_.clock.now();
  queue->write(Dispatch{idx, in});  // a full unit queue blocks the in-order controller
  log_.add(queue_start, ctx_.clock.now(), kQueueFull, in.layer, idx, static_cast<uint8_t>(in.op));
  ctx_.tracker.dispatched(idx, ctx_.clock.now(), in.layer);
  in_flight_.push_back(Flight{idx, unit, in});
}

}  // namespace tessera::models
