// The weight-memory models through their TLM socket, with hand-derived times. The
// clock runs at 1000 MHz, so one cycle is one nanosecond.
#include <gtest/gtest.h>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <memory>

#include "models/common/transfer.h"
#include "models/memory/weight_memory_model.h"

namespace tessera::models {
namespace {

struct Initiator : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Initiator> socket{"socket"};
  explicit Initiator(sc_core::sc_module_name name) : sc_core::sc_module(name) {}
};

// A memory bound to an initiator, elaborated; read() calls b_transport directly (the
// models never wait), so `arrival` stands for when the request reaches the memory.
struct Bench {
  CoreClock clock{1000.0};
  std::unique_ptr<WeightMemoryModel> memory;
  std::unique_ptr<Initiator> initiator;
  std::vector<unsigned char> data = std::vector<unsigned char>(1);

  explicit Bench(const WeightMemoryConfig& cfg) {
    memory = make_weight_memory("weight_memory", cfg, clock);
    initiator = std::make_unique<Initiator>("fetcher");
    initiator->socket.bind(memory->target_socket());
    sc_core::sc_start(sc_core::SC_ZERO_TIME);  // completes the binding
  }
  // The cycle the last byte of [address, address + bytes) arrives.
  int64_t read(uint64_t address, uint64_t bytes, int64_t arrival = 0) {
    tlm::tlm_generic_payload p;
    p.set_command(tlm::TLM_READ_COMMAND);
    p.set_address(address);
    p.set_data_ptr(data.data());
    p.set_data_length(static_cast<unsigned int>(bytes));
    p.set_streaming_width(static_cast<unsigned int>(bytes));
    sc_core::sc_time delay = clock.at(arrival);
    initiator->socket->b_transport(p, delay);
    EXPECT_EQ(p.get_response_status(), tlm::TLM_OK_RESPONSE);
    return clock.cycle_of(delay);
  }
  // The same through the Transfer extension, as the weight fetcher sends it.
  int64_t read(uint64_t address, const Transfer& transfer, int64_t arrival = 0) {
    tlm::tlm_generic_payload p;
    set_transfer(p, tlm::TLM_READ_COMMAND, address, transfer, data.data());
    sc_core::sc_time delay = clock.at(arrival);
    initiator->socket->b_transport(p, delay);
    EXPECT_EQ(p.get_response_status(), tlm::TLM_OK_RESPONSE);
    return clock.cycle_of(delay);
  }
};

WeightMemoryConfig dram(std::string technology) {
  WeightMemoryConfig c;
  c.technology = std::move(technology);
  c.capacity_bytes = 1ULL << 30;
  c.bandwidth_gb_per_s = 64;  // 2 channels of 32 B/ns
  c.latency_ns = 100;
  c.channels = 2;
  return c;
}

TEST(SimpleDram, RequestSpreadOverAllChannelsThenLatency) {
  Bench b(dram("DDR4"));
  // 4096 B: 2048 B per channel at 32 B/ns = 64 cycles, + 100 ns latency.
  EXPECT_EQ(b.read(0, 4096), 164);
  // A second request at the same time queues behind the first on both channels.
  EXPECT_EQ(b.read(1 << 20, 4096), 228);
  // One arriving at cycle 500 finds the channels idle: 500 + 64 + 100.
  EXPECT_EQ(b.read(0, 4096, 500), 664);
  // 3 bytes: 2 on channel 0, 1 on channel 1, each rounded up to a whole cycle.
  EXPECT_EQ(b.read(0, 3, 1000), 1101);
  EXPECT_EQ(b.memory->bytes_read(), 3u * 4096 + 3);
  EXPECT_EQ(b.memory->busy_cycles(), 3 * 64 + 1);
  EXPECT_EQ(b.memory->busy_log().intervals().size(), 4u);
}

// TLM's data_length is 32-bit: a 5 GiB transfer sent through it alone would be served
// as 5 GiB mod 2^32 = 1 GiB. The Transfer extension carries the full count and the
// labels of the busy interval.
TEST(SimpleDram, TransferOverFourGiBIsServedInFullAndLabelled) {
  Bench b(dram("DDR4"));
  const uint64_t bytes = 5ULL << 30;
  // 2,684,354,560 B per channel at 32 B/ns = 83,886,080 cycles, + 100 ns latency.
  EXPECT_EQ(b.read(0, Transfer{bytes, 3, 7}), 83886180);
  EXPECT_EQ(b.memory->bytes_read(), bytes);
  ASSERT_EQ(b.memory->busy_log().intervals().size(), 1u);
  EXPECT_EQ(b.memory->busy_log().intervals()[0].layer, 3);
  EXPECT_EQ(b.memory->busy_log().intervals()[0].instruction, 7);
  EXPECT_EQ(b.memory->busy_log().intervals()[0].end, 83886080);
}

TEST(WeightMemoryFactory, TechnologyChoosesTheModel) {
  for (const WeightMemoryTechnology& t : kWeightMemoryTechnologies) {
    EXPECT_TRUE(t.model == "simple_dram" || t.model == "hbm") << t.technology;
  }
  EXPECT_THROW(make_weight_memory("m", dram("SRAM"), CoreClock(1000.0)), std::invalid_argument);
}

}  // namespace
}  // namespace tessera::models
