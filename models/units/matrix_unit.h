#pragma once
// A matrix unit: runs matmul tiles on the systolic array as its dataflow model times them,
// logging active, weight-shift, weight-stall and input-stall intervals and the drains.
#include <systemc>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "models/array/systolic_timing.h"
#include "models/common/stats.h"
#include "models/memory/weight_fifo.h"
#include "models/units/activity.h"
#include "models/units/dispatch.h"
#include "models/units/unit_context.h"

namespace tessera::models {

class MatrixUnit : public sc_core::sc_module, public StatProvider {
 public:
  // kHostWeightStall: the FIFO is empty while its tiles cross the host link (residency.weights:
  // host), a wait on PCIe rather than on weight memory.
  enum Kind : int32_t { kActive = 0, kWeightShift, kWeightStall, kInputStall, kHostWeightStall };
  static constexpr KindNames<Kind, 5> kKindNames = {{{kActive, "matmul"},
                                                     {kWeightShift, "weight_shift"},
                                                     {kWeightStall, "weight_stall"},
                                                     {kInputStall, "input_stall"},
                                                     {kHostWeightStall, "host_weight_stall"}}};
  // Result drain after streaming ends: [stream_end, done) of each tile.
  const IntervalLog& drain_log() const { return drain_log_; }
  sc_core::sc_fifo<Dispatch> queue;
  SC_HAS_PROCESS(MatrixUnit);
  MatrixUnit(sc_core::sc_module_name name, UnitContext& ctx, WeightFifo& fifo, UnifiedBufferPorts& ub);
  const IntervalLog& log() const { return log_; }
  // The cycle breakdown's access (sim/engine: coalescing, and taking the intervals as it goes).
  IntervalLog& log() { return log_; }
  IntervalLog& drain_log() { return drain_log_; }
  int64_t macs() const { return macs_; }
  // No interval this unit logs from now on (array or drain) begins before this cycle: the
  // start of the matmul it is running (its dispatch, or when it took it, if earlier), or
  // now when it waits for one.
  int64_t low_water(int64_t now) const { return busy_since_ >= 0 ? std::min(busy_since_, now) : now; }

 private:
  void run();
  Dispatch dispatch_;  // the instruction being run
  UnitContext& ctx_;
  WeightFifo& fifo_;
  UnifiedBufferPorts& ub_;
  const array::DataflowModel& dataflow_;
  array::ArrayPipeline pipeline_;
  IntervalLog log_;
  IntervalLog drain_log_;
  int64_t busy_since_ = -1;  // see low_water
  int64_t macs_ = 0;
  int64_t tiles_ = 0;
  // Of the array's active (streaming) cycles, PE-cycles of PEs in the tile and outside it
  // (the TPU paper's Table 3 rows 2 and 3): they sum to rows x cols x matmul_cycles.
  int64_t useful_pe_cycles_ = 0;
  int64_t unused_pe_cycles_ = 0;
  std::vector<int64_t> ready_cycles_;  // the current matmul's FIFO tiles
  // Activity for the energy model (activity.h): MACs per precision pair, useful and idle.
  std::vector<std::pair<Dtype, Dtype>> pairs_;
  std::vector<int64_t> pair_macs_, pair_idle_macs_;
  int64_t register_bits_ = 0;
  int64_t ub_read_bytes_ = 0;
  int64_t accumulator_reads_ = 0;
  int64_t accumulator_writes_ = 0;
  void count(const InstructionActivity& a);
};

}  // namespace tessera::models
