// End-to-end timing of small programs with hand-derived cycle counts. Each test
// simulates once: ctest runs every case in its own process (one SystemC
// elaboration per process). Tiny arch: 4x4 ws array at 1 GHz (1 cycle = 1 ns),
// PCIe Gen3 x16 (15.75 B/ns, 24 B per TLP), no latencies, 4-lane vector unit.
#include <gtest/gtest.h>

#include "sim/common/yaml_reader.h"
#include "sim/compiler/compiler.h"
#include "sim/engine/engine.h"
#include "tests/support/engine_run.h"
#include "tests/support/tiny_arch.h"

using namespace tessera;
using tessera::test_support::expect_breakdown_sums;
using tessera::test_support::TinyArch;

namespace {

engine::RunStats run(const TinyArch& t, const std::string& graph_yaml, const engine::SimulateOptions& options = {}) {
  return test_support::simulate_graph(t.build(), graph_yaml, options);
}

// The hand-derived breakdown of SingleTileFcHandDerived (see there).
void expect_single_tile_fc_breakdown(const engine::RunStats& s) {
  EXPECT_EQ(s.total_cycles, 21);
  EXPECT_EQ(s.cycles["pcie"], 6);          // waiting for the input, then the output transfer
  EXPECT_EQ(s.cycles["weight_shift"], 2);  // [3, 5)
  EXPECT_EQ(s.cycles["array_active"], 10); // stream 3 + exposed drain 7
  EXPECT_EQ(s.cycles["non_matrix"], 3);    // activation
  EXPECT_EQ(s.cycles["weight_stall"], 0);
  EXPECT_EQ(s.cycles["raw_stall"], 0);
}

}  // namespace

// The buckets are the rows of engine::kBuckets: the causes in report order, and the two
// Table 3 parts, which count in their bucket but not again in the total.
TEST(CycleBuckets, CausesInReportOrderPartsOnTopOfTheirBucket) {
  const std::vector<std::string_view> causes(engine::kCycleCauses.begin(), engine::kCycleCauses.end());
  const std::vector<std::string_view> expected = {"array_active", "weight_shift", "weight_stall", "input_stall",
                                                  "raw_stall",    "non_matrix",   "pcie"};
  EXPECT_EQ(causes, expected);
  engine::CycleBreakdown c;
  c["array_active"] = 10;
  c["array_drain"] = 7;
  c["pcie"] = 6;
  c["pcie_input"] = 4;
  c["non_matrix"] = 3;
  EXPECT_EQ(c.total(), 10 + 6 + 3);
  EXPECT_EQ(c.array_stream(), 10 - 7);
  EXPECT_EQ(c.pcie_output(), 6 - 4);
  engine::CycleBreakdown twice = c;
  twice += c;
  EXPECT_EQ(twice["array_drain"], 14);
  EXPECT_EQ(twice["pcie_input"], 8);
  EXPECT_EQ(twice.total(), 38);
}

TEST(Engine, SingleTileFcHandDerived) {
  // x[3x4] * W[4x4], one tile.
  //  read_host 12 B: 12 + 24 = 36 wire B / 15.75 B/ns -> 3 cycles          [0, 3)
  //  read_weights 16 B at 1000 B/ns -> 1 cycle, tile ready at 1
  //  matmul waits for the input (RAW on read_host) until 3; weights shift in
  //  k=4 cycles from 1 to 5 (2 cycles exposed), stream m=3 [5, 8),
  //  drain R+n-1 = 7 -> done at 15
  //  activate: 12 values / 4 lanes = 3 cycles                               [15, 18)
  //  write_host 12 B -> 3 cycles                                             [18, 21)
  const auto s = run(TinyArch{}, R"(
name: one
batch: 3
inputs: [{name: x, shape: [4]}]
layers: [{name: fc, op: fc, units: 4, activation: relu}]
)");
  expect_single_tile_fc_breakdown(s);
  EXPECT_EQ(s.macs, 3 * 4 * 4);
  EXPECT_EQ(s.pcie_bytes_to_device, 12u);
  EXPECT_EQ(s.pcie_bytes_to_host, 12u);
  expect_breakdown_sums(s);
}

TEST(Engine, ModuleCountersCollectedFromTheTree) {
  // The run of SingleTileFcHandDerived: one 3x4x4 tile, 12 B in, 12 B out, 16 B of weights.
  const auto s = run(TinyArch{}, R"(
name: one
batch: 3
inputs: [{name: x, shape: [4]}]
layers: [{name: fc, op: fc, units: 4, activation: relu}]
)");
  auto unit_of = [&](std::string_view path) {
    for (const auto& c : s.counters) {
      if (c.path == path) return c.unit;
    }
    return std::string("missing");
  };
  EXPECT_EQ(s.counter("tessera.matrix_unit.macs"), 48);
  EXPECT_EQ(unit_of("tessera.matrix_unit.macs"), "MACs");
  EXPECT_EQ(s.counter("tessera.matrix_unit.tiles"), 1);
  EXPECT_EQ(s.counter("tessera.matrix_unit.matmul_cycles"), 3);        // stream [5, 8)
  EXPECT_EQ(s.counter("tessera.matrix_unit.weight_shift_cycles"), 2);  // [3, 5)
  EXPECT_EQ(s.counter("tessera.matrix_unit.drain_cycles"), 7);         // [8, 15)
  EXPECT_EQ(s.counter("tessera.weight_memory.bytes_read"), 16);
  EXPECT_EQ(unit_of("tessera.weight_memory.bytes_read"), "bytes");
  EXPECT_EQ(s.counter("tessera.weight_fetcher.tiles"), 1);
  EXPECT_EQ(s.counter("tessera.pcie.bytes_to_device"), 12);
  EXPECT_EQ(s.counter("tessera.pcie.bytes_to_host"), 12);
  EXPECT_EQ(s.counter("tessera.pcie.busy_cycles"), 6);                 // 3 + 3
  EXPECT_EQ(s.counter("tessera.host_dma.transfers"), 2);
  EXPECT_EQ(s.counter("tessera.vector_unit.instructions"), 1);         // the activate
  EXPECT_EQ(s.counter("tessera.vector_unit.busy_cycles"), 3);          // [15, 18)
  EXPECT_EQ(s.counter("tessera.controller.instructions"), s.instructions);
  EXPECT_EQ(unit_of("tessera.controller.wait_raw_cycles"), "cycles");
  // The typed fields are the same counters.
  EXPECT_EQ(s.macs, s.counter("tessera.matrix_unit.macs"));
  EXPECT_EQ(s.vector_busy_cycles, 3);
  EXPECT_EQ(s.array_stream_cycles, 3);
  EXPECT_THROW(s.counter("tessera.matrix_unit.nope"), std::logic_error);
  expect_breakdown_sums(s);
}

// The activity counters the energy model multiplies (docs/energy.md), by hand for one
// 3x4x4 tile on the 4x4 ws array: every PE holds a useful weight, so none idles.
TEST(Engine, ActivityCountersHandDerived) {
  const auto s = run(TinyArch{}, R"(
name: one
batch: 3
inputs: [{name: x, shape: [4]}]
layers: [{name: fc, op: fc, units: 4, activation: relu}]
)");
  EXPECT_EQ(s.counter("tessera.matrix_unit.macs_int8xint8"), 48);
  EXPECT_EQ(s.counter("tessera.matrix_unit.idle_macs_int8xint8"), 0);
  EXPECT_EQ(s.counter("tessera.matrix_unit.macs_int16xint16"), 0);  // every array mode has its counter
  // 48 MACs x (8-bit input + 32-bit partial sum) + a 4x4 int8 tile shifted in, (4 + 1) / 2 registers deep.
  EXPECT_EQ(s.counter("tessera.matrix_unit.register_bits"), 48 * 40 + 4 * 4 * 8 * 5 / 2);
  EXPECT_EQ(s.counter("tessera.matrix_unit.ub_read_bytes"), 12);     // 3 rows of 4 int8 inputs
  EXPECT_EQ(s.counter("tessera.matrix_unit.accumulator_writes"), 12); // 3 x 4 results
  EXPECT_EQ(s.counter("tessera.matrix_unit.accumulator_reads"), 0);   // one K step: nothing to accumulate onto
  EXPECT_EQ(s.counter("tessera.weight_fetcher.fifo_bytes"), 16);
  EXPECT_EQ(s.counter("tessera.vector_unit.accumulator_reads"), 12);  // activate drains the 12 values
  EXPECT_EQ(s.counter("tessera.vector_unit.ops_requantize"), 12);
  EXPECT_EQ(s.counter("tessera.vector_unit.ops_relu"), 12);
  EXPECT_EQ(s.counter("tessera.vector_unit.ub_write_bytes"), 12);
  EXPECT_EQ(s.counter("tessera.vector_unit.ub_read_bytes"), 0);
  EXPECT_EQ(s.counter("tessera.host_dma.ub_write_bytes"), 12);  // read_host
  EXPECT_EQ(s.counter("tessera.host_dma.ub_read_bytes"), 12);   // write_host
}

TEST(Engine, PartialTileClocksIdlePes) {
  // x[2x3] * W[3x2]: the tile holds 3 x 2 of the 16 PEs; 10 idle PEs for each of the 2 rows.
  const auto s = run(TinyArch{}, R"(
name: partial
batch: 2
inputs: [{name: x, shape: [3]}]
layers: [{name: fc, op: fc, units: 2}]
)");
  EXPECT_EQ(s.counter("tessera.matrix_unit.macs_int8xint8"), 12);
  EXPECT_EQ(s.counter("tessera.matrix_unit.idle_macs_int8xint8"), 20);
  EXPECT_EQ(s.counter("tessera.matrix_unit.register_bits"), 12 * 40 + 3 * 2 * 8 * 4 / 2);
}

TEST(Engine, WeightBoundLayerStallsOnTheFifo) {
  // Batch 1, x[4] * W[4x16]: four 16 B tiles from weight memory at 1 B/ns -> one
  // tile every 16 cycles (ready at 16, 32, 48, 64). Each matmul streams 1 row.
  //  [0, 2)   read_host 4 B (28 wire B -> 2 cycles): pcie
  //  [2, 16)  matmul 0 waits for tile 0: weight_stall 14
  //  [16, 20) shift, [20, 21) stream, [21, 28) drain (done 28)
  //  act0 waits in the vector unit for mm0 (28); mm1 (the other accumulator half) is
  //  dispatched behind it and waits from mm0's stream end for tile 1 (ready at 32): stall
  //  [21, 32) with mm0's drain under it, shift [32, 36), stream [36, 37), drain to 44;
  //  likewise tiles 2 and 3 (mm2 waits at the controller for act0 [28, 29), its half).
  //  Only mm3's drain [69, 76) is exposed with no matmul behind it.
  //  act3 [76, 77), write_host 16 B (40 wire B -> 3 cycles) [77, 80)
  TinyArch t;
  t.weight_bandwidth_gb_per_s = 1;
  const auto s = run(t, R"(
name: wide
batch: 1
inputs: [{name: x, shape: [4]}]
layers: [{name: fc, op: fc, units: 16}]
)");
  EXPECT_EQ(s.total_cycles, 80);
  EXPECT_EQ(s.cycles["weight_stall"], 14 + 11 + 11 + 11);
  EXPECT_EQ(s.cycles["weight_shift"], 16);
  EXPECT_EQ(s.cycles["array_active"], 4 + 7);
  EXPECT_EQ(s.cycles["pcie"], 5);
  EXPECT_EQ(s.cycles["non_matrix"], 1);
  EXPECT_EQ(s.weight_memory_busy_cycles, 64);
  EXPECT_EQ(s.weight_fifo_full_cycles, 0);
  expect_breakdown_sums(s);
}

TEST(Engine, FullFifoStallsTheFetcher) {
  // Depth-1 FIFO and fast weights, K = 12: three K tiles per N tile. read_weights
  // for tile 2 is issued once matmul 1 is queued, while the array still streams
  // matmul 0 (64 rows) and tile 1 waits in the FIFO: the fetcher waits for the
  // slot until matmul 1 takes tile 1, and the array never starves.
  TinyArch t;
  t.fifo_depth = 1;
  const auto s = run(t, R"(
name: deep
batch: 64
inputs: [{name: x, shape: [12]}]
layers: [{name: fc, op: fc, units: 4}]
)");
  EXPECT_GT(s.weight_fifo_full_cycles, 0);
  EXPECT_EQ(s.cycles["weight_stall"], 0);
  expect_breakdown_sums(s);
}

TEST(Engine, NarrowUnifiedBufferPortIsAnInputStall) {
  // Same single tile as above but the unified buffer delivers 1 B/cycle: the
  // 12 input bytes take 12 cycles instead of the array's 3: 9 cycles input stall.
  TinyArch t;
  t.ub_read_bytes_per_cycle = 1;
  const auto s = run(t, R"(
name: one
batch: 3
inputs: [{name: x, shape: [4]}]
layers: [{name: fc, op: fc, units: 4}]
)");
  EXPECT_EQ(s.cycles["input_stall"], 9);
  EXPECT_EQ(s.total_cycles, 21 + 9);
  expect_breakdown_sums(s);
}

TEST(Engine, TwoLayersWaitOnEachOther) {
  // fc2 needs fc1's activations: its matmul waits for fc1's activate (RAW stall).
  const auto s = run(TinyArch{}, R"(
name: two
batch: 2
inputs: [{name: x, shape: [4]}]
layers:
  - {name: fc1, op: fc, units: 4}
  - {name: fc2, op: fc, units: 4}
)");
  EXPECT_GT(s.cycles["raw_stall"], 0);
  EXPECT_GT(s.layers[1].cycles["raw_stall"], 0);
  expect_breakdown_sums(s);
}

// The breakdown classified as the run goes (issue 19), here after every instruction the
// controller issues: the hand-derived counts of SingleTileFcHandDerived, per layer too.
TEST(Engine, BreakdownClassifiedAfterEveryInstructionMatchesHandCounts) {
  engine::SimulateOptions every;
  every.breakdown_every_instructions = 1;
  const auto s = run(TinyArch{}, R"(
name: one
batch: 3
inputs: [{name: x, shape: [4]}]
layers: [{name: fc, op: fc, units: 4, activation: relu}]
)", every);
  expect_single_tile_fc_breakdown(s);
  ASSERT_EQ(s.layers.size(), 1u);
  EXPECT_EQ(s.layers[0].cycles["array_active"], 10);
  EXPECT_EQ(s.layers[0].cycles["non_matrix"], 3);
  expect_breakdown_sums(s);
}
