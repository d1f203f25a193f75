#include <gtest/gtest.h>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/compiler/compiler.h"
#include "tests/support/tiny_arch.h"

using namespace tessera;
using namespace tessera::compiler;
using tessera::test_support::TinyArch;

namespace {

graph::Graph parse(const std::string& text) { return graph::parse_graph_yaml(YamlNode::load_string(text, "g.yaml")); }

std::vector<Opcode> opcodes(const Program& p) {
  std::vector<Opcode> out;
  for (const auto& i : p.instructions) out.push_back(i.op);
  return out;
}

const char* kFc = R"(
name: fc
batch: 3
inputs: [{name: x, shape: [8]}]
layers:
  - {name: fc1, op: fc, units: 6, activation: relu}
)";

}  // namespace

TEST(Compiler, FcTilesOntoWeightStationaryArray) {
  // 4x4 array: K=8 -> 2 K tiles, N=6 -> N tiles of 4 and 2, M=3 rows.
  const ArchConfig arch = TinyArch{}.build();
  const Program p = compile(parse(kFc), arch);
  using O = Opcode;
  // FIFO depth 4: all four weight tiles are requested before the first matmul.
  const std::vector<O> expected = {O::kReadWeights, O::kReadWeights, O::kReadWeights, O::kReadWeights,
                                   O::kReadHost,    O::kMatmul,      O::kMatmul,      O::kActivate,
                                   O::kMatmul,      O::kMatmul,      O::kActivate,    O::kWriteHost,
                                   O::kHalt};
  EXPECT_EQ(opcodes(p), expected);
  const auto& mm0 = p.instructions[5];
  const auto& mm1 = p.instructions[6];
  EXPECT_EQ(mm0.tile.m, 3);
  EXPECT_EQ(mm0.tile.k, 4);
  EXPECT_EQ(mm0.tile.n, 4);
  EXPECT_FALSE(mm0.accumulate);
  EXPECT_TRUE(mm1.accumulate);  // second K tile accumulates into the same half
  EXPECT_EQ(mm1.writes[0].buffer, mm0.writes[0].buffer);
  EXPECT_EQ(p.instructions[8].tile.n, 2);  // partial N tile
  EXPECT_NE(p.instructions[8].writes[0].buffer, mm0.writes[0].buffer);  // other accumulator half
  EXPECT_EQ(p.instructions[0].bytes, 16u);  // 4x4 int8 weights
  EXPECT_EQ(p.instructions[2].bytes, 8u);   // 4x2
  EXPECT_EQ(p.weight_bytes_read, 48u);      // 8x6 weights, fetched once
  EXPECT_EQ(p.host_input_bytes, 24u);       // 3x8
  EXPECT_EQ(p.host_output_bytes, 18u);      // 3x6
  EXPECT_EQ(mm0.ub_read_bytes, 12u);        // 3 rows x 4 int8
  ASSERT_EQ(p.layers.size(), 1u);
  EXPECT_EQ(p.layers[0].macs, 3 * 8 * 6);
}

TEST(Compiler, PrefetchDistanceIsTheFifoDepth) {
  TinyArch t;
  t.fifo_depth = 1;
  const Program p = compile(parse(kFc), t.build());
  using O = Opcode;
  // One tile ahead, issued before whatever comes next (also before an activate,
  // so the controller waiting on the activate does not hold back the prefetch).
  const std::vector<O> expected = {O::kReadWeights, O::kReadHost, O::kMatmul, O::kReadWeights, O::kMatmul,
                                   O::kReadWeights, O::kActivate, O::kMatmul, O::kReadWeights, O::kMatmul,
                                   O::kActivate,    O::kWriteHost, O::kHalt};
  EXPECT_EQ(opcodes(p), expected);
}

TEST(Compiler, MatmulReadsDependOnProducerColumns) {
  // fc2's first K tile reads columns 0..3 of fc1's output: exactly what fc1's first activate wrote.
  const Program p = compile(parse(R"(
name: two
batch: 2
inputs: [{name: x, shape: [4]}]
layers:
  - {name: fc1, op: fc, units: 8}
  - {name: fc2, op: fc, units: 4}
)"),
                            TinyArch{}.build());
  const Instruction* act0 = nullptr;
  const Instruction* fc2_mm0 = nullptr;
  const std::vector<Instruction> all = p.instructions.expanded();  // decoded: pointers into it stay valid
  for (const auto& i : all) {
    if (i.op == Opcode::kActivate && !act0) act0 = &i;
    if (i.op == Opcode::kMatmul && i.layer == 1 && !fc2_mm0) fc2_mm0 = &i;
  }
  ASSERT_TRUE(act0 && fc2_mm0);
  EXPECT_TRUE(fc2_mm0->reads[0].overlaps(act0->writes[0]));
  EXPECT_EQ(fc2_mm0->reads[0].col_begin, 0);
  EXPECT_EQ(fc2_mm0->reads[0].col_end, 4);
}

TEST(Compiler, ConvUsesImplicitIm2colAndAccumulatorChunks) {
  // 6x6x2 input, 3x3 conv, same padding, 5 filters: M = 36 per sample, K = 18, N = 5.
  TinyArch t;
  t.accumulator_entries = 32;  // halves of 16 rows: M=72 -> 5 chunks (16,16,16,16,8)
  const Program p = compile(parse(R"(
name: conv
batch: 2
inputs: [{name: x, shape: [6, 6, 2]}]
layers:
  - {name: c, op: conv2d, filters: 5, kernel: 3, padding: same}
)"),
                            t.build());
  int matmuls = 0, activates = 0;
  for (const auto& i : p.instructions) {
    matmuls += i.op == Opcode::kMatmul;
    activates += i.op == Opcode::kActivate;
  }
  // 5 M chunks x 2 N tiles (4+1) x 5 K tiles (18 = 4+4+4+4+2).
  EXPECT_EQ(matmuls, 5 * 2 * 5);
  EXPECT_EQ(activates, 5 * 2);
  EXPECT_EQ(p.layers[0].macs, 72 * 18 * 5);
  EXPECT_EQ(p.layers[0].weight_bytes, 5u * 18 * 5);  // weights re-fetched for each M chunk
}

TEST(Compiler, OutputStationaryTilesMByRows) {
  TinyArch t;
  t.dataflow = "os";
  const Program p = compile(parse(R"(
name: fc
batch: 6
inputs: [{name: x, shape: [4]}]
layers: [{name: f, op: fc, units: 4}]
)"),
                            t.build());
  std::vector<int64_t> ms;
  for (const auto& i : p.instructions)
    if (i.op == Opcode::kMatmul) ms.push_back(i.tile.m);
  EXPECT_EQ(ms, (std::vector<int64_t>{4, 2}));  // m <= rows for an output-stationary array
}

TEST(Compiler, BatchThatDoesNotFitRunsInPasses) {
  // 64 B unified buffer; a sample needs 8 B of input + 6 B of output = 14 B, so
  // 4 samples fit (56 B) and 5 do not (70 B): batch 10 runs as passes of 4, 4, 2.
  TinyArch t;
  t.ub_capacity = "64";
  const Program p = compile(parse(kFc), t.build(), {.batch = 10});
  EXPECT_EQ(p.batch, 10);
  EXPECT_EQ(p.sub_batch, 4);
  int reads = 0, weight_reads = 0;
  for (const auto& i : p.instructions) {
    reads += i.op == Opcode::kReadHost;
    weight_reads += i.op == Opcode::kReadWeights;
  }
  EXPECT_EQ(reads, 3);
  EXPECT_EQ(weight_reads, 3 * 4);  // weights fetched again in every pass
  EXPECT_EQ(p.host_input_bytes, 80u);
  EXPECT_EQ(p.layers[0].macs, 10 * 8 * 6);
  EXPECT_LE(p.ub_peak_bytes, 64u);
}

TEST(Compiler, SampleThatDoesNotFitIsAClearError) {
  // Even one row of x (60 B) and of the output (8 B) exceed 64 B: no spill or tile helps.
  TinyArch t;
  t.ub_capacity = "64";
  try {
    compile(parse("name: big\ninputs: [{name: x, shape: [60]}]\nlayers: [{name: f, op: fc, units: 8}]\n"), t.build());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("does not fit the unified buffer of 'tiny' (64 bytes)"), std::string::npos) << m;
    EXPECT_NE(m.find("layer 'f' (fc) needs 68 bytes for its smallest tile"), std::string::npos) << m;
    EXPECT_NE(m.find("unified_buffer.capacity"), std::string::npos) << m;
  }
}

TEST(Compiler, BufferReuseWaitsForReadersOfTheDeadTensor) {
  // x -> a -> b -> c: b reuses x's bytes once x died after a; writers of b must also claim x's region.
  const Program p = compile(parse(R"(
name: chain
batch: 1
inputs: [{name: x, shape: [4]}]
layers:
  - {name: a, op: relu}
  - {name: b, op: relu}
  - {name: c, op: relu}
)"),
                            TinyArch{}.build());
  const int x_id = 0;
  bool claims_x = false;
  for (const auto& i : p.instructions) {
    if (i.op == Opcode::kVector && i.layer == 1) {
      for (const auto& w : i.writes) claims_x |= w.buffer == x_id;
    }
  }
  EXPECT_TRUE(claims_x);
}

TEST(Compiler, ListingNamesEveryInstruction) {
  const Program p = compile(parse(kFc), TinyArch{}.build());
  const std::string text = p.listing();
  EXPECT_NE(text.find("# layer fc1"), std::string::npos);
  EXPECT_NE(text.find("matmul m=3 k=4 n=4 int8xint8 overwrite acc=0 ub_read=12"), std::string::npos) << text;
  EXPECT_NE(text.find("read_weights bytes=16"), std::string::npos);
  EXPECT_NE(text.find("activate relu rows=3 cols=4"), std::string::npos);
}

TEST(Compiler, Int4WeightsTakeHalfAByteEach) {
  // fc 3 -> 5 with int4 weights on a 4x4 array with an int8 x int4 mode: B is 3 x 5,
  // tiled by 4 columns: 3 x 4 = 12 weights = 6 bytes, then 3 x 1 = 3 weights = 1.5 -> 2 bytes.
  ArchConfig arch = TinyArch{}.build();
  arch.array.mac_modes.push_back(MacMode{Dtype::kInt8, Dtype::kInt4, 1.0});
  const Program p = compile(parse(R"(
name: fc4
inputs: [{name: x, shape: [3]}]
layers:
  - {name: fc1, op: fc, units: 5, weight_dtype: int4}
)"),
                            arch);
  std::vector<uint64_t> reads;
  for (const auto& in : p.instructions) {
    if (in.op == Opcode::kReadWeights) reads.push_back(in.bytes);
  }
  EXPECT_EQ(reads, (std::vector<uint64_t>{6, 2}));
  EXPECT_EQ(p.weight_bytes_read, 8u);  // the 3 x 5 int4 tensor: ceil(15 x 4 / 8) = 8 bytes
  ASSERT_EQ(p.layers.size(), 1u);
  EXPECT_EQ(p.layers[0].b_dtype, Dtype::kInt4);
  EXPECT_EQ(p.host_input_bytes, 3u);  // the int8 activations are unchanged
}

TEST(Compiler, YamlGraphDtypesNameEveryOperandType) {
  const graph::Graph g = parse(R"(
name: dt
dtype: fp8_e4m3
inputs: [{name: x, shape: [4]}, {name: y, shape: [4], dtype: fp8_e5m2}]
layers:
  - {name: fc1, op: fc, input: x, units: 4, weight_dtype: int4}
  - {name: fc2, op: fc, input: y, units: 4, dtype: bf16}
)");
  EXPECT_EQ(g.tensors[0].dtype, Dtype::kFp8E4m3);
  EXPECT_EQ(g.tensors[1].dtype, Dtype::kFp8E5m2);
  EXPECT_EQ(g.layers[0].weight_dtype, Dtype::kInt4);
  EXPECT_EQ(g.tensors[static_cast<size_t>(g.layers[1].output)].dtype, Dtype::kBf16);
  try {
    parse("name: dt\ninputs: [{name: x, shape: [4], dtype: int4}]\nlayers:\n  - {name: fc1, op: fc, units: 4}\n");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'int4' is for weights only (a layer's weight_dtype); a tensor's dtype may be "
                                         "int8, uint8, int16, fp8_e4m3, fp8_e5m2, fp16, bf16"),
              std::string::npos)
        << e.what();
  }
  try {
    parse("name: dt\ninputs: [{name: x, shape: [4]}]\nlayers:\n  - {name: fc1, op: fc, units: 4, weight_dtype: fp4}\n");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'fp4' is not a weight dtype; allowed: int4, int8, uint8, int16, fp8_e4m3, "
                                         "fp8_e5m2, fp16, bf16"),
              std::string::npos)
        << e.what();
  }
}
