#pragma once
// The weight fetcher of a matrix unit: reads weight tiles (read_weights) from weight memory,
// or over the host link, into the unit's weight FIFO, waiting for a free slot.
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <cstdint>

#include "models/common/stats.h"
#include "models/memory/weight_fifo.h"
#include "models/units/dispatch.h"
#include "models/units/unit_context.h"

namespace tessera::models {

class WeightFetcher : public sc_core::sc_module, public StatProvider {
 public:
  enum Kind : int32_t { kFifoFull = 0 };
  static constexpr KindNames<Kind, 1> kKindNames = {{{kFifoFull, "fifo_full"}}};
  tlm_utils::simple_initiator_socket<WeightFetcher> socket;  // to weight memory, or the host link (weights: host)
  sc_core::sc_fifo<Dispatch> queue;
  SC_HAS_PROCESS(WeightFetcher);
  WeightFetcher(sc_core::sc_module_name name, UnitContext& ctx, WeightFifo& fifo);
  const IntervalLog& log() const { return log_; }  // kFifoFull: waiting for a FIFO slot
  void keep_intervals(bool keep) { log_.keep_intervals(keep); }  // only traces read them

 private:
  void run();
  Dispatch dispatch_;  // the instruction being run
  UnitContext& ctx_;
  WeightFifo& fifo_;
  IntervalLog log_;
  int64_t tiles_ = 0;
  int64_t fifo_bytes_ = 0;
};

}  // namespace tessera::models
