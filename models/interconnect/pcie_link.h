#pragma once
// The host link: DMA transfers between host memory and the accelerator over PCIe.
// Transfers are split into TLPs of at most max_payload_bytes; each TLP carries
// tlp_overhead_bytes on the wire; the lane rate is reduced by the line encoding.
// The link is one server: concurrent transfers queue (host->device and
// device->host share it, a simplification of a full-duplex link noted in docs).
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include <cstdint>

#include "models/common/clock.h"
#include "models/common/stats.h"
#include "models/common/bandwidth_server.h"
#include "models/interconnect/params.h"

namespace tessera::models {

// Pure arithmetic of one transfer, independent of SystemC.
struct PcieTiming {
  explicit PcieTiming(const PcieConfig& cfg) : cfg_(cfg) {}
  uint64_t tlp_count(uint64_t bytes) const;
  uint64_t wire_bytes(uint64_t bytes) const;  // payload + per-TLP overhead
  double serialization_ns(uint64_t bytes) const;  // wire bytes at the encoded link rate
  double transfer_ns(uint64_t bytes) const;       // latency + serialization, on an idle link

 private:
  PcieConfig cfg_;
};

class PcieLink : public sc_core::sc_module, public StatProvider {
 public:
  tlm_utils::simple_target_socket<PcieLink> socket;  // host memory, as seen from the accelerator

  // `ideal`: transfers take no time (ideal_memory: true); their bytes are still counted.
  PcieLink(sc_core::sc_module_name name, const PcieConfig& cfg, const CoreClock& clock, bool ideal = false);

  // The kinds of the server's log: the direction of a transfer (the accelerator reads host
  // memory: to the device; it writes host memory: to the host).
  enum Kind : int32_t { kToDevice = 0, kToHost = 1 };
  static constexpr KindNames<Kind, 2> kKindNames = {{{kToDevice, "to_device"}, {kToHost, "to_host"}}};
  const BandwidthServer& server() const { return server_; }  // its log's kind: Kind
  BandwidthServer& server() { return server_; }
  uint64_t bytes_to_device() const { return bytes_to_device_; }
  uint64_t bytes_to_host() const { return bytes_to_host_; }
  const PcieTiming& timing() const { return timing_; }


 private:
  void b_transport(tlm::tlm_generic_payload& payload, sc_core::sc_time& delay);

  PcieTiming timing_;
  const CoreClock& clock_;
  int64_t latency_cycles_;
  BandwidthServer server_;
  bool ideal_ = false;
  uint64_t bytes_to_device_ = 0, bytes_to_host_ = 0;
  int64_t busy_cycles_to_device_ = 0, busy_cycles_to_host_ = 0;  // serialization, by direction
};

}  // namespace tessera::models
