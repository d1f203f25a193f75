#pragma once
// The vector unit: activate (accumulators -> function -> unified buffer) and element-wise
// vector instructions, paced by its lanes and the unified-buffer ports.
#include <systemc>

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "models/common/stats.h"
#include "models/units/dispatch.h"
#include "models/units/unit_context.h"

namespace tessera::models {

class VectorUnit : public sc_core::sc_module, public StatProvider {
 public:
  sc_core::sc_fifo<Dispatch> queue;
  SC_HAS_PROCESS(VectorUnit);
  VectorUnit(sc_core::sc_module_name name, UnitContext& ctx, UnifiedBufferPorts& ub);
  const IntervalLog& log() const { return log_; }  // kind: opcode
  IntervalLog& log() { return log_; }  // the cycle breakdown's access (sim/engine)
  // No interval this unit logs from now on begins before this cycle: when it took the
  // instruction it is running, or now when it waits for one.
  int64_t low_water(int64_t now) const { return busy_since_ >= 0 ? std::min(busy_since_, now) : now; }

  // Cycles one activate/vector instruction occupies the unit (without port contention).
  static int64_t compute_cycles(const VectorUnitConfig& cfg, const isa::Instruction& in);

 private:
  void run();
  Dispatch dispatch_;  // the instruction being run
  UnitContext& ctx_;
  UnifiedBufferPorts& ub_;
  IntervalLog log_;
  int64_t busy_since_ = -1;  // see low_water
  // Activity for the energy model (activity.h): element operations per function.
  std::vector<std::string_view> functions_;
  std::vector<int64_t> function_ops_;
  int64_t ub_read_bytes_ = 0;
  int64_t ub_write_bytes_ = 0;
  int64_t accumulator_reads_ = 0;
};

}  // namespace tessera::models
