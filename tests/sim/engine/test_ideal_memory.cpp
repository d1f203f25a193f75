// Ideal memory (ideal_memory: true, `tessera run --ideal-memory`; issue 16 item 7): weight and
// activation transfers cost nothing, so a lone tile's cycles are the PE-level reference's
// compute cycles, for every registered dataflow. Each case simulates once (its own process).
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "models/array/pe_reference.h"
#include "sim/common/yaml_reader.h"
#include "sim/compiler/compiler.h"
#include "sim/engine/engine.h"
#include "tests/support/tiny_arch.h"

using namespace tessera;
using tessera::test_support::TinyArch;

namespace {

std::vector<std::string> registered_dataflows() {
  std::vector<std::string> out;
  for (std::string_view n : array::dataflows().names()) out.emplace_back(n);
  return out;
}

int64_t reference_cycles(array::Dataflow df, array::ArrayDims dims, bool db, array::GemmTile shape) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int32_t> d(-128, 127);
  array::ReferenceTile t;
  t.shape = shape;
  t.a.resize(static_cast<size_t>(shape.m * shape.k));
  t.b.resize(static_cast<size_t>(shape.k * shape.n));
  for (auto& v : t.a) v = d(rng);
  for (auto& v : t.b) v = d(rng);
  return array::PeArrayReference(df, dims, db).run(std::vector<array::ReferenceTile>{t}).total_cycles;
}

class IdealMemory : public ::testing::TestWithParam<std::string> {};

}  // namespace

// fc [3, 4] -> 4 on a 4x4 array: one (m=3, k=4, n=4) tile, which fits every dataflow. With
// ideal memory the input, the weights and the output move in no time, so the run is the
// tile (the reference: ws 4 + 3 + 7 = 14, is 4 + 4 + 6 = 14, os 4 + 9 = 13) followed by its
// activate (12 values on 4 lanes: 3 cycles). The bytes are still counted. The weights come
// from a memory far too slow to hide (1 B/cycle, 100 ns) and PCIe has 1 us of latency:
// none of it shows.
TEST_P(IdealMemory, ALoneTileTakesThePeReferencesComputeCycles) {
  TinyArch t;
  t.dataflow = GetParam();
  t.ideal_memory = true;
  t.weight_bandwidth_gb_per_s = 1;
  t.weight_latency_ns = 100;
  t.pcie_latency_ns = 1000;
  t.ub_read_bytes_per_cycle = 1;  // would stretch every stream if the buffer's port paced it
  const ArchConfig arch = t.build();
  ASSERT_TRUE(arch.ideal_memory);
  const graph::Graph g = graph::parse_graph_yaml(YamlNode::load_string(
      "name: one\nbatch: 3\ninputs: [{name: x, shape: [4]}]\nlayers: [{name: fc, op: fc, units: 4}]\n", "g.yaml"));
  const engine::RunStats s = engine::simulate(arch, compiler::compile(g, arch));
  const array::Dataflow df = *array::parse_dataflow(GetParam());
  // Hand-derived lone-tile counts (docs/validation-array.md): ws k + m + R + n - 1 =
  // 4 + 3 + 4 + 4 - 1, is k + n + R + m - 1 = 4 + 4 + 4 + 3 - 1, os k + m + n + R - 2 =
  // 4 + 3 + 4 + 4 - 2. A newly registered dataflow needs its own count here.
  const std::map<std::string, int64_t> hand = {{"ws", 14}, {"is", 14}, {"os", 13}};
  ASSERT_TRUE(hand.count(GetParam())) << "no hand-derived count for dataflow " << GetParam();
  const int64_t tile = hand.at(GetParam());
  EXPECT_EQ(reference_cycles(df, {4, 4}, true, {3, 4, 4}), tile);
  EXPECT_EQ(reference_cycles(df, {4, 4}, false, {3, 4, 4}), tile);  // a lone tile: buffering does not matter
  EXPECT_EQ(array::tile_timing(df, {4, 4}, {3, 4, 4}).total(), tile);
  EXPECT_EQ(s.total_cycles, tile + 3) << GetParam();
  EXPECT_EQ(s.cycles["pcie"], 0);
  EXPECT_EQ(s.cycles["weight_stall"], 0);
  EXPECT_EQ(s.cycles["input_stall"], 0);
  EXPECT_EQ(s.cycles["non_matrix"], 3);  // the activate
  EXPECT_EQ(s.weight_memory_bytes, 16u);
  EXPECT_EQ(s.pcie_bytes_to_device, 12u);
  EXPECT_EQ(s.pcie_bytes_to_host, 12u);
  EXPECT_EQ(s.weight_memory_busy_cycles, 0);
  EXPECT_EQ(s.pcie_busy_cycles, 0);
  // The Table 3 counters agree: no host input stall, the array streams and drains the tile.
  EXPECT_EQ(s.cycles["pcie_input"], 0);
  EXPECT_EQ(s.cycles["array_active"] + s.cycles["weight_shift"], tile);
}

INSTANTIATE_TEST_SUITE_P(EveryDataflow, IdealMemory, ::testing::ValuesIn(registered_dataflows()));
