// Weight-fetch granularity (weight_memory.fetch, issue 16 item 1): `tile` fetches a whole
// array tile per weight-FIFO tile, padding included, and a held (ws) padded tile shifts all
// its rows in; `exact` fetches the tile's real bytes. Hand-derived on a small array, and the
// TPU paper's Sec. 7 example on tpu-v1. Each test simulates once (one process per test).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/compiler/compiler.h"
#include "sim/config/arch_config.h"
#include "sim/engine/engine.h"
#include "tests/support/tiny_arch.h"

using namespace tessera;
using tessera::test_support::TinyArch;

namespace {

engine::RunStats run(const ArchConfig& arch, const std::string& graph_yaml) {
  const graph::Graph g = graph::parse_graph_yaml(YamlNode::load_string(graph_yaml, "g.yaml"));
  return engine::simulate(arch, compiler::compile(g, arch));
}

void expect_breakdown_sums(const engine::RunStats& s) {
  EXPECT_EQ(s.cycles.total(), s.total_cycles);
  engine::CycleBreakdown sum = s.host_io;
  for (const auto& l : s.layers) sum += l.cycles;
  EXPECT_EQ(sum.total(), s.total_cycles);
}

// x[1 x 6] * W[6 x 6] on the 4x4 ws tiny arch, weights at 1 B/cycle: four weight tiles in
// the order the array uses them, (k x n) = 4x4, 2x4 (K rows 4..6 of the first N tile), 4x2,
// 2x2. Each matmul streams the one row of x.
const char* kFc6 = "name: fc6\nbatch: 1\ninputs: [{name: x, shape: [6]}]\nlayers: [{name: fc, op: fc, units: 6}]\n";

}  // namespace

// fetch: tile. Every tile fetches 4 x 4 = 16 B (64 B in all, 28 of them padding) and is
// ready at 16, 32, 48, 64; each shifts in R = 4 cycles, the 2-row ones too.
//  [0, 2)   read_host 6 B (30 wire B at 15.75 B/ns): pcie
//  mm0 (4x4): waits [2, 16), shifts [16, 20), streams [20, 21), drains R + n - 1 = 7 (28)
//  mm1 (2x4, same accumulator group): waits [21, 32) (mm0's drain under it), shifts
//      [32, 36) (all 4 rows, not 2), streams [36, 37), done 44
//  mm2 (4x2, the other accumulator half): waits [37, 48) (act0 [44, 45) under it), shifts
//      [48, 52), streams [52, 53), drains 4 + 2 - 1 = 5 (58)
//  mm3 (2x2): waits [53, 64), shifts [64, 68), streams [68, 69), done 74 (drain [69, 74)
//      with nothing behind it: array_active)
//  act1 [74, 75), write_host 6 B [75, 77)
TEST(WeightFetch, FullTilesFetchAndShiftTheirPadding) {
  TinyArch t;
  t.weight_bandwidth_gb_per_s = 1;
  t.weight_fetch = "tile";
  const auto s = run(t.build(), kFc6);
  EXPECT_EQ(s.weight_memory_bytes, 4u * 16u);
  EXPECT_EQ(s.weight_memory_busy_cycles, 64);
  EXPECT_EQ(s.total_cycles, 77);
  EXPECT_EQ(s.cycles["weight_stall"], 14 + 11 + 11 + 11);
  EXPECT_EQ(s.cycles["weight_shift"], 4 * 4);
  EXPECT_EQ(s.cycles["array_active"], 4 + 5);
  EXPECT_EQ(s.cycles["non_matrix"], 1);
  EXPECT_EQ(s.cycles["pcie"], 2 + 2);
  EXPECT_EQ(s.macs, 6 * 6);
  expect_breakdown_sums(s);
}

// fetch: exact. The tiles fetch 16, 8, 8, 4 B (36 B, the weights themselves), ready at 16,
// 24, 32, 36, and a 2-row tile shifts in 2 cycles.
//  mm0: waits [2, 16), shifts [16, 20), streams [20, 21), done 28
//  mm1 (2x4): waits [21, 24), shifts [24, 26), streams [26, 27), done 34
//  mm2 (4x2): waits [27, 32), shifts [32, 36) (act0 [34, 35) under it), streams [36, 37), done 42
//  mm3 (2x2): ready at 36, taken at 37; its shift started at 36 behind mm2's stream start:
//      [36, 38), 1 cycle exposed; streams [38, 39), done 44; [39, 44) drains with nothing behind
//  act1 [44, 45), write_host [45, 47)
TEST(WeightFetch, ExactFetchMovesOnlyTheRealBytes) {
  TinyArch t;
  t.weight_bandwidth_gb_per_s = 1;
  t.weight_fetch = "exact";
  const auto s = run(t.build(), kFc6);
  EXPECT_EQ(s.weight_memory_bytes, 36u);
  EXPECT_EQ(s.weight_memory_busy_cycles, 36);
  EXPECT_EQ(s.total_cycles, 47);
  EXPECT_EQ(s.cycles["weight_stall"], 14 + 3 + 5);
  EXPECT_EQ(s.cycles["weight_shift"], 4 + 2 + 4 + 1);
  EXPECT_EQ(s.cycles["array_active"], 4 + 5);
  EXPECT_EQ(s.cycles["non_matrix"], 1);
  EXPECT_EQ(s.cycles["pcie"], 2 + 2);
  expect_breakdown_sums(s);
}

TEST(WeightFetch, TheDefaultIsExactAndAnUnknownValueIsAnError) {
  TinyArch t;
  EXPECT_EQ(t.build().weight_memory.fetch, WeightFetch::kExact);
  t.weight_fetch = "tiles";
  try {
    t.build();
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("weight_memory.fetch: 'tiles' is not one of: tile, exact"), std::string::npos)
        << e.what();
  }
}

// The TPU paper's Sec. 7: one 600x600 LSTM1 matrix at batch 96 takes 9 tile steps on the
// 256x256 array, ~2 us each, 18 us; on a 512x512 array 4 steps, 32 us. With full-tile fetch
// every step moves a whole tile at 34 GB/s: 9 x 64 KiB = 589,824 B (17.35 us), 4 x 256 KiB =
// 1,048,576 B (30.84 us). The layer's device time is that weight stream plus the last tile's
// shift, stream and drain and its activate.
const char* kLstm1Matrix = "name: lstm1_600\nbatch: 96\ninputs: [{name: x, shape: [600]}]\n"
                           "layers: [{name: w, op: fc, units: 600}]\n";

ArchConfig tpu_v1(int64_t side) {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/configs/tpu-v1.yaml");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string y = ss.str();
  const std::string r = std::to_string(side);
  y.replace(y.find("  rows: 256"), 11, "  rows: " + r);
  y.replace(y.find("  cols: 256"), 11, "  cols: " + r);
  return parse_arch_config(YamlNode::load_string(y, "tpu-v1.yaml"));
}

// The layer's time on the device: weight fetches start at cycle 0 (the FIFO prefetches
// while the input arrives over PCIe), its last result reaches the unified buffer at the
// layer's last finish (the output's transfer to the host is not the matrix's time).
double device_us(const engine::RunStats& s) { return static_cast<double>(s.layers[0].last_finish_cycle) / s.clock_mhz; }

TEST(WeightFetch, PaperSection7On256x256) {
  const ArchConfig arch = tpu_v1(256);
  ASSERT_EQ(arch.weight_memory.fetch, WeightFetch::kTile);
  const auto s = run(arch, kLstm1Matrix);
  EXPECT_EQ(s.counter("tessera.weight_fetcher.tiles"), 9);
  EXPECT_EQ(s.weight_memory_bytes, 9u * 65536u);
  EXPECT_NEAR(device_us(s), 18.0, 1.0) << device_us(s);  // paper: 18 us
  expect_breakdown_sums(s);
}

TEST(WeightFetch, PaperSection7On512x512) {
  const ArchConfig arch = tpu_v1(512);
  const auto s = run(arch, kLstm1Matrix);
  EXPECT_EQ(s.counter("tessera.weight_fetcher.tiles"), 4);
  EXPECT_EQ(s.weight_memory_bytes, 4u * 262144u);
  EXPECT_NEAR(device_us(s), 32.0, 1.5) << device_us(s);  // paper: 32 us
  expect_breakdown_sums(s);
}
