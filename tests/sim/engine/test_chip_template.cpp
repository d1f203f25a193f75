// The chip template on the SystemC models: several matrix units and cores as processes of
// their own, device-resident tensors over DMA, the per-program launch time. Each test
// simulates once (one SystemC elaboration per process). Tiny arch as in test_engine.cpp:
// 4x4 ws arrays at 1 GHz (1 cycle = 1 ns), weight memory 1000 B/ns on one channel.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "models/interconnect/pcie_link.h"
#include "sim/common/yaml_reader.h"
#include "sim/compiler/compiler.h"
#include "sim/engine/engine.h"
#include "tests/support/engine_run.h"
#include "tests/support/tiny_arch.h"

using namespace tessera;
using tessera::test_support::expect_breakdown_sums;
using tessera::test_support::TinyArch;

namespace {

engine::RunStats run(const ArchConfig& arch, const std::string& graph_yaml, const engine::SimulateOptions& options = {}) {
  return test_support::simulate_graph(arch, graph_yaml, options);
}

const char* kSingleTile = R"(
name: one
batch: 3
inputs: [{name: x, shape: [4]}]
layers: [{name: fc, op: fc, units: 4, activation: relu}]
)";

}  // namespace

TEST(ChipTemplate, FourMatrixUnitsOnTwoCoresComputeAtOnce) {
  // Four N tiles, one per matrix unit (test_work_split.cpp), 16 rows each: the weight tiles
  // arrive one cycle apart on the single channel, and the four 16-cycle streams overlap.
  TinyArch t;
  t.cores = 2;
  t.matrix_units = 2;
  const auto s = run(t.build(), R"(
name: wide
batch: 16
inputs: [{name: x, shape: [4]}]
layers: [{name: fc1, op: fc, units: 16}]
)", {.tracks = true});
  std::map<std::string, std::pair<int64_t, int64_t>> stream;  // track -> its matmul's [begin, end)
  for (const auto& track : s.tracks) {
    for (const auto& e : track.events) {
      if (e.name == "matmul") stream[track.unit] = {e.begin_cycle, e.end_cycle};
    }
  }
  ASSERT_EQ(stream.size(), 4u);
  for (const char* unit : {"core0_array0", "core0_array1", "core1_array0", "core1_array1"}) {
    ASSERT_TRUE(stream.count(unit)) << unit;
  }
  int64_t latest_begin = 0, earliest_end = INT64_MAX;
  for (const auto& [unit, iv] : stream) {
    latest_begin = std::max(latest_begin, iv.first);
    earliest_end = std::min(earliest_end, iv.second);
  }
  EXPECT_LT(latest_begin, earliest_end);  // some cycle has all four streaming
  EXPECT_EQ(s.macs, 16 * 4 * 16);         // summed over the four units
  // Device memory serves the 64 weight bytes, core 1's operand panel (all of x: 16 x 4 B) and
  // core 0's gather of core 1's two result tiles (16 x 4 B each); it takes x from core 0 and
  // those tiles from core 1 (docs/architecture.md "Work split").
  EXPECT_EQ(s.weight_memory_bytes, 64u + 64u + 2 * 64u);
  EXPECT_EQ(s.device_memory_bytes_written, 64u + 2 * 64u);
  expect_breakdown_sums(s);
}

TEST(ChipTemplate, LaunchOverheadDelaysTheWholeProgram) {
  // Engine.SingleTileFcHandDerived takes 21 cycles; a 100 ns launch (100 cycles at 1 GHz)
  // comes before the first instruction, so everything moves by 100 and the launch is
  // non-matrix time of no layer.
  ArchConfig arch = TinyArch{}.build();
  arch.controller.launch_overhead_ns = 100;
  const auto s = run(arch, kSingleTile);
  EXPECT_EQ(s.total_cycles, 121);
  EXPECT_EQ(s.host_io["non_matrix"], 100);
  EXPECT_EQ(s.cycles["non_matrix"], 103);  // the launch + the 3-cycle activation
  EXPECT_EQ(s.cycles["pcie"], 6);
  expect_breakdown_sums(s);
}

TEST(ChipTemplate, DeviceResidentInputAndOutputUseDeviceMemoryNotPcie) {
  // SingleTileFcHandDerived with x and y in device memory (1000 B/ns, one channel):
  //  read_weights 16 B [0, 1), then dma_read 12 B queued behind it on the channel [1, 2)
  //  the weights shift in from 1 to 5, the matmul streams m=3 [5, 8), drains 7 -> 15
  //  activate 12 values / 4 lanes [15, 18); dma_write 12 B [18, 19)
  TinyArch t;
  t.residency = "{inputs: device, outputs: device}";
  const auto s = run(t.build(), kSingleTile);
  EXPECT_EQ(s.total_cycles, 19);
  EXPECT_EQ(s.pcie_bytes_to_device, 0u);
  EXPECT_EQ(s.pcie_bytes_to_host, 0u);
  EXPECT_EQ(s.weight_memory_bytes, 16u + 12u);       // weights and the input, read
  EXPECT_EQ(s.device_memory_bytes_written, 12u);     // the output
  EXPECT_EQ(s.cycles["pcie"], 0);
  expect_breakdown_sums(s);
}

TEST(ChipTemplate, HostResidentWeightsCrossPcieAtTheLinkRate) {
  // The run above with the weights in host memory: the 16-byte weight tile crosses PCIe
  // (Gen3 x16: 16 lanes x 8 GT/s x 128/130 / 8 = 15.75 B/ns; one TLP: 16 + 24 = 40 wire bytes, 2.54 ns -> 3 cycles) while the
  // input still comes from device memory:
  //  read_weights 16 B over PCIe [0, 3); dma_read 12 B [0, 1): the matmul waits for its input
  //  from device memory [0, 1) (weight_stall), then the array waits for the weight tile on the
  //  host link [1, 3) (host_weight_stall: pcie, its pcie_input part)
  //  the weights shift in [3, 7), the matmul streams m=3 [7, 10), drains 7 -> 17
  //  activate [17, 20); dma_write 12 B [20, 21) (a wait for device DMA: weight_stall)
  // PCIe carries exactly the weight bytes; weight memory serves only the input.
  TinyArch t;
  t.residency = "{inputs: device, weights: host, outputs: device}";
  const ArchConfig arch = t.build();
  EXPECT_EQ(models::PcieTiming(arch.pcie).wire_bytes(16), 40u);
  EXPECT_NEAR(models::PcieTiming(arch.pcie).serialization_ns(16), 40 / (16 * 8.0 * 128 / 130 / 8), 1e-9);  // 2.54 ns
  const auto s = run(arch, kSingleTile);
  EXPECT_EQ(s.total_cycles, 21);
  EXPECT_EQ(s.pcie_bytes_to_device, 16u);  // the weight tile
  EXPECT_EQ(s.pcie_bytes_to_host, 0u);
  EXPECT_EQ(s.pcie_busy_cycles, 3);
  EXPECT_EQ(s.weight_memory_bytes, 12u);  // the input alone
  EXPECT_EQ(s.device_memory_bytes_written, 12u);
  EXPECT_EQ(s.counter("tessera.weight_fetcher.tiles"), 1);
  EXPECT_EQ(s.cycles["pcie"], 2);           // [1, 3): the weight tile crossing PCIe, not a weight-memory wait
  EXPECT_EQ(s.cycles["pcie_input"], 2);     // to the device
  EXPECT_EQ(s.cycles.pcie_output(), 0);
  EXPECT_EQ(s.cycles["weight_stall"], 2);   // [0, 1) the input's dma_read, [20, 21) the dma_write
  EXPECT_EQ(s.cycles["weight_shift"], 4);   // [3, 7)
  EXPECT_EQ(s.cycles["array_active"], 10);  // stream 3 + drain 7
  EXPECT_EQ(s.cycles["non_matrix"], 3);
  EXPECT_EQ(s.counter("tessera.matrix_unit.host_weight_stall_cycles"), 2);
  EXPECT_EQ(s.counter("tessera.matrix_unit.weight_stall_cycles"), 0);
  expect_breakdown_sums(s);
}

TEST(ChipTemplate, HostResidentWeightsShareTheLinkWithTheHostDma) {
  // Everything in host memory (TPU v1's shape with the weights behind PCIe too): the weight
  // tile and the input queue on the one link in program order (read_weights first):
  //  read_weights 16 B [0, 3), read_host 12 B (36 wire B, 2.29 ns) [3, 6)
  //  the weights shift in from 3; the matmul waits for the input until 6, shifts [6, 7),
  //  streams [7, 10), drains -> 17; activate [17, 20); write_host 12 B [20, 23)
  // Against Engine.SingleTileFcHandDerived (weights from weight memory: 21 cycles, 24 PCIe
  // bytes) the weight bytes move from weight memory to PCIe.
  TinyArch t;
  t.residency = "{weights: host}";
  const auto s = run(t.build(), kSingleTile);
  EXPECT_EQ(s.total_cycles, 23);
  EXPECT_EQ(s.pcie_bytes_to_device, 16u + 12u);  // the weights and the input
  EXPECT_EQ(s.pcie_bytes_to_host, 12u);
  EXPECT_EQ(s.pcie_busy_cycles, 9);
  EXPECT_EQ(s.counter("tessera.pcie.busy_cycles_to_device"), 6);
  EXPECT_EQ(s.weight_memory_bytes, 0u);
  EXPECT_EQ(s.cycles["pcie"], 9);  // waiting for the input [0, 6), the output [20, 23)
  EXPECT_EQ(s.cycles["weight_shift"], 1);
  EXPECT_EQ(s.cycles["array_active"], 10);
  expect_breakdown_sums(s);
}

TEST(ChipTemplate, VectorUnitRunsEachFunctionClassAtItsRate) {
  // 32 int8 elements on 4 one-byte lanes: an arithmetic op (abs) takes 32 / 4 = 8 cycles.
  // exp is transcendental at 4 cycles per operation: 32 x 4 / 4 = 32 cycles. A transpose
  // moves elements across lanes at 2 cycles each: 16. No pipeline fill (latency 0).
  TinyArch t;
  t.vector_extra = "cycles_per_op: {transcendental: 4, cross_lane: 2}";
  const auto s = run(t.build(), R"(
name: classes
batch: 1
inputs: [{name: x, shape: [4, 8]}]
layers:
  - {name: e, op: exp, input: x}
  - {name: a, op: abs, input: e}
  - {name: t, op: transpose, input: a, perm: [1, 0]}
)", {.tracks = true});
  std::map<int32_t, int64_t> cycles;  // layer -> its vector instructions' duration
  for (const auto& track : s.tracks) {
    for (const auto& e : track.events) {
      if (e.name == "vector") cycles[e.layer] += e.end_cycle - e.begin_cycle;
    }
  }
  EXPECT_EQ(cycles[0], 32);  // e: exp
  EXPECT_EQ(cycles[1], 8);   // a: abs
  EXPECT_EQ(cycles[2], 16);  // t: transpose
  expect_breakdown_sums(s);
}

TEST(ChipTemplate, UnpackedVectorLanesRunNarrowTypesAtTheWideRate) {
  // Lanes of 4 bytes (16 bytes per cycle): 32 int8 elements pack 4 to a lane, 2 cycles;
  // without packing each takes a whole lane, 32 / 4 = 8 cycles.
  TinyArch t;
  t.vector_extra = "lane_bytes: 4, packs_narrow_types: false";
  const auto s = run(t.build(), R"(
name: unpacked
batch: 1
inputs: [{name: x, shape: [32]}]
layers: [{name: a, op: abs, input: x}]
)", {.tracks = true});
  int64_t abs_cycles = 0;
  for (const auto& track : s.tracks) {
    for (const auto& e : track.events) {
      if (e.name == "vector") abs_cycles += e.end_cycle - e.begin_cycle;
    }
  }
  EXPECT_EQ(abs_cycles, 8);
  VectorUnitConfig packed;
  packed.lanes = 4;
  packed.lane_bytes = 4;
  EXPECT_EQ(packed.element_cycles(32, 1, VectorClass::kArithmetic), 2);
}

TEST(ChipTemplate, SplitLayerOperandsAndResultsCrossDeviceMemoryBetweenCores) {
  // test_work_split.cpp's PerCoreScratchpad.OperandsInDeviceMemoryNeedNoCopy... on the models:
  // 2 cores x 2 units, x (3 x 4 B) and fc1 (3 x 16 B) in device memory. Nothing waits for a
  // sync before the split work, so all six reads arrive at cycle 0 and the one channel
  // (1000 B/ns: one cycle each) serves them in order: core 0's x [0, 1), its weight tiles
  // [1, 2) [2, 3), core 1's x panel [3, 4) (its DMA busy [0, 4)), core 1's weights [4, 5) [5, 6).
  // Core 1's units shift [5, 9) and [6, 10), stream [9, 12) and [10, 13), drain 7 cycles:
  // activates [19, 22) and [22, 25); its result block (24 B) goes to device memory [25, 26).
  // Core 0 waits at the sync for it, then writes its own 24 B [26, 27): 27 cycles.
  TinyArch t;
  t.cores = 2;
  t.matrix_units = 2;
  t.residency = "{inputs: device, outputs: device}";
  const auto s = run(t.build(), R"(
name: wide
batch: 3
inputs: [{name: x, shape: [4]}]
layers: [{name: fc1, op: fc, units: 16}]
)", {.tracks = true});
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> dma;  // track -> its transfers
  for (const auto& track : s.tracks) {
    for (const auto& e : track.events) {
      if (e.name == "dma_read" || e.name == "dma_write") dma[track.unit + " " + e.name].push_back({e.begin_cycle, e.end_cycle});
    }
  }
  using Iv = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(dma["core0_dma dma_read"], (Iv{{0, 1}}));
  EXPECT_EQ(dma["core1_dma dma_read"], (Iv{{0, 4}}));
  EXPECT_EQ(dma["core1_dma dma_write"], (Iv{{25, 26}}));
  EXPECT_EQ(dma["core0_dma dma_write"], (Iv{{26, 27}}));
  EXPECT_EQ(s.total_cycles, 27);
  EXPECT_EQ(s.weight_memory_bytes, 64u + 12u + 12u);  // the weights, x for core 0, x for core 1
  EXPECT_EQ(s.device_memory_bytes_written, 48u);      // the output: 24 B from each core
  expect_breakdown_sums(s);
}
