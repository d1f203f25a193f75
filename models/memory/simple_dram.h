#pragma once
// A simple DRAM weight memory: each channel is a bandwidth server; a request is
// interleaved evenly over all channels and completes when its last channel
// finishes, plus the first-byte latency. No banks, rows or refresh.
#include <tlm_utils/simple_target_socket.h>

#include <vector>

#include "models/common/bandwidth_server.h"
#include "models/memory/weight_memory_model.h"

namespace tessera::models {

class SimpleDram final : public WeightMemoryModel {
 public:
  SimpleDram(sc_core::sc_module_name name, const WeightMemoryConfig& cfg, const CoreClock& clock);

  tlm::tlm_target_socket<>& target_socket() override { return socket_; }
  // Channel 0 stands for all: every request is spread over every channel.
  int64_t busy_cycles() const override { return channels_[0].busy_cycles(); }
  const IntervalLog& busy_log() const override { return channels_[0].log(); }
  void keep_intervals(bool keep) override {
    for (auto& c : channels_) c.keep_intervals(keep);
  }

 private:
  void b_transport(tlm::tlm_generic_payload& payload, sc_core::sc_time& delay);

  tlm_utils::simple_target_socket<SimpleDram> socket_;
  WeightMemoryConfig cfg_;
  const CoreClock& clock_;
  int64_t latency_cycles_;
  std::vector<BandwidthServer> channels_;
};

}  // namespace tessera::models
