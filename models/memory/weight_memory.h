#pragma once
// Off-chip weight memory (DRAM). Each channel is a server; a request is
// interleaved evenly over all channels and completes when its last channel
// finishes, plus the first-byte latency.
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include <vector>

#include "models/common/clock.h"
#include "models/common/bandwidth_server.h"
#include "sim/config/arch_config.h"

namespace tessera::models {

class WeightMemory : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<WeightMemory> socket;

  WeightMemory(sc_core::sc_module_name name, const WeightMemoryConfig& cfg, const CoreClock& clock);

  uint64_t bytes_read() const { return bytes_read_; }
  // Busy intervals of the memory as a whole (channel 0 stands for all: requests are interleaved).
  const BandwidthServer& channel(size_t i) const { return channels_[i]; }
  void tag_next(int32_t layer, int32_t instruction) { tag_layer_ = layer, tag_instruction_ = instruction; }

 private:
  void b_transport(tlm::tlm_generic_payload& payload, sc_core::sc_time& delay);

  WeightMemoryConfig cfg_;
  const CoreClock& clock_;
  int64_t latency_cycles_;
  std::vector<BandwidthServer> channels_;
  uint64_t bytes_read_ = 0;
  int32_t tag_layer_ = -1, tag_instruction_ = -1;
};

}  // namespace tessera::models
