#pragma once
// An HBM2 stack in pseudo-channel mode as the weight memory.
//
// Structure (JEDEC JESD235A; AMD PG313 "HBM Topology"; Intel UG-20031 §1.2-1.3): a
// stack has `channels` independent 128-bit channels (8 per stack); in pseudo-channel
// mode each channel is split into two 64-bit pseudo channels that share the command
// bus but transfer data independently, so a stack has 16 pseudo channels with
// 1/16 of its bandwidth each (HBM2 at 2.0 Gb/s per pin: 1024 bits * 2.0 Gb/s / 8 =
// 256 GB/s per stack, 16 GB/s per pseudo channel).
//
// Timing: consecutive `interleave_bytes` blocks of the address space map to
// consecutive pseudo channels (an assumption: the controller's address map is not
// part of the standard). Each pseudo channel is a bandwidth server; a request
// occupies every pseudo channel its blocks fall on, for its bytes there at the
// pseudo channel's rate, and completes when the last of them finishes, plus the
// first-byte latency. Unlike simple_dram, a small request uses only a few pseudo
// channels, so requests to different blocks proceed in parallel and requests to the
// same pseudo channel queue. No banks, rows or refresh.
#include <tlm_utils/simple_target_socket.h>

#include <vector>

#include "models/common/bandwidth_server.h"
#include "models/memory/weight_memory_model.h"

namespace tessera::models {

class HbmPseudoChannels final : public WeightMemoryModel {
 public:
  static constexpr int64_t kPseudoChannelsPerChannel = 2;  // JESD235A pseudo-channel mode
  static constexpr uint64_t kInterleaveBytes = 256;        // assumption: controller address map

  HbmPseudoChannels(sc_core::sc_module_name name, const WeightMemoryConfig& cfg, const CoreClock& clock);

  tlm::tlm_target_socket<>& target_socket() override { return socket_; }
  // Mean busy cycles over the pseudo channels: busy_cycles / total is the share of
  // the stack's bandwidth in use.
  int64_t busy_cycles() const override;
  // One interval per request: from its first pseudo channel's start to its last one's end.
  const IntervalLog& busy_log() const override { return log_; }
  void keep_intervals(bool keep) override {
    log_.keep_intervals(keep);
    for (auto& pc : pcs_) pc.keep_intervals(keep);
  }

  int64_t pseudo_channels() const { return static_cast<int64_t>(pcs_.size()); }
  const BandwidthServer& pseudo_channel(size_t i) const { return pcs_[i]; }
  // Bytes of [address, address + bytes) on each pseudo channel.
  std::vector<uint64_t> bytes_per_pseudo_channel(uint64_t address, uint64_t bytes) const;

 private:
  void b_transport(tlm::tlm_generic_payload& payload, sc_core::sc_time& delay);

  tlm_utils::simple_target_socket<HbmPseudoChannels> socket_;
  const CoreClock& clock_;
  double pc_bytes_per_ns_;
  int64_t latency_cycles_;
  std::vector<BandwidthServer> pcs_;
  IntervalLog log_;
};

}  // namespace tessera::models
