// The engine's array schedule on a 4x4 array, against the PE-level reference (issue 16,
// item 0): once operands are on chip, the matrix unit must overlap tiles exactly as the
// cycle-exact reference does. Each count is derived by hand from the reference's rules
// (docs/validation-array.md) and checked against PeArrayReference as well.
// Tiny arch: 1 GHz, weights at 1000 B/ns, PCIe Gen3 x16, no latencies, 4-lane vector unit,
// 64 accumulator entries (halves of 32), issue 0 cycles. Each test simulates once.
#include <gtest/gtest.h>

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

struct Simulated {
  compiler::Program program;
  engine::RunStats stats;
};

Simulated run(const TinyArch& t, const std::string& graph_yaml) {
  const ArchConfig arch = t.build();
  const graph::Graph g = graph::parse_graph_yaml(YamlNode::load_string(graph_yaml, "g.yaml"));
  Simulated r;
  r.program = compiler::compile(g, arch);
  r.stats = engine::simulate(arch, r.program, {.tracks = true});
  return r;
}

std::string fc(int64_t batch, int64_t in, int64_t units) {
  return "name: g\nbatch: " + std::to_string(batch) + "\ninputs: [{name: x, shape: [" + std::to_string(in) +
         "]}]\nlayers: [{name: fc, op: fc, units: " + std::to_string(units) + "}]\n";
}

const engine::UnitTrack& track(const engine::RunStats& s, const std::string& unit) {
  for (const auto& t : s.tracks) {
    if (t.unit == unit) return t;
  }
  throw std::logic_error("no track " + unit);
}

std::vector<engine::TraceEvent> events(const engine::RunStats& s, const std::string& unit, const std::string& name) {
  std::vector<engine::TraceEvent> out;
  for (const auto& e : track(s, unit).events) {
    if (e.name == name) out.push_back(e);
  }
  return out;
}

// The array's span: from its first interval (the first tile's stationary load or stream)
// to the first activate, which starts as the last tile's last result is written.
int64_t array_cycles(const engine::RunStats& s) {
  const auto& arr = track(s, "array").events;
  EXPECT_FALSE(arr.empty());
  const auto acts = events(s, "vector_unit", "activate");
  EXPECT_FALSE(acts.empty());
  return acts.front().begin_cycle - arr.front().begin_cycle;
}

int64_t count(const compiler::Program& p, compiler::Opcode op) {
  int64_t n = 0;
  for (const auto& in : p.instructions) n += in.op == op ? 1 : 0;
  return n;
}

// The reference's total cycles for `shapes` issued back to back, all operands ready.
int64_t reference_cycles(array::Dataflow df, bool db, const std::vector<array::GemmTile>& shapes) {
  std::mt19937_64 rng(16);
  std::vector<array::ReferenceTile> tiles;
  for (const auto& g : shapes) {
    array::ReferenceTile t;
    t.shape = g;
    std::uniform_int_distribution<int32_t> d(-128, 127);
    t.a.resize(static_cast<size_t>(g.m * g.k));
    t.b.resize(static_cast<size_t>(g.k * g.n));
    for (auto& v : t.a) v = d(rng);
    for (auto& v : t.b) v = d(rng);
    tiles.push_back(std::move(t));
  }
  return array::PeArrayReference(df, {4, 4}, db).run(tiles).total_cycles;
}

void expect_breakdown_sums(const engine::RunStats& s) {
  EXPECT_EQ(s.cycles.total(), s.total_cycles);
  engine::CycleBreakdown sum = s.host_io;
  for (const auto& l : s.layers) sum += l.cycles;
  EXPECT_EQ(sum.total(), s.total_cycles);
}

}  // namespace

// (a) Input stationary double-buffers its stationary input. fc [4, 8] -> 4 on a 4x4 is
// array: A^T (k x m) is held, k <= 4, so two tiles (m=4, k=4, n=4) accumulate.
//  t0: load A^T[0:4] 0..4, stream the 4 columns of B 4..8, done 8 + (R + m - 1 = 7) = 15
//  t1, double buffered: its input loads into the shadow from t0's stream start (4..8),
//      streams 8..12, done 19.
// The input arrives at cycle 4 (32 B over PCIe), so the array span is 4..23. Before the
// fix t1 loaded only once the matrix unit took it (t0's stream end, 8): 8..12, 12..16,
// done 23, a span of 23.
TEST(ArrayOverlap, InputStationaryDoubleBuffersItsInputs) {
  TinyArch t;
  t.dataflow = "is";
  const Simulated r = run(t, fc(4, 8, 4));
  EXPECT_EQ(count(r.program, compiler::Opcode::kMatmul), 2);
  EXPECT_EQ(reference_cycles(array::Dataflow::kInputStationary, true, {{4, 4, 4}, {4, 4, 4}}), 19);
  EXPECT_EQ(array_cycles(r.stats), 19);
  expect_breakdown_sums(r.stats);
}

// Single buffered: t1's load trails t0's last column into PE(0,0) at cycle 7: load 7..11,
// stream 11..15, done 22.
TEST(ArrayOverlap, InputStationarySingleBuffered) {
  TinyArch t;
  t.dataflow = "is";
  t.double_buffered = false;
  const Simulated r = run(t, fc(4, 8, 4));
  EXPECT_EQ(reference_cycles(array::Dataflow::kInputStationary, false, {{4, 4, 4}, {4, 4, 4}}), 22);
  EXPECT_EQ(array_cycles(r.stats), 22);
  expect_breakdown_sums(r.stats);
}

// (c) Output stationary streams K whole. fc [4, 6] -> 4 on a 4x4 os array: one tile
// (m=4, k=6, n=4): stream 6, drain R + m + n - 2 = 10, 16 cycles. Split into array-height
// K tiles (4 and 2) it took 18: t0 streams 0..4 (drain frontier 4 + 4 = 8), t1's short
// stream must end at >= 8: 6..8, done 8 + 10 = 18. Its weights still come from the FIFO in
// array tiles (4x4 and 2x4): two read_weights, one matmul.
TEST(ArrayOverlap, OutputStationaryStreamsKWhole) {
  TinyArch t;
  t.dataflow = "os";
  const Simulated r = run(t, fc(4, 6, 4));
  EXPECT_EQ(count(r.program, compiler::Opcode::kMatmul), 1);
  EXPECT_EQ(count(r.program, compiler::Opcode::kReadWeights), 2);
  EXPECT_EQ(reference_cycles(array::Dataflow::kOutputStationary, true, {{4, 6, 4}}), 16);
  EXPECT_EQ(reference_cycles(array::Dataflow::kOutputStationary, true, {{4, 4, 4}, {4, 2, 4}}), 18);
  EXPECT_EQ(array_cycles(r.stats), 16);
  EXPECT_EQ(r.stats.macs, 4 * 6 * 4);
  expect_breakdown_sums(r.stats);
}

// (c) Input stationary streams N whole. fc [4, 4] -> 8 on a single-buffered 4x4 is array:
// one tile (m=4, k=4, n=8): load 4 + stream 8 + drain 7 = 19. Split into array-width N
// tiles it reloaded the same inputs: t0 0..4, 4..8, done 15; t1 load 7..11, stream 11..15,
// done 22. The weights come in two 4x4 FIFO tiles.
TEST(ArrayOverlap, InputStationaryStreamsNWhole) {
  TinyArch t;
  t.dataflow = "is";
  t.double_buffered = false;
  const Simulated r = run(t, fc(4, 4, 8));
  EXPECT_EQ(count(r.program, compiler::Opcode::kMatmul), 1);
  EXPECT_EQ(count(r.program, compiler::Opcode::kReadWeights), 2);
  EXPECT_EQ(count(r.program, compiler::Opcode::kActivate), 1);
  EXPECT_EQ(reference_cycles(array::Dataflow::kInputStationary, false, {{4, 4, 8}}), 19);
  EXPECT_EQ(reference_cycles(array::Dataflow::kInputStationary, false, {{4, 4, 4}, {4, 4, 4}}), 22);
  EXPECT_EQ(array_cycles(r.stats), 19);
  expect_breakdown_sums(r.stats);
}

// (b) The next accumulator group computes while the previous one drains. fc [8, 4] -> 4 on
// a 4x4 os array: C rows are held in the 4 array rows, so two output tiles (m=4, k=4, n=4),
// one per accumulator half, each with its activate. Double buffered, t1 streams as soon as
// t0's results have left row 0: drain frontier 4 + 4 = 8, so t1 streams 4..8 (done 18),
// 4 cycles after t0 started. Before the fix the controller held t1 behind t0's activate,
// which waits for t0's last result (14): t1 started 14 cycles after t0.
TEST(ArrayOverlap, OutputStationaryDrainsOneTileWhileTheNextComputes) {
  TinyArch t;
  t.dataflow = "os";
  const Simulated r = run(t, fc(8, 4, 4));
  const auto mm = events(r.stats, "array", "matmul");
  ASSERT_EQ(mm.size(), 2u);
  EXPECT_EQ(reference_cycles(array::Dataflow::kOutputStationary, true, {{4, 4, 4}, {4, 4, 4}}), 18);
  EXPECT_EQ(mm[1].begin_cycle - mm[0].begin_cycle, 4);
  // The activates drain the halves behind the array: t0's results from 14 (4 cycles),
  // t1's from 18.
  const auto acts = events(r.stats, "vector_unit", "activate");
  ASSERT_EQ(acts.size(), 2u);
  EXPECT_EQ(acts[0].begin_cycle - mm[0].begin_cycle, 14);
  EXPECT_EQ(acts[1].begin_cycle - mm[0].begin_cycle, 18);
  expect_breakdown_sums(r.stats);
}

// (b) Weight stationary: the second accumulator group streams straight after the first.
// fc [64, 4] -> 4 on a 4x4 ws array, 32-entry accumulator halves: two tiles (m=32, k=4,
// n=4). Reference: t0 loads 0..4, streams 4..36 (done 43); t1's weights load into the
// shadow 4..8 and it streams 36..68, done 75. Before the fix t1 waited for t0's activate,
// i.e. for t0's drain (R + n - 1 = 7 cycles exposed): 43..75.
TEST(ArrayOverlap, WeightStationaryGroupsStreamBackToBack) {
  const Simulated r = run(TinyArch{}, fc(64, 4, 4));
  const auto mm = events(r.stats, "array", "matmul");
  ASSERT_EQ(mm.size(), 2u);
  EXPECT_EQ(reference_cycles(array::Dataflow::kWeightStationary, true, {{32, 4, 4}, {32, 4, 4}}), 75);
  EXPECT_EQ(mm[0].end_cycle - mm[0].begin_cycle, 32);
  EXPECT_EQ(mm[1].begin_cycle, mm[0].end_cycle);
  const auto acts = events(r.stats, "vector_unit", "activate");
  ASSERT_EQ(acts.size(), 2u);
  EXPECT_EQ(acts[1].begin_cycle - mm[0].begin_cycle + 4, 75);  // t0 streamed from the reference's cycle 4
  expect_breakdown_sums(r.stats);
}

// (b) A drain that the next layer's matmul waits for is a read-after-write stall, not array
// work. Two fc layers [2, 4] -> 4 -> 4 on the 4x4 ws array: fc2's matmul waits at the
// controller for fc1's activate, which waits for fc1's drain (R + n - 1 = 7 cycles) and
// then runs 2 cycles (8 values on 4 lanes). All 9 cycles are raw_stall of fc2; array_active
// is the two 2-row streams plus fc2's own final drain (7): 11.
TEST(ArrayOverlap, ADrainTheNextLayerWaitsForIsARawStall) {
  const Simulated r = run(TinyArch{}, "name: two\nbatch: 2\ninputs: [{name: x, shape: [4]}]\nlayers:\n"
                                "  - {name: fc1, op: fc, units: 4}\n  - {name: fc2, op: fc, units: 4}\n");
  const auto& s = r.stats;
  EXPECT_EQ(s.cycles["array_active"], 2 + 2 + 7);
  EXPECT_EQ(s.layers[1].cycles["raw_stall"], 7 + 2);
  EXPECT_EQ(s.cycles["raw_stall"], 7 + 2);
  expect_breakdown_sums(s);
}
