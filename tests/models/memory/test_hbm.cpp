// The HBM2 pseudo-channel model (models/memory/hbm.h) through its TLM socket, with
// transfer times derived by hand. Clock 1000 MHz: one cycle is one nanosecond.
#include <gtest/gtest.h>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "models/memory/hbm.h"

namespace tessera::models {
namespace {

struct Initiator : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Initiator> socket{"socket"};
  explicit Initiator(sc_core::sc_module_name name) : sc_core::sc_module(name) {}
};

// One HBM2 stack as in configs/tpu-v1-hbm.yaml, at a 1 GHz core clock:
// 8 channels -> 16 pseudo channels of 256 / 16 = 16 B/ns; 80 ns first-byte latency.
struct HbmBench {
  CoreClock clock{1000.0};
  HbmPseudoChannels* hbm = nullptr;
  std::unique_ptr<WeightMemoryModel> memory;
  Initiator initiator{"fetcher"};
  std::vector<unsigned char> data = std::vector<unsigned char>(1);

  HbmBench() {
    WeightMemoryConfig c;
    c.technology = "HBM2-PC";
    c.capacity_bytes = 8ULL << 30;
    c.bandwidth_gb_per_s = 256;
    c.latency_ns = 80;
    c.channels = 8;
    memory = make_weight_memory("weight_memory", c, clock);  // the factory picks the model
    hbm = dynamic_cast<HbmPseudoChannels*>(memory.get());
    initiator.socket.bind(memory->target_socket());
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
  }
  int64_t read(uint64_t address, uint64_t bytes, int64_t arrival = 0) {
    tlm::tlm_generic_payload p;
    p.set_command(tlm::TLM_READ_COMMAND);
    p.set_address(address);
    p.set_data_ptr(data.data());
    p.set_data_length(static_cast<unsigned int>(bytes));
    p.set_streaming_width(static_cast<unsigned int>(bytes));
    sc_core::sc_time delay = clock.at(arrival);
    initiator.socket->b_transport(p, delay);
    return clock.cycle_of(delay);
  }
};

TEST(HbmPseudoChannels, FactoryBuildsSixteenPseudoChannelsPerStack) {
  HbmBench b;
  ASSERT_NE(b.hbm, nullptr);
  EXPECT_EQ(b.hbm->pseudo_channels(), 16);
}

TEST(HbmPseudoChannels, AWeightTileSpreadsOverEveryPseudoChannel) {
  // A TPU v1 weight tile, 256 x 256 int8 = 65,536 B at address 0: 256 blocks of 256 B,
  // 16 per pseudo channel = 4,096 B each at 16 B/ns = 256 cycles; + 80 ns latency.
  HbmBench b;
  EXPECT_EQ(b.read(0, 65536), 336);
  // The same tile over simple_dram with tpu-v1's 34 GB/s in 2 channels: 32,768 B per
  // channel at 17 B/ns = 1,927.5 -> 1,928 cycles (+ latency): 7.5x slower.
  EXPECT_EQ(b.memory->bytes_read(), 65536u);
  EXPECT_EQ(b.memory->busy_cycles(), 256);  // every pseudo channel busy 256 cycles
}

TEST(HbmPseudoChannels, SmallRequestsOnDifferentPseudoChannelsOverlap) {
  HbmBench b;
  // 512 B at address 0: blocks 0, 1 -> pseudo channels 0, 1, 256 B each = 16 cycles.
  EXPECT_EQ(b.read(0, 512), 96);
  // 512 B at address 512 (blocks 2, 3): other pseudo channels, no queueing.
  EXPECT_EQ(b.read(512, 512), 96);
  // 256 B at address 4096 (block 16 -> pseudo channel 0) queues behind the first: 32 + 80.
  EXPECT_EQ(b.read(4096, 256), 112);
  // Mean busy over 16 pseudo channels: (4 x 16 + 16) / 16 = 5 cycles.
  EXPECT_EQ(b.memory->busy_cycles(), 5);
}

TEST(HbmPseudoChannels, UnalignedRequestSplitsAtBlockBoundaries) {
  HbmBench b;
  // 1,000 B from address 200: 56 B on pc 0 (block 0), 256 on pc 1, 2, 3 (blocks 1-3),
  // 176 on pc 4 (block 4): 56 + 3 * 256 + 176 = 1000.
  const std::vector<uint64_t> share = b.hbm->bytes_per_pseudo_channel(200, 1000);
  EXPECT_EQ(share[0], 56u);
  EXPECT_EQ(share[1], 256u);
  EXPECT_EQ(share[3], 256u);
  EXPECT_EQ(share[4], 176u);
  EXPECT_EQ(share[5], 0u);
  // The slowest pseudo channels move 256 B: 16 cycles, + 80.
  EXPECT_EQ(b.read(200, 1000), 96);
  // 16 blocks wrap around: 4,608 B from 0 = 18 blocks: pc 0 and 1 get two (512 B = 32 cycles).
  const std::vector<uint64_t> wrap = b.hbm->bytes_per_pseudo_channel(0, 4608);
  EXPECT_EQ(wrap[0], 512u);
  EXPECT_EQ(wrap[1], 512u);
  EXPECT_EQ(wrap[2], 256u);
}

// Saturation: 64 weight tiles of 65,536 B all requested at cycle 0 queue on every
// pseudo channel; the stack delivers its configured 256 B/ns and no more: the last tile
// ends at 64 x 256 = 16,384 cycles (+ 80 ns latency), and every pseudo channel is busy
// all that time. The same tiles spaced 256 cycles apart never queue.
TEST(HbmPseudoChannels, BackToBackTilesSaturateAtTheConfiguredBandwidth) {
  HbmBench b;
  int64_t last = 0;
  for (uint64_t t = 0; t < 64; ++t) last = b.read(t * 65536, 65536);
  EXPECT_EQ(last, 64 * 256 + 80);
  EXPECT_EQ(b.memory->busy_cycles(), 64 * 256);
  EXPECT_EQ(b.memory->bytes_read(), 64u * 65536);
  // Bytes per busy cycle: the configured 256 GB/s at 1 GHz.
  EXPECT_EQ(b.memory->bytes_read() / static_cast<uint64_t>(b.memory->busy_cycles()), 256u);
  // A tile arriving once the queue has drained is served at the idle-link time again.
  EXPECT_EQ(b.read(0, 65536, 20000), 20000 + 256 + 80);
}

}  // namespace
}  // namespace tessera::models
