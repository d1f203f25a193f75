#include "models/memory/hbm.h"
#include "models/common/transfer.h"

#include <algorithm>

namespace tessera::models {

HbmPseudoChannels::HbmPseudoChannels(sc_core::sc_module_name name, const WeightMemoryConfig& cfg,
                                     const CoreClock& clock)
    : WeightMemoryModel(name),
      socket_("socket"),
      clock_(clock),
      pc_bytes_per_ns_(cfg.bandwidth_gb_per_s / static_cast<double>(cfg.channels * kPseudoChannelsPerChannel)),
      latency_cycles_(clock.cycles_for_ns(cfg.latency_ns)),
      pcs_(static_cast<size_t>(cfg.channels * kPseudoChannelsPerChannel)) {
  socket_.register_b_transport(this, &HbmPseudoChannels::b_transport);
}

std::vector<uint64_t> HbmPseudoChannels::bytes_per_pseudo_channel(uint64_t address, uint64_t bytes) const {
  const uint64_t P = pcs_.size(), G = kInterleaveBytes;
  std::vector<uint64_t> share(P, 0);
  // A partial first block, whole blocks round-robin, a partial last block.
  const uint64_t head = std::min(bytes, G - address % G);
  share[(address / G) % P] += head;
  address += head, bytes -= head;
  const uint64_t blocks = bytes / G, first = address / G;
  for (uint64_t p = 0; p < P; ++p) share[p] += (blocks / P) * G;
  for (uint64_t i = 0; i < blocks % P; ++i) share[(first + i) % P] += G;
  address += blocks * G, bytes -= blocks * G;
  if (bytes > 0) share[(address / G) % P] += bytes;
  return share;
}

int64_t HbmPseudoChannels::busy_cycles() const {
  int64_t sum = 0;
  for (const auto& pc : pcs_) sum += pc.busy_cycles();
  return sum / static_cast<int64_t>(pcs_.size());
}

void HbmPseudoChannels::b_transport(tlm::tlm_generic_payload& payload, sc_core::sc_time& delay) {
  const Transfer transfer = transfer_of(payload);
  const uint64_t bytes = transfer.bytes;
  const int64_t arrival = clock_.cycle_of(sc_core::sc_time_stamp() + delay);
  const std::vector<uint64_t> share = bytes_per_pseudo_channel(payload.get_address(), bytes);
  int64_t first_start = INT64_MAX, end = arrival;
  for (size_t p = 0; p < pcs_.size(); ++p) {
    if (share[p] == 0) continue;
    const int64_t service = clock_.cycles_for_ns(static_cast<double>(share[p]) / pc_bytes_per_ns_);
    pcs_[p].forget_before(clock_.now());  // requests come at the current cycle or later
    const int64_t pc_end = pcs_[p].serve(arrival, service, transfer.layer, transfer.instruction);
    first_start = std::min(first_start, pc_end - service);
    end = std::max(end, pc_end);
  }
  if (first_start != INT64_MAX) log_.add(first_start, end, 0, transfer.layer, transfer.instruction);
  count_bytes(payload, bytes);
  delay = clock_.at(saturating_add(end, latency_cycles_)) - sc_core::sc_time_stamp();
  payload.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace tessera::models
