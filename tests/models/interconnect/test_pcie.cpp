#include <gtest/gtest.h>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <vector>

#include "models/common/transfer.h"
#include "models/interconnect/pcie_link.h"
#include "sim/common/yaml_reader.h"
#include "sim/config/arch_config.h"

using tessera::PcieConfig;
using tessera::models::PcieTiming;

namespace {
PcieConfig link(int gen, int lanes, int payload, int overhead, double latency_ns) {
  const std::string y = "name: p\nclock_mhz: 1000\narray: {rows: 4, cols: 4, dataflow: ws}\n"
                        "unified_buffer: {capacity: 1 MiB}\naccumulators: {entries: 8}\nweight_fifo: {depth_tiles: 1}\n"
                        "weight_memory: {capacity: 1 MiB, bandwidth_gb_per_s: 1}\n"
                        "pcie: {generation: " + std::to_string(gen) + ", lanes: " + std::to_string(lanes) +
                        ", max_payload_bytes: " + std::to_string(payload) + ", tlp_overhead_bytes: " +
                        std::to_string(overhead) + ", latency_ns: " + std::to_string(latency_ns) + "}\n";
  return tessera::parse_arch_config(tessera::YamlNode::load_string(y, "p.yaml")).pcie;
}
}  // namespace

TEST(PcieTiming, Gen3x16OneMebibyte) {
  // 1 MiB in 256 B payloads = 4096 TLPs, each with 24 B of header/CRC/framing:
  // 1048576 + 4096*24 = 1146880 wire bytes at 16 lanes * 8 GT/s * 128/130 / 8 = 15.7538 GB/s.
  const PcieTiming t(link(3, 16, 256, 24, 1000));
  EXPECT_EQ(t.tlp_count(1048576), 4096u);
  EXPECT_EQ(t.wire_bytes(1048576), 1146880u);
  const double rate = 16 * 8e9 * 128.0 / 130.0 / 8.0;
  EXPECT_NEAR(t.serialization_ns(1048576), 1146880 / rate * 1e9, 1e-6);
  EXPECT_NEAR(t.transfer_ns(1048576), 1000 + 72800.0, 1e-6);  // 1146880 * 130 / (16 * 128) ns = 72.8 us, + 1 us latency
}

TEST(PcieTiming, PartialTlpAndGen1Encoding) {
  // 300 B with 128 B payloads: 3 TLPs (128, 128, 44) -> 300 + 3*20 = 360 wire bytes.
  // Gen1 x1: 2.5 GT/s with 8b/10b = 250 MB/s -> 1440 ns.
  const PcieTiming t(link(1, 1, 128, 20, 0));
  EXPECT_EQ(t.tlp_count(300), 3u);
  EXPECT_EQ(t.wire_bytes(300), 360u);
  EXPECT_NEAR(t.serialization_ns(300), 1440.0, 1e-9);
}

TEST(PcieTiming, Gen4x4HalvesGen3x16PerLaneCount) {
  // Gen4 doubles the lane rate; a quarter of the lanes: half the Gen3 x16 rate.
  const PcieTiming g3(link(3, 16, 256, 24, 0)), g4(link(4, 4, 256, 24, 0));
  EXPECT_NEAR(g4.serialization_ns(65536), 2 * g3.serialization_ns(65536), 1e-9);
}

namespace {
struct DmaInitiator : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<DmaInitiator> socket{"socket"};
  explicit DmaInitiator(sc_core::sc_module_name name) : sc_core::sc_module(name) {}
};
}  // namespace

// A host transfer over 4 GiB (a large batch's input) is served in full: TLM's 32-bit
// data_length alone would have carried 5 GiB mod 2^32 = 1 GiB.
TEST(PcieLink, TransferOverFourGiBIsServedInFull) {
  using namespace tessera::models;
  const CoreClock clock(1000.0);
  PcieLink pcie("pcie", link(3, 16, 256, 24, 1000), clock);
  DmaInitiator dma("dma");
  dma.socket.bind(pcie.socket);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  const uint64_t bytes = 5ULL << 30;
  std::vector<unsigned char> dummy(1);
  tlm::tlm_generic_payload p;
  set_transfer(p, tlm::TLM_READ_COMMAND, 0, Transfer{bytes, 0, 0}, dummy.data());
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  dma.socket->b_transport(p, delay);
  // 20,971,520 TLPs x 24 B + 5 GiB = 5,872,025,600 wire bytes x 130 / (16 x 128) ns
  // = 372,736,000 ns, + 1,000 ns latency, at one cycle per ns.
  EXPECT_EQ(clock.cycle_of(delay), 372737000);
  EXPECT_EQ(pcie.bytes_to_device(), bytes);
  EXPECT_EQ(pcie.server().busy_cycles(), 372736000);
}
