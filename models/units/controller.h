#pragma once
// The controller: issues the program in order to the unit queues, resolving hazards.
#include <systemc>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "models/common/stats.h"
#include "models/units/dispatch.h"
#include "models/units/region_conflicts.h"
#include "models/units/unit_context.h"

namespace tessera::models {

// Fetches instructions in order, waits for read/write-region conflicts with
// in-flight instructions of other units, and dispatches to the unit queues.
// One conflict does not hold up dispatch: an activate (any vector-unit instruction) whose
// only conflicts with in-flight matmuls are on their accumulator half is dispatched at
// once and waits in the vector unit for those matmuls' last results (the accumulators'
// double buffering: the next group's matmuls, on the other half, dispatch behind it and
// compute while this group drains and is activated).
class Controller : public sc_core::sc_module, public StatProvider {
 public:
  enum Kind : int32_t { kHazardOnHost = 0, kHazardOnCompute, kHazardOnWeights, kQueueFull, kIssue };
  static constexpr KindNames<Kind, 5> kKindNames = {{{kHazardOnHost, "wait_host"},
                                                     {kHazardOnCompute, "wait_raw"},
                                                     {kHazardOnWeights, "wait_weights"},
                                                     {kQueueFull, "queue_full"},
                                                     {kIssue, "issue"}}};
  SC_HAS_PROCESS(Controller);
  Controller(sc_core::sc_module_name name, UnitContext& ctx, std::vector<sc_core::sc_fifo<Dispatch>*> queues,
             QueueLayout layout = {});
  // No interval the controller logs from now on begins before this cycle: the issue of the
  // instruction it is working on, or now once it has finished.
  int64_t low_water(int64_t now) const { return finished_ ? now : std::min(busy_since_, now); }
  const IntervalLog& log() const { return log_; }  // instruction = the head instruction
  IntervalLog& log() { return log_; }  // the cycle breakdown's access (sim/engine)
  // Calls `f(cycle)` when it starts to issue every `every`-th instruction (from the
  // `every`-th on), at that cycle: no interval the controller logs from then on begins
  // earlier. For the cycle breakdown, which classifies the cycles behind the units as the
  // run goes (sim/engine); it must not wait or notify.
  void on_issue(std::function<void(int64_t)> f, uint32_t every) {
    on_issue_ = std::move(f);
    on_issue_every_ = every == 0 ? 1 : every;
  }
  int64_t end_cycle() const { return end_cycle_; }
  bool finished() const { return finished_; }

 private:
  // An instruction dispatched and not yet known to have finished, decoded for the hazard checks.
  struct Flight {
    int32_t index = -1;
    int unit = 0;
    isa::Instruction in;
  };
  // An in-flight instruction the one being dispatched conflicts with.
  struct Hazard {
    int32_t index;
    int spaces;  // RegionConflicts bits
    int unit;
    isa::Opcode op;
  };
  void run();
  // Steps of one instruction, in order: issue; halt or sync: wait for everything in flight
  // (a sync on a chip of several cores: also for the other cores); any other: wait for its
  // hazards, then dispatch to its unit's queue.
  void issue(const isa::Instruction& in, int32_t idx);
  void wait_for_all(const isa::Instruction& in, int32_t idx);
  void wait_for_hazards(const isa::Instruction& in, int32_t idx, int unit);
  void dispatch(const isa::Instruction& in, int32_t idx, int unit);
  UnitContext& ctx_;
  std::vector<sc_core::sc_fifo<Dispatch>*> queues_;
  QueueLayout layout_;
  IntervalLog log_;
  int64_t busy_since_ = 0;
  std::function<void(int64_t)> on_issue_;
  uint32_t on_issue_every_ = 1;
  int64_t end_cycle_ = 0;
  bool finished_ = false;
  std::vector<Flight> in_flight_;
  RegionConflicts conflicts_;
  std::vector<Hazard> hazards_;       // of the instruction being dispatched
  std::vector<int32_t> unit_waits_;   // its accumulator waits, left to the vector unit
};

}  // namespace tessera::models
