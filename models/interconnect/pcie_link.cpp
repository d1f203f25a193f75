#include "models/interconnect/pcie_link.h"
#include "models/common/transfer.h"

#include <cmath>

namespace tessera::models {

uint64_t PcieTiming::tlp_count(uint64_t bytes) const {
  const auto payload = static_cast<uint64_t>(cfg_.max_payload_bytes);
  return (bytes + payload - 1) / payload;
}

uint64_t PcieTiming::wire_bytes(uint64_t bytes) const {
  return bytes + tlp_count(bytes) * static_cast<uint64_t>(cfg_.tlp_overhead_bytes);
}

double PcieTiming::serialization_ns(uint64_t bytes) const {
  return static_cast<double>(wire_bytes(bytes)) / cfg_.link_bytes_per_s() * 1e9;
}

double PcieTiming::transfer_ns(uint64_t bytes) const { return cfg_.latency_ns + serialization_ns(bytes); }

PcieLink::PcieLink(sc_core::sc_module_name name, const PcieConfig& cfg, const CoreClock& clock, bool ideal)
    : sc_module(name),
      socket("socket"),
      timing_(cfg),
      clock_(clock),
      latency_cycles_(clock.cycles_for_ns(cfg.latency_ns)),
      ideal_(ideal) {
  socket.register_b_transport(this, &PcieLink::b_transport);
  stats_.add("bytes_to_device", "bytes", "payload bytes host -> accelerator", [this] { return static_cast<int64_t>(bytes_to_device_); });
  stats_.add("bytes_to_host", "bytes", "payload bytes accelerator -> host", [this] { return static_cast<int64_t>(bytes_to_host_); });
  stats_.add("busy_cycles", "cycles", "cycles the link serialized TLPs", [this] { return server_.busy_cycles(); });
  stats_.add("busy_cycles_to_device", "cycles", "cycles the link serialized TLPs host -> accelerator (inputs, spill reads, host-resident weights)",
             [this] { return busy_cycles_to_device_; });
  stats_.add("busy_cycles_to_host", "cycles", "cycles the link serialized TLPs accelerator -> host (output)",
             [this] { return busy_cycles_to_host_; });
}

void PcieLink::b_transport(tlm::tlm_generic_payload& payload, sc_core::sc_time& delay) {
  const Transfer transfer = transfer_of(payload);
  const uint64_t bytes = transfer.bytes;
  if (ideal_) {  // no time passes: the delay stays as given
    (payload.is_read() ? bytes_to_device_ : bytes_to_host_) += bytes;
    payload.set_response_status(tlm::TLM_OK_RESPONSE);
    return;
  }
  const int64_t arrival = clock_.cycle_of(sc_core::sc_time_stamp() + delay);
  // The link is occupied while the TLPs serialize; the latency overlaps with
  // other transfers (it is pipeline depth, not occupancy).
  const int64_t service = clock_.cycles_for_ns(timing_.serialization_ns(bytes));
  server_.forget_before(clock_.now());  // requests come at the current cycle or later
  const int64_t end = server_.serve(arrival, service, transfer.layer, transfer.instruction,
                                    payload.is_read() ? kToDevice : kToHost);
  (payload.is_read() ? bytes_to_device_ : bytes_to_host_) += bytes;
  int64_t& busy = payload.is_read() ? busy_cycles_to_device_ : busy_cycles_to_host_;
  busy = saturating_add(busy, service);
  delay = clock_.at(saturating_add(end, latency_cycles_)) - sc_core::sc_time_stamp();
  payload.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace tessera::models
