#include "models/units/controller.h"

#include <utility>

#include "models/units/unit_stats.h"

namespace tessera::models {

using isa::Instruction;
using isa::Opcode;

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
