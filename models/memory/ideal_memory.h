#pragma once
// Ideal weight memory (ideal_memory: true, `tessera run --ideal-memory`): every read is
// complete the cycle it is asked for. The bytes are still counted, so reports keep their
// traffic and operational intensities; busy time and busy intervals stay empty. Used to
// compare compute cycles alone with analytical peers (docs/validation.md).
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include "models/memory/weight_memory_model.h"

namespace tessera::models {

class IdealWeightMemory : public WeightMemoryModel {
 public:
  IdealWeightMemory(sc_core::sc_module_name name);
  tlm::tlm_target_socket<>& target_socket() override { return socket_; }
  int64_t busy_cycles() const override { return 0; }
  const IntervalLog& busy_log() const override { return log_; }
  void keep_intervals(bool keep) override { log_.keep_intervals(keep); }  // the log stays empty either way

 private:
  void b_transport(tlm::tlm_generic_payload& payload, sc_core::sc_time& delay);
  tlm_utils::simple_target_socket<IdealWeightMemory> socket_;
  IntervalLog log_;
};

}  // namespace tessera::models
