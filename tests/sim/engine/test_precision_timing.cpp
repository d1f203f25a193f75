// Precision in the timing model, hand-derived. One simulation per test (process).
#include <gtest/gtest.h>

#include "models/array/matmul_cost.h"
#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/compiler/compiler.h"
#include "sim/config/arch_config.h"
#include "sim/engine/engine.h"
#include "tests/support/tiny_arch.h"

using namespace tessera;

namespace {

// One 256x256 weight tile streamed by 2048 rows (one accumulator half on the TPU):
// compute bound, the array streams m = 2048 rows at the MAC rate of the pair.
std::string gemm(const char* a, const char* b) {
  return std::string("name: gemm\nbatch: 2048\ninputs: [{name: x, shape: [256], dtype: ") + a +
         "}]\nlayers: [{name: fc, op: fc, units: 256, weight_dtype: " + b + "}]\n";
}

engine::RunStats run(const ArchConfig& arch, const std::string& g) {
  const auto graph = graph::parse_graph_yaml(YamlNode::load_string(g, "g.yaml"));
  return engine::simulate(arch, compiler::compile(graph, arch));
}

ArchConfig tpu() { return load_arch_config(std::string(TESSERA_SOURCE_DIR) + "/configs/tpu-v1.yaml"); }

}  // namespace

TEST(PrecisionTiming, Int8x8StreamsOneRowPerCycle) {
  EXPECT_EQ(run(tpu(), gemm("int8", "int8")).array_stream_cycles, 2048);
}

TEST(PrecisionTiming, Int8x16TakesTwiceTheCycles) {
  // rate 1/2: 4096 cycles; the 16-bit weight tile is 128 KiB from weight memory.
  const auto s = run(tpu(), gemm("int8", "int16"));
  EXPECT_EQ(s.array_stream_cycles, 2 * 2048);
  EXPECT_EQ(s.cycles["input_stall"], 0);
  EXPECT_EQ(s.weight_memory_bytes, 2u * 65536);
}

TEST(PrecisionTiming, Int16x16TakesFourTimesTheCycles) {
  // rate 1/4: 8192 cycles; the unified buffer delivers 2048 x 256 x 2 B in 4096 cycles, no stall.
  const auto s = run(tpu(), gemm("int16", "int16"));
  EXPECT_EQ(s.array_stream_cycles, 4 * 2048);
  EXPECT_EQ(s.cycles["input_stall"], 0);
  EXPECT_EQ(s.pcie_bytes_to_device, 2048u * 256 * 2);
}

// Weight bound: batch 1, four 4x4 tiles at 1 B/ns (tiny arch, 1 GHz): weight
// memory is busy 16 cycles per int8 tile, 32 per int16 tile.
const char* kWide = "name: wide\nbatch: 1\ninputs: [{name: x, shape: [4]}]\nlayers: [{name: fc, op: fc, units: 16, weight_dtype: %s}]\n";

TEST(PrecisionTiming, WeightBoundInt8) {
  test_support::TinyArch t;
  t.weight_bandwidth_gb_per_s = 1;
  char g[256];
  std::snprintf(g, sizeof g, kWide, "int8");
  const auto s = run(t.build(), g);
  EXPECT_EQ(s.weight_memory_busy_cycles, 64);
  EXPECT_EQ(s.total_cycles, 80);  // as derived in test_engine.cpp
}

TEST(PrecisionTiming, WeightBoundInt16IsTwiceTheWeightMemoryTime) {
  test_support::TinyArch t;
  t.weight_bandwidth_gb_per_s = 1;
  char g[256];
  std::snprintf(g, sizeof g, kWide, "int16");
  const auto s = run(t.build(), g);
  EXPECT_EQ(s.weight_memory_busy_cycles, 128);
  // Tiles ready at 32, 64, 96, 128. matmul 0 waits [2, 32), shifts [32, 36),
  // streams its single row at rate 1/2 in 2 cycles [36, 38), drains 7 (done 45);
  // each later matmul (the other accumulator half, dispatched while the previous group
  // drains) waits for its tile from the previous stream's end (38, 70, 102): 26 cycles
  // each, with the previous drain under the wait; the last is done at 141, its activate
  // takes [141, 142) and the 16 B output [142, 145).
  EXPECT_EQ(s.cycles["weight_stall"], 30 + 3 * 26);
  EXPECT_EQ(s.array_stream_cycles, 4 * 2);
  EXPECT_EQ(s.total_cycles, 145);
}

TEST(PrecisionTiming, UnsupportedPairIsACompileError) {
  const ArchConfig arch = tpu();  // no fp16 modes
  const auto graph = graph::parse_graph_yaml(YamlNode::load_string(gemm("fp16", "fp16"), "g.yaml"));
  try {
    compiler::compile(graph, arch);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'fc' multiplies fp16 activations by fp16 weights, but 'tpu-v1' has no such entry in array.mac_modes (it has: int8 x int8, int8 x int16, int16 x int8, int16 x int16)"),
              std::string::npos)
        << e.what();
  }
}

// Vector work on 16-bit elements takes two 8-bit lanes per element (review defect D2:
// the compiler never set element_bytes, so int16 cost the same as int8). A sigmoid over
// 4096 elements on 4 lanes, with unified-buffer ports wide enough (4096 B/cycle) that
// they never pace it: 4096 / 4 = 1024 cycles at int8, 4096 x 2 / 4 = 2048 at int16.
const char* kSigmoid = "name: act\nbatch: 1\ninputs: [{name: x, shape: [4096], dtype: %s}]\nlayers: [{name: s, op: sigmoid}]\n";

engine::RunStats run_sigmoid(const char* dtype) {
  test_support::TinyArch t;
  ArchConfig arch = t.build();
  arch.unified_buffer.read_bytes_per_cycle = arch.unified_buffer.write_bytes_per_cycle = 4096;
  char g[256];
  std::snprintf(g, sizeof g, kSigmoid, dtype);
  const auto graph = graph::parse_graph_yaml(YamlNode::load_string(g, "g.yaml"));
  const auto program = compiler::compile(graph, arch);
  int vectors = 0;
  for (const auto& in : program.instructions) {
    if (in.op != compiler::Opcode::kVector) continue;
    ++vectors;
    EXPECT_EQ(in.elements, 4096);
    EXPECT_EQ(in.element_bytes, dtype_bytes(*parse_dtype(dtype)));
  }
  EXPECT_EQ(vectors, 1);
  return engine::simulate(arch, program);
}

TEST(PrecisionTiming, VectorInt8OneElementPerLane) { EXPECT_EQ(run_sigmoid("int8").vector_busy_cycles, 1024); }

TEST(PrecisionTiming, VectorInt16TwoLanesPerElement) { EXPECT_EQ(run_sigmoid("int16").vector_busy_cycles, 2048); }

// A MAC rate that is not a power of two (review D5): one 21 x 4 x 4 tile (batch 21, fc
// 4 -> 4 on the 4x4 ws array) streams its 21 rows at rate 0.7 in 30 cycles
// (array::matmul_stream_cycles, which the compiler's mapping estimate uses as well); the
// UB port delivers 21 x 4 B at 4 B/cycle in 21, so it does not pace the stream.
TEST(PrecisionTiming, MacRateSevenTenthsStreamsTwentyOneRowsInThirtyCycles) {
  test_support::TinyArch t;
  ArchConfig arch = t.build();
  ASSERT_EQ(arch.array.mac_modes[0].a, Dtype::kInt8);
  ASSERT_EQ(arch.array.mac_modes[0].b, Dtype::kInt8);
  arch.array.mac_modes[0].rate = 0.7;
  const auto s = run(arch, "name: g\nbatch: 21\ninputs: [{name: x, shape: [4]}]\nlayers: [{name: fc, op: fc, units: 4}]\n");
  EXPECT_EQ(array::matmul_stream_cycles(21, 0.7, 21 * 4, arch.unified_buffer.read_bytes_per_cycle), 30);
  EXPECT_EQ(s.array_stream_cycles, 30);
  EXPECT_EQ(s.cycles["input_stall"], 0);
}
