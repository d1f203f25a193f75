#pragma once
// Parameters of the PCIe host link: ArchConfig::pcie.
// sim/config/arch_config.cpp fills them from YAML and validates every field.
#include <cstdint>
#include <string>

namespace tessera {

struct PcieConfig {
  int64_t generation = 3;          // 1..6
  int64_t lanes = 16;              // 1, 2, 4, 8, 16, 32
  double transfer_rate_gt_per_s = 0;  // per lane, from the generation
  std::string encoding;            // "8b10b" | "128b130b" | "flit" (default from the generation)
  double encoding_efficiency = 0;  // 8b/10b = 0.8 (gen 1-2), 128b/130b (gen 3-5), FLIT 242/256 (gen 6)
  int64_t max_payload_bytes = 256; // data bytes per TLP
  int64_t tlp_overhead_bytes = 24; // header + sequence + LCRC + framing per TLP
  double latency_ns = 0;           // one-way latency of a DMA transfer

  // Usable link rate after line encoding, in bytes per second.
  double link_bytes_per_s() const {
    return static_cast<double>(lanes) * transfer_rate_gt_per_s * 1e9 * encoding_efficiency / 8.0;
  }
};

}  // namespace tessera
