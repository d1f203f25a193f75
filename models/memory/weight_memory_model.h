#pragma once
// Off-chip weight memory behind one interface: the weight fetcher sees a TLM-2.0
// target socket, the engine sees bytes, busy time and busy intervals. Each memory
// technology is one implementation in its own file (simple_dram.h, hbm.h), built by
// make_weight_memory() from the config's `technology:` (registry.cpp); ideal_memory: true
// replaces it with make_ideal_weight_memory() (ideal_memory.h), whose reads take no time.
//
// Contract of an implementation:
//  - b_transport on target_socket(): a read of transfer_of(payload).bytes at address; sets
//    TLM_OK_RESPONSE and annotates `delay` so that sc_time_stamp() + delay is the
//    cycle the last byte has arrived (the tile is usable from then on).
//  - count_bytes(payload, bytes) for every request (reads: the weight fetchers and dma_read;
//    writes: dma_write of outputs and spills); busy_cycles() and busy_log(): the cycles
//    the memory as a whole transferred data (for utilization and the trace track).
//  - the payload's Transfer extension (models/common/transfer.h) gives the byte count at
//    full width and the layer / instruction that label the busy intervals.
#include <systemc>
#include <tlm>

#include <cstdint>
#include <memory>

#include "models/common/clock.h"
#include "models/common/interval_log.h"
#include "models/common/stats.h"
#include "models/memory/technologies.h"
#include "models/memory/params.h"

namespace tessera::models {

class WeightMemoryModel : public sc_core::sc_module, public StatProvider {
 public:
  explicit WeightMemoryModel(sc_core::sc_module_name name) : sc_core::sc_module(name) {
    // Read through the interface at collection time, so every model reports these.
    stats_.add("bytes_read", "bytes", "bytes read (weight tiles, dma_read)", [this] { return static_cast<int64_t>(bytes_read()); });
    stats_.add("bytes_written", "bytes", "bytes written (dma_write)", [this] { return static_cast<int64_t>(bytes_written()); });
    stats_.add("busy_cycles", "cycles", "cycles the memory transferred data", [this] { return busy_cycles(); });
  }
  virtual tlm::tlm_target_socket<>& target_socket() = 0;
  uint64_t bytes_read() const { return bytes_read_; }
  uint64_t bytes_written() const { return bytes_written_; }
  virtual int64_t busy_cycles() const = 0;
  virtual const IntervalLog& busy_log() const = 0;
  // Whether the busy intervals are kept (busy_cycles() and the counters need none of them).
  virtual void keep_intervals(bool keep) = 0;

 protected:
  void count_bytes(const tlm::tlm_generic_payload& payload, uint64_t bytes) {
    (payload.is_write() ? bytes_written_ : bytes_read_) += bytes;
  }

 private:
  uint64_t bytes_read_ = 0;
  uint64_t bytes_written_ = 0;
};

// Builds the model for cfg.technology; throws std::invalid_argument for a technology
// with no model (the config loader rejects those first, with file and line).
std::unique_ptr<WeightMemoryModel> make_weight_memory(sc_core::sc_module_name name, const WeightMemoryConfig& cfg,
                                                      const CoreClock& clock);
// The ideal memory of ideal_memory: true (models/memory/ideal_memory.h): reads take no time.
std::unique_ptr<WeightMemoryModel> make_ideal_weight_memory(sc_core::sc_module_name name);

}  // namespace tessera::models
