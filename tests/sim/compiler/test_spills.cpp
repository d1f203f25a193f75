// Spills to host memory and row tiles, when one sample does not fit the unified buffer
// (DESIGN.md §4: the compiler schedules with the buffer's capacity).
#include <gtest/gtest.h>

#include <filesystem>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/compiler/compiler.h"
#include "sim/config/arch_config.h"
#include "tests/support/tiny_arch.h"

using namespace tessera;
using namespace tessera::compiler;
using tessera::test_support::TinyArch;

namespace {

graph::Graph parse(const std::string& text) { return graph::parse_graph_yaml(YamlNode::load_string(text, "g.yaml")); }

// a lives from layer 0 to layer 4; b (64 B) and c (48 B) need the room in between.
// With a 128 B buffer: x@0 a@32, x dies, b@64..128; c (48 B) fits only once a is evicted
// (written to host memory: 32 B), lands at 0..48; d@48..80; e needs a again: read back
// (32 B) into the bytes c freed.
const char* kSpill = R"(
name: spill
inputs: [{name: x, shape: [32]}]
layers:
  - {name: a, op: relu}
  - {name: b, op: concat, inputs: [a, a]}
  - {name: c, op: slice, axis: 0, begin: 0, end: 48}
  - {name: d, op: slice, axis: 0, begin: 0, end: 32}
  - {name: e, op: add, inputs: [a, d]}
)";

int index_of(const Program& p, Opcode op, int layer, bool spill) {
  for (size_t i = 0; i < p.instructions.size(); ++i) {
    const auto& in = p.instructions[i];
    if (in.op == op && in.layer == layer && in.spill == spill) return static_cast<int>(i);
  }
  return -1;
}

bool overlaps_any(const isa::RegionList& a, const isa::RegionList& b) {
  for (const auto& r : a)
    for (const auto& w : b)
      if (r.overlaps(w)) return true;
  return false;
}

}  // namespace

TEST(Spills, EvictsTheTensorUsedFurthestAheadAndReadsItBack) {
  TinyArch t;
  t.ub_capacity = "128";
  const Program p = compile(parse(kSpill), t.build());
  EXPECT_EQ(p.sub_batch, 1);
  EXPECT_EQ(p.spill_bytes_out, 32u);  // a, once: activations do not change, so it is written once
  EXPECT_EQ(p.spill_bytes_in, 32u);
  EXPECT_EQ(p.layers[2].spill_bytes_out, 32u);  // c needed the room
  EXPECT_EQ(p.layers[4].spill_bytes_in, 32u);   // e reads a back
  for (int l : {0, 1, 3}) EXPECT_EQ(p.layers[l].spill_bytes_out + p.layers[l].spill_bytes_in, 0u) << l;
  EXPECT_EQ(p.host_input_bytes, 32u);   // x, not a spill
  EXPECT_EQ(p.host_output_bytes, 32u);  // e
  EXPECT_LE(p.ub_peak_bytes, 128u);

  const int a_act = index_of(p, Opcode::kVector, 0, false);
  const int spill_out = index_of(p, Opcode::kWriteHost, 2, true);
  const int c_vec = index_of(p, Opcode::kVector, 2, false);
  const int spill_in = index_of(p, Opcode::kReadHost, 4, true);
  const int e_vec = index_of(p, Opcode::kVector, 4, false);
  ASSERT_GE(a_act, 0);
  ASSERT_GE(spill_out, 0);
  ASSERT_GE(spill_in, 0);
  // The write-back comes after a's producer and reads what it wrote (the controller waits on it) ...
  EXPECT_GT(spill_out, a_act);
  EXPECT_TRUE(overlaps_any(p.instructions[spill_out].reads, p.instructions[a_act].writes));
  EXPECT_EQ(p.instructions[spill_out].bytes, 32u);
  // ... c, which reuses a's bytes, claims a's region so it waits for the write-back ...
  EXPECT_GT(c_vec, spill_out);
  EXPECT_TRUE(overlaps_any(p.instructions[c_vec].writes, p.instructions[spill_out].reads));
  // ... and the read-back comes before e, which reads what it wrote.
  EXPECT_LT(spill_in, e_vec);
  EXPECT_TRUE(overlaps_any(p.instructions[e_vec].reads, p.instructions[spill_in].writes));
  EXPECT_EQ(p.instructions[spill_in].bytes, 32u);
  // Exactly one transfer each way besides the graph's input and output.
  int spills = 0;
  for (const auto& in : p.instructions) spills += in.spill;
  EXPECT_EQ(spills, 2);
  const std::string text = p.listing();
  EXPECT_NE(text.find("write_host bytes=32 ub=0x20 spill"), std::string::npos) << text;
  EXPECT_NE(text.find("# spills to host memory over PCIe: 32 bytes out, 32 bytes in"), std::string::npos) << text;
}

TEST(Spills, NoneWhenTheSampleFits) {
  TinyArch t;
  t.ub_capacity = "256";
  const Program p = compile(parse(kSpill), t.build());
  EXPECT_EQ(p.spill_bytes_out + p.spill_bytes_in, 0u);
  for (const auto& in : p.instructions) EXPECT_FALSE(in.spill);
  EXPECT_EQ(p.listing().find("spills to host memory"), std::string::npos);
}

TEST(Spills, GraphInputsAreNotWrittenBack) {
  // x itself lives until e: evicting it moves nothing (the host has it), reading it back is a spill.
  TinyArch t;
  t.ub_capacity = "96";
  const Program p = compile(parse(R"(
name: keep_input
inputs: [{name: x, shape: [32]}]
layers:
  - {name: b, op: concat, inputs: [x, x]}
  - {name: c, op: slice, axis: 0, begin: 0, end: 32}
  - {name: e, op: add, inputs: [x, c]}
)"),
                            t.build());
  EXPECT_EQ(p.spill_bytes_out, 0u);
  EXPECT_EQ(p.spill_bytes_in, 32u);
  EXPECT_EQ(p.layers[2].spill_bytes_in, 32u);
  EXPECT_EQ(p.host_input_bytes, 32u);
}

TEST(Spills, FcThatDoesNotFitRunsInRowTiles) {
  // x [16 x 8] and y [16 x 8] are 128 B each; 192 B hold neither both nor x plus two
  // tile buffers of full rows of y, so both stream: two buffers of R rows each for x
  // and y, 4 R x 8 B <= 192 -> R = 6: tiles of 6, 6 and 4 rows.
  TinyArch t;
  t.ub_capacity = "192";
  const Program p = compile(parse(R"(
name: tall
inputs: [{name: x, shape: [16, 8]}]
layers: [{name: f, op: fc, units: 8}]
)"),
                            t.build());
  EXPECT_EQ(p.layers[0].row_tiles, 3);
  EXPECT_EQ(p.layers[0].macs, 16 * 8 * 8);
  EXPECT_EQ(p.layers[0].gemm_m, 16);
  EXPECT_LE(p.ub_peak_bytes, 192u);
  // The graph's own input and output stream: host I/O, not spills.
  EXPECT_EQ(p.host_input_bytes, 128u);
  EXPECT_EQ(p.host_output_bytes, 128u);
  EXPECT_EQ(p.spill_bytes_out + p.spill_bytes_in, 0u);
  std::vector<uint64_t> in_bytes, out_bytes;
  std::vector<int64_t> rows;
  for (const auto& in : p.instructions) {
    if (in.op == Opcode::kReadHost) in_bytes.push_back(in.bytes);
    if (in.op == Opcode::kWriteHost) out_bytes.push_back(in.bytes);
    if (in.op == Opcode::kActivate) rows.push_back(in.rows);
  }
  EXPECT_EQ(in_bytes, (std::vector<uint64_t>{48, 48, 32}));
  EXPECT_EQ(out_bytes, (std::vector<uint64_t>{48, 48, 32}));
  EXPECT_EQ(rows, (std::vector<int64_t>{6, 6, 6, 6, 4, 4}));  // two N tiles of 4 per row tile
  // Each tile's matmuls read what its read_host wrote; each write_host reads what its activates wrote.
  for (size_t i = 0; i < p.instructions.size(); ++i) {
    const auto& in = p.instructions[i];
    if (in.op != Opcode::kMatmul) continue;
    bool fed = false;
    for (size_t j = 0; j < i; ++j) {
      if (p.instructions[j].op == Opcode::kReadHost) fed |= overlaps_any(in.reads, p.instructions[j].writes);
    }
    EXPECT_TRUE(fed) << i;
  }
}

TEST(Spills, ConvTilesReadTheWindowHalo) {
  // r = relu(x) [8, 8, 4] (256 B) feeds a 3x3 'same' conv to [8, 8, 4] (256 B). In 300 B
  // neither r nor k fits beside two tile buffers of a full accumulator half, so both
  // stream: one output line (8 rows) per tile needs the input lines above and below it,
  // 3 x 32 B (2 x 32 B at the top and bottom edges): 2 x 8 x 4 + 2 x 24 x 4 = 256 B <= 300.
  TinyArch t;
  t.ub_capacity = "300";
  const Program p = compile(parse(R"(
name: convtile
inputs: [{name: x, shape: [8, 8, 4]}]
layers:
  - {name: r, op: relu}
  - {name: k, op: conv2d, filters: 4, kernel: 3, padding: same}
  - {name: z, op: relu}
)"),
                            t.build());
  const LayerInfo& k = p.layers[1];
  SCOPED_TRACE(p.listing());
  EXPECT_EQ(k.row_tiles, 8);
  EXPECT_EQ(k.macs, 8 * 8 * 36 * 4);
  EXPECT_EQ(k.gemm_m, 64);
  EXPECT_EQ(k.spill_bytes_in, 2 * 64u + 6 * 96u);  // r's lines, halo included
  EXPECT_EQ(k.spill_bytes_out, 256u);              // k's own lines, once
  EXPECT_EQ(p.layers[0].spill_bytes_out, 256u);    // r streamed out by its own tiles
  EXPECT_EQ(p.layers[2].spill_bytes_in, 256u);     // z reads k back
  EXPECT_LE(p.ub_peak_bytes, 300u);
  std::vector<uint64_t> reads;
  for (const auto& in : p.instructions) {
    if (in.op == Opcode::kReadHost && in.layer == 1) {
      EXPECT_TRUE(in.spill);
      reads.push_back(in.bytes);
    }
  }
  EXPECT_EQ(reads, (std::vector<uint64_t>{64, 96, 96, 96, 96, 96, 96, 64}));
  // A matmul of tile i reads only its own tile buffer, which tile i's read_host filled
  // (and tile i - 2's readers had to finish with).
  int tile = -1;
  isa::RegionList filled;
  for (const auto& in : p.instructions) {
    if (in.layer != 1) continue;
    if (in.op == Opcode::kReadHost) ++tile, filled = in.writes;
    if (in.op == Opcode::kMatmul) {
      EXPECT_TRUE(overlaps_any(in.reads, filled)) << "tile " << tile;
    }
  }
}

TEST(Spills, ResizeTilesReadTheInputLinesTheyInterpolate) {
  // r = relu(x) [16, 16, 4] (1024 B) resized (nearest) to [4, 4, 4] (64 B): 1088 B do not
  // fit in 900. r streams in tiles of one output line (a full accumulator half of 4 rows),
  // each reading the input lines around 4 oh, one line of taps each side: [0, 5), [3, 9),
  // [7, 13), [11, 16) of 64 B each. Two tile buffers of 6 lines + the output: 832 B <= 900.
  TinyArch t;
  t.ub_capacity = "900";
  t.accumulator_entries = 8;
  const Program p = compile(parse(R"(
name: resizetile
inputs: [{name: x, shape: [16, 16, 4]}]
layers:
  - {name: r, op: relu}
  - {name: down, op: resize, size: [4, 4, 4]}
  - {name: z, op: relu}
)"),
                            t.build());
  const LayerInfo& d = p.layers[1];
  SCOPED_TRACE(p.listing());
  EXPECT_EQ(d.row_tiles, 4);
  EXPECT_EQ(d.spill_bytes_in, 320u + 384u + 384u + 320u);
  EXPECT_EQ(d.spill_bytes_out, 0u);  // the small output stays
  EXPECT_LE(p.ub_peak_bytes, 900u);
  std::vector<uint64_t> reads;
  for (const auto& in : p.instructions) {
    if (in.op == Opcode::kReadHost && in.layer == 1) reads.push_back(in.bytes);
  }
  EXPECT_EQ(reads, (std::vector<uint64_t>{320, 384, 384, 320}));
}

TEST(Spills, LayerWhoseSmallestTileDoesNotFitIsAClearError) {
  // One row of x (60 B) and one of the output (8 B) already exceed 64 B.
  TinyArch t;
  t.ub_capacity = "64";
  try {
    compile(parse("name: big\ninputs: [{name: x, shape: [60]}]\nlayers: [{name: f, op: fc, units: 8}]\n"), t.build());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("g.yaml: workload 'big' does not fit the unified buffer of 'tiny' (64 bytes)"), std::string::npos) << m;
    EXPECT_NE(m.find("layer 'f' (fc) needs 68 bytes for its smallest tile"), std::string::npos) << m;
    EXPECT_NE(m.find("unified_buffer.capacity"), std::string::npos) << m;
  }
}

TEST(Spills, LayerThatCannotBeTiledIsAClearError) {
  // A concat along the rows mixes them: it needs its inputs and output at once (64 + 64 +
  // 128 B > 96 B).
  TinyArch t;
  t.ub_capacity = "96";
  try {
    compile(parse(R"(
name: cat
inputs: [{name: x, shape: [8, 8]}, {name: z, shape: [8, 8]}]
layers: [{name: c, op: concat, inputs: [x, z], axis: 0}]
)"),
            t.build());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("layer 'c' (concat) needs 256 bytes at once"), std::string::npos) << m;
    EXPECT_NE(m.find("cannot run in row tiles"), std::string::npos) << m;
  }
}

TEST(Spills, TransposeThatDoesNotFitRunsInRowTilesOfItsOutput) {
  // x [8 x 8] and its transpose are 64 B each; 96 B hold x whole (its rows are gathered
  // from all over it) and two tile buffers of R output rows: 64 + 2 x 8 R <= 96 -> R = 2,
  // four tiles. Each reads the 16 B it writes, not the whole input.
  TinyArch t;
  t.ub_capacity = "96";
  const Program p = compile(parse(R"(
name: tr
inputs: [{name: x, shape: [8, 8]}]
layers: [{name: t, op: transpose, perm: [1, 0]}]
)"),
                            t.build());
  EXPECT_EQ(p.layers[0].row_tiles, 4);
  EXPECT_LE(p.ub_peak_bytes, 96u);
  int tiles = 0;
  for (const auto& in : p.instructions) {
    if (in.op != Opcode::kVector) continue;
    ++tiles;
    EXPECT_EQ(in.ub_read_bytes, 16u);
    EXPECT_EQ(in.ub_write_bytes, 16u);
    EXPECT_EQ(in.elements, 16);
  }
  EXPECT_EQ(tiles, 4);
  EXPECT_EQ(p.host_output_bytes, 64u);  // the output streams out tile by tile
}

TEST(Spills, NoneForTheTpuPaperAppsOnTpuV1) {
  const std::filesystem::path src = TESSERA_SOURCE_DIR;
  const ArchConfig arch = parse_arch_config(YamlNode::load_file(src / "configs/tpu-v1.yaml"));
  for (const char* app : {"mlp0", "mlp1", "lstm0", "lstm1", "cnn0", "cnn1"}) {
    const graph::Graph g = graph::parse_graph_yaml(YamlNode::load_file(src / "workloads/tpu" / (std::string(app) + ".yaml")));
    const Program p = compile(g, arch);
    EXPECT_EQ(p.spill_bytes_out + p.spill_bytes_in, 0u) << app;
    for (const auto& l : p.layers) EXPECT_EQ(l.row_tiles, 0) << app << " " << l.name;
    for (const auto& in : p.instructions) ASSERT_FALSE(in.spill) << app;
  }
}

TEST(Spills, AttentionMatmulTilesByHeads) {
  // scores = relu(q) x kt: 4 heads of 8 x 4 by 4 x 8 (128 B each operand, 256 B of scores).
  // In 320 B, kt stays resident (loaded per head as the array's stationary operand) while
  // the rows of q and of the scores stream one head (8 rows) per tile.
  TinyArch t;
  t.ub_capacity = "320";
  const Program p = compile(parse(R"(
name: mm
inputs: [{name: q, shape: [4, 8, 4]}, {name: kt, shape: [4, 4, 8]}]
layers:
  - {name: qr, op: relu, input: q}
  - {name: s, op: matmul, inputs: [qr, kt]}
  - {name: z, op: relu}
)"),
                            t.build());
  const LayerInfo& s = p.layers[1];
  EXPECT_EQ(s.mapping, "array_ub");
  EXPECT_EQ(s.row_tiles, 4);
  EXPECT_EQ(s.macs, 4 * 8 * 4 * 8);
  EXPECT_EQ(s.spill_bytes_out, 128u + 256u);  // qr written back once, then the scores
  EXPECT_EQ(s.spill_bytes_in, 128u);          // qr, head by head
  EXPECT_LE(p.ub_peak_bytes, 320u);
  int ub_weight_loads = 0;
  for (const auto& in : p.instructions) {
    ub_weight_loads += in.op == Opcode::kReadWeights && in.weight_source == WeightSource::kUnifiedBuffer;
  }
  EXPECT_EQ(ub_weight_loads, 4 * 2);  // per head: kt's 4 x 8 as two 4 x 4 tiles
}

TEST(Spills, MatmulWhoseBDoesNotFitReadsBThroughTheWeightFetchers) {
  // y = a x b, a [16 x 8] and b [8 x 16] int8 (128 B each), y 256 B, in device memory. In
  // 144 B, b whole (128 B) leaves no room for one row of a (8 B) and of y (16 B) even
  // single-buffered (152 B), so b stays in device memory and the weight fetchers read its
  // 4 x 4 tiles from there, as they read weights. a and y stream double-buffered:
  // 2 R x 8 + 2 R x 16 <= 144 -> R = 3: tiles of 3, 3, 3, 3, 3 and 1 rows, and every tile
  // reads all of b again: 2 K steps x 4 N tiles = 8 reads of 16 B, 128 B per tile.
  TinyArch t;
  t.ub_capacity = "144";
  t.residency = "{inputs: device, outputs: device}";
  const char* kTallB = R"(
name: tallb
inputs: [{name: a, shape: [16, 8]}, {name: b, shape: [8, 16]}]
layers: [{name: y, op: matmul, inputs: [a, b]}]
)";
  const Program p = compile(parse(kTallB), t.build());
  const LayerInfo& y = p.layers[0];
  EXPECT_EQ(y.mapping, "array_ub");
  EXPECT_EQ(y.row_tiles, 6);
  EXPECT_EQ(y.macs, 16 * 8 * 16);
  EXPECT_LE(p.ub_peak_bytes, 144u);
  int from_memory = 0, from_ub = 0;
  uint64_t b_bytes = 0;
  for (const auto& in : p.instructions) {
    if (in.op != Opcode::kReadWeights) continue;
    from_memory += in.weight_source == WeightSource::kWeightMemory;
    from_ub += in.weight_source == WeightSource::kUnifiedBuffer;
    b_bytes += in.bytes;
  }
  EXPECT_EQ(from_ub, 0);
  EXPECT_EQ(from_memory, 6 * 8);
  EXPECT_EQ(b_bytes, 6u * 128u);
  EXPECT_EQ(y.weight_bytes, 6u * 128u);
  // b never enters the buffer: only a's rows come in by DMA.
  EXPECT_EQ(p.device_input_bytes, 128u);
  // Spills in host memory (TPU v1's shape): the weight fetchers have no path to host
  // memory, so b must fit, as before.
  TinyArch h;
  h.ub_capacity = "144";
  try {
    compile(parse(kTallB), h.build());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'y' (matmul) needs 152 bytes for its smallest tile"), std::string::npos)
        << e.what();
  }
  // In 224 B, b resident leaves tiles of 2 rows (128 + 2 R x 8 + 2 R x 16 <= 224), b in device
  // memory tiles of 4 (48 R <= 224): the larger tiles win, 4 tiles x 8 reads of b.
  t.ub_capacity = "224";
  const Program wider = compile(parse(kTallB), t.build());
  EXPECT_EQ(wider.layers[0].row_tiles, 4);
  EXPECT_EQ(wider.layers[0].weight_bytes, 4u * 128u);
  // With room for b beside full-size tiles (16 rows: the accumulator half is 32), b is
  // resident and read from the buffer, as before.
  t.ub_capacity = "512";
  const Program resident = compile(parse(kTallB), t.build());
  for (const auto& in : resident.instructions) {
    if (in.op == Opcode::kReadWeights) EXPECT_EQ(in.weight_source, WeightSource::kUnifiedBuffer);
  }
}
