#include "models/memory/simple_dram.h"
#include "models/common/transfer.h"

#include <algorithm>

namespace tessera::models {

SimpleDram::SimpleDram(sc_core::sc_module_name name, const WeightMemoryConfig& cfg, const CoreClock& clock)
    : WeightMemoryModel(name),
      socket_("socket"),
      cfg_(cfg),
      clock_(clock),
      latency_cycles_(clock.cycles_for_ns(cfg.latency_ns)),
      channels_(static_cast<size_t>(cfg.channels)) {
  socket_.register_b_transport(this, &SimpleDram::b_transport);
}

void SimpleDram::b_transport(tlm::tlm_generic_payload& payload, sc_core::sc_time& delay) {
  const Transfer transfer = transfer_of(payload);
  const uint64_t bytes = transfer.bytes;
  const int64_t arrival = clock_.cycle_of(sc_core::sc_time_stamp() + delay);
  const double channel_bytes_per_ns = cfg_.bandwidth_gb_per_s / static_cast<double>(cfg_.channels);
  const uint64_t n = channels_.size();
  int64_t end = arrival;
  for (uint64_t c = 0; c < n; ++c) {
    const uint64_t share = bytes / n + (c < bytes % n ? 1 : 0);
    if (share == 0) continue;
    const int64_t service = clock_.cycles_for_ns(static_cast<double>(share) / channel_bytes_per_ns);
    // Requests come at the current cycle or later: reservations that ended by now are done with.
    channels_[c].forget_before(clock_.now());
    end = std::max(end, channels_[c].serve(arrival, service, transfer.layer, transfer.instruction));
  }
  count_bytes(payload, bytes);
  delay = clock_.at(saturating_add(end, latency_cycles_)) - sc_core::sc_time_stamp();
  payload.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace tessera::models
