#include "models/units/vector_unit.h"

#include <string>

#include "models/units/activity.h"
#include "models/units/unit_stats.h"

namespace tessera::models {

using isa::Instruction;
using isa::Opcode;

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

VectorUnit::VectorUnit(sc_core::sc_module_name name, UnitContext& ctx, UnifiedBufferPorts& ub)
    : sc_module(name), queue("queue", unit_queue_depth(ctx)), ctx_(ctx), ub_(ub) {
  stats_.add("instructions", "instructions", "activate and vector instructions run",
             [this] { return log_.count(); });
  stats_.add("busy_cycles", "cycles", "cycles the vector unit was busy", [this] { return log_.busy(); });
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

}  // namespace tessera::models
