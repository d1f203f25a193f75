#pragma once
// A DMA engine: host transfers over PCIe or device-memory transfers.
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <cstdint>

#include "models/common/stats.h"
#include "models/units/dispatch.h"
#include "models/units/unit_context.h"

namespace tessera::models {

// A DMA engine between a core's scratchpad and memory outside the chip's cores: host memory
// over the PCIe link (read_host / write_host: TPU v1's host DMA) or device memory
// (dma_read / dma_write). Each transfer costs the engine's own latency (descriptor, first
// byte), then whatever its target takes.
class DmaEngine : public sc_core::sc_module, public StatProvider {
 public:
  tlm_utils::simple_initiator_socket<DmaEngine> socket;  // to the PCIe link or device memory
  sc_core::sc_fifo<Dispatch> queue;
  SC_HAS_PROCESS(DmaEngine);
  // latency_cycles per transfer; bytes_per_ns: the engine's own rate (0: the target's alone).
  DmaEngine(sc_core::sc_module_name name, UnitContext& ctx, int64_t latency_cycles = 0, double bytes_per_ns = 0);
  const IntervalLog& log() const { return log_; }
  IntervalLog& log() { return log_; }  // the cycle breakdown's access (sim/engine), for device DMA
  void keep_intervals(bool keep) { log_.keep_intervals(keep); }

 private:
  void run();
  Dispatch dispatch_;  // the instruction being run
  UnitContext& ctx_;
  int64_t latency_cycles_;
  double bytes_per_ns_;
  IntervalLog log_;
  int64_t ub_read_bytes_ = 0;   // write_host / dma_write read the scratchpad
  int64_t ub_write_bytes_ = 0;  // read_host / dma_read write it
};

}  // namespace tessera::models
