// Lowering of the ops the ONNX importer brought in, written as YAML graphs (the YAML
// format accepts the same ops as the IR): grouped and transposed convs, attention
// matmuls, LSTM/GRU, vector-op costs, aliases, and streaming I/O when inputs do not fit.
#include <gtest/gtest.h>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/compiler/compiler.h"
#include "tests/support/tiny_arch.h"

using namespace tessera;
using namespace tessera::compiler;
using tessera::graph::Shape;
using tessera::test_support::TinyArch;

namespace {

graph::Graph parse(const std::string& text) { return graph::parse_graph_yaml(YamlNode::load_string(text, "g.yaml")); }

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

int count(const Program& p, Opcode op, int layer = -2) {
  int n = 0;
  for (const auto& i : p.instructions) n += i.op == op && (layer == -2 || i.layer == layer);
  return n;
}

const Shape& out_shape(const graph::Graph& g, int layer) {
  return g.tensors[static_cast<size_t>(g.layers[static_cast<size_t>(layer)].output)].shape;
}

}  // namespace

TEST(YamlOps, NewOpsInferShapes) {
  const graph::Graph g = parse(R"(
name: ops
inputs: [{name: img, shape: [8, 8, 16]}, {name: seq, shape: [10, 32]}]
layers:
  - {name: dw, op: conv2d, input: img, filters: 16, kernel: 3, padding: same, groups: 16}
  - {name: dil, op: conv2d, filters: 8, kernel: 3, dilation: 2, padding: [2, 2, 2, 2]}
  - {name: up, op: conv_transpose2d, filters: 4, kernel: 2, stride: 2}
  - {name: rs, op: resize, scale: [2, 2, 1], mode: linear}
  - {name: pd, op: pad, pads: [1, 1, 0, 0, 0, 0]}
  - {name: gap, op: global_avgpool, keepdims: true}
  - {name: proj, op: fc, input: seq, units: 48}
  - {name: heads, op: reshape, shape: [10, 4, 12]}
  - {name: hT, op: transpose, perm: [1, 0, 2]}
  - {name: kT, op: transpose, perm: [0, 2, 1]}
  - {name: scores, op: matmul, inputs: [hT, kT]}
  - {name: sm, op: softmax, axis: -1}
  - {name: ctx, op: matmul, inputs: [sm, hT]}
  - {name: ln, op: layer_norm, input: proj}
  - {name: mean, op: reduce_mean, axes: [-1], keepdims: false}
  - {name: bias, op: add, input: proj, constant: [48]}
  - {name: first, op: slice, axis: 0, begin: 0, end: 1}
  - {name: wide, op: expand, shape: [10, 48]}
  - {name: lstm, op: lstm, input: seq, hidden: 16, direction: bidirectional}
  - {name: gru, op: gru, input: seq, hidden: 8, linear_before_reset: false}
  - {name: gelu, op: gelu, input: proj}
  - {name: hs, op: hard_swish}
)");
  EXPECT_EQ(out_shape(g, 0), (Shape{8, 8, 16}));
  EXPECT_EQ(g.layers[0].macs_per_sample(), 64 * 9 * 16);
  EXPECT_EQ(g.layers[0].weight_count(), 9 * 16);
  EXPECT_EQ(out_shape(g, 1), (Shape{8, 8, 8}));  // span 5, padding 2+2
  EXPECT_EQ(out_shape(g, 2), (Shape{16, 16, 4}));
  EXPECT_EQ(g.layers[2].macs_per_sample(), 64 * 8 * 4 * 4);  // input pixels x C x (kernel x filters)
  EXPECT_EQ(out_shape(g, 3), (Shape{32, 32, 4}));
  EXPECT_EQ(out_shape(g, 4), (Shape{33, 33, 4}));
  EXPECT_EQ(out_shape(g, 5), (Shape{1, 1, 4}));
  EXPECT_EQ(out_shape(g, 8), (Shape{4, 10, 12}));
  EXPECT_EQ(out_shape(g, 10), (Shape{4, 10, 10}));
  EXPECT_EQ(g.layers[10].macs_per_sample(), 4 * 10 * 12 * 10);
  EXPECT_EQ(g.layers[10].weight_count(), 0);
  EXPECT_EQ(out_shape(g, 12), (Shape{4, 10, 12}));
  EXPECT_EQ(out_shape(g, 14), (Shape{10}));
  EXPECT_EQ(out_shape(g, 16), (Shape{1, 48}));
  EXPECT_EQ(out_shape(g, 17), (Shape{10, 48}));
  EXPECT_EQ(out_shape(g, 18), (Shape{10, 2, 16}));
  EXPECT_EQ(g.layers[18].macs_per_sample(), 2 * 10 * 4 * 16 * (32 + 16));
  EXPECT_EQ(out_shape(g, 19), (Shape{10, 1, 8}));
  EXPECT_FALSE(g.layers[19].linear_before_reset);
}

TEST(YamlOps, ErrorsNameTheLayer) {
  EXPECT_NE(error_of("name: g\ninputs: [{name: x, shape: [4, 4, 6]}]\nlayers:\n  - {name: c, op: conv2d, filters: 4, kernel: 1, groups: 4}\n")
                .find("layer 'c': groups 4 must divide the input channels (6)"),
            std::string::npos);
  EXPECT_NE(error_of("name: g\ninputs: [{name: a, shape: [3, 4]}, {name: b, shape: [5, 2]}]\nlayers:\n  - {name: m, op: matmul, inputs: [a, b]}\n")
                .find("matmul inner dimensions differ"),
            std::string::npos);
  EXPECT_NE(error_of("name: g\ninputs: [{name: x, shape: [6]}]\nlayers:\n  - {name: r, op: reshape, shape: [4, -1]}\n")
                .find("cannot reshape [6] to [4, -1]"),
            std::string::npos);
  EXPECT_NE(error_of("name: g\ninputs: [{name: x, shape: [6, 2]}]\nlayers:\n  - {name: t, op: transpose, perm: [0, 0]}\n")
                .find("perm must be a permutation"),
            std::string::npos);
  EXPECT_NE(error_of("name: g\ninputs: [{name: x, shape: [4]}]\nlayers:\n  - {name: a, op: add, constant: [3]}\n")
                .find("does not broadcast"),
            std::string::npos);
}

TEST(Lowering, GroupedConvOnTheArrayRunsGroupByGroup) {
  const graph::Graph g = parse(R"(
name: grouped
inputs: [{name: x, shape: [4, 4, 8]}]
layers: [{name: c, op: conv2d, filters: 8, kernel: 1, groups: 2}]
)");
  TinyArch t;
  t.vector_lanes = 1;  // a slow vector unit: the array is faster
  const Program p = compile(g, t.build());
  EXPECT_EQ(p.layers[0].mapping, "array");
  // Per group: K = 4 (one tile), N = 4 (one tile), M = 16 rows.
  EXPECT_EQ(count(p, Opcode::kMatmul), 2);
  EXPECT_EQ(p.layers[0].macs, 16 * 4 * 4 * 2);
  EXPECT_EQ(p.layers[0].weights, 2 * 4 * 4);
  // The second group reads input channels 4..8 and writes output channels 4..8.
  const Instruction* second = nullptr;
  const std::vector<Instruction> all = p.instructions.expanded();  // decoded: pointers into it stay valid
  for (const auto& in : all)
    if (in.op == Opcode::kMatmul) second = &in;
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->reads[0].col_begin, 4);
  EXPECT_EQ(second->reads[0].col_end, 8);
}

TEST(Lowering, ConvTransposeOverlapAddsIntoItsOutput) {
  const graph::Graph g = parse(R"(
name: up
inputs: [{name: x, shape: [2, 2, 4]}]
layers: [{name: u, op: conv_transpose2d, filters: 2, kernel: 2, stride: 2, activation: relu}]
)");
  const Program p = compile(g, TinyArch{}.build());
  for (const auto& in : p.instructions) {
    if (in.op != Opcode::kActivate) continue;
    EXPECT_EQ(in.ub_read_bytes, in.ub_write_bytes);  // read-modify-write
    EXPECT_EQ(in.function, isa::ActivationFn::kNone);
  }
  EXPECT_EQ(count(p, Opcode::kVector), 1);  // the relu, once every overlap is in
  EXPECT_EQ(p.layers[0].macs, 4 * 4 * 8);
}

TEST(Lowering, GruWithoutLinearBeforeResetNeedsTwoMatmulsPerStep) {
  const graph::Graph g = parse(R"(
name: gru
inputs: [{name: x, shape: [3, 4]}]
layers: [{name: r, op: gru, hidden: 4, linear_before_reset: false}]
)");
  const Program p = compile(g, TinyArch{}.build());
  int resets = 0, cells = 0;
  for (const auto& in : p.instructions) {
    resets += in.op == Opcode::kVector && in.vector_function == "gru_reset";
    cells += in.op == Opcode::kVector && in.vector_function == "gru_cell";
  }
  EXPECT_EQ(resets, 3);
  EXPECT_EQ(cells, 3);
  // Projection: K = 4, N = 12 -> 3 tiles; per step z,r (N = 8: 2 tiles) and h (N = 4: 1 tile).
  EXPECT_EQ(count(p, Opcode::kMatmul), 3 + 3 * 3);
  EXPECT_EQ(p.layers[0].macs, 3 * 12 * (4 + 4));
}

TEST(Lowering, VectorOpsCostElementOperations) {
  const graph::Graph g = parse(R"(
name: vec
inputs: [{name: x, shape: [4, 8]}]
layers:
  - {name: sm, op: softmax}
  - {name: ln, op: layer_norm}
  - {name: rm, op: reduce_mean, axes: [1], keepdims: true}
  - {name: t, op: transpose, input: x, perm: [1, 0]}
  - {name: r, op: reshape, shape: [32]}
  - {name: img, op: reshape, input: x, shape: [2, 2, 8]}
  - {name: up, op: resize, scale: [2, 2, 1], mode: linear}
  - {name: gl, op: gelu, input: x}
outputs: [rm, r, up, gl]
)");
  const Program p = compile(g, TinyArch{}.build());
  auto elements = [&](int layer) {
    int64_t e = 0;
    for (const auto& in : p.instructions)
      if (in.op == Opcode::kVector && in.layer == layer) e += in.elements;
    return e;
  };
  EXPECT_EQ(elements(0), 3 * 32);  // max, exp+sum, scale
  EXPECT_EQ(elements(1), 3 * 32);
  EXPECT_EQ(elements(2), 32);      // every input element once
  EXPECT_EQ(elements(3), 32);      // a transpose moves every element
  EXPECT_EQ(count(p, Opcode::kVector, 4), 0);  // reshape: an alias
  EXPECT_EQ(p.layers[4].mapping, "alias");
  EXPECT_EQ(elements(6), 4 * 4 * 8 * 4);  // bilinear: 2 taps on each of 2 resized axes
  EXPECT_EQ(elements(7), 2 * 32);
  EXPECT_EQ(p.layers[0].mapping, "vector");
}

TEST(Lowering, InputsThatDoNotFitUpFrontAreStreamed) {
  // Three 24-byte inputs, each used by one layer; a 64-byte buffer cannot hold all three
  // up front (72 B), but can when each is read just before its consumer and each output
  // leaves as soon as it is done.
  const std::string yaml = R"(
name: stream
inputs: [{name: a, shape: [24]}, {name: b, shape: [24]}, {name: c, shape: [24]}]
layers:
  - {name: ra, op: relu, input: a}
  - {name: rb, op: relu, input: b}
  - {name: rc, op: relu, input: c}
outputs: [ra, rb, rc]
)";
  TinyArch t;
  t.ub_capacity = "64";
  const Program p = compile(parse(yaml), t.build());
  EXPECT_EQ(p.sub_batch, 1);
  EXPECT_LE(p.ub_peak_bytes, 64u);
  std::vector<Opcode> ops;
  for (const auto& in : p.instructions) ops.push_back(in.op);
  using O = Opcode;
  const std::vector<O> want = {O::kReadHost, O::kVector, O::kWriteHost, O::kReadHost, O::kVector, O::kWriteHost,
                               O::kReadHost, O::kVector, O::kWriteHost, O::kHalt};
  EXPECT_EQ(ops, want);
  // With room for everything, inputs are read up front as before.
  t.ub_capacity = "1 KiB";
  const Program q = compile(parse(yaml), t.build());
  EXPECT_EQ(q.instructions[0].op, O::kReadHost);
  EXPECT_EQ(q.instructions[1].op, O::kReadHost);
  EXPECT_EQ(q.instructions[2].op, O::kReadHost);
}

TEST(YamlOps, ShippedBertLayerMatchesOneTwelfthOfBertBase) {
  const graph::Graph g = graph::load_graph_yaml(std::string(TESSERA_SOURCE_DIR) + "/workloads/bert_layer.yaml");
  EXPECT_EQ(g.total_macs_per_sample(), 4LL * 128 * 768 * 768 + 2LL * 12 * 128 * 128 * 64 + 2LL * 128 * 768 * 3072);
  EXPECT_EQ(g.total_weights(), 4LL * 768 * 768 + 2LL * 768 * 3072);
  const Program p = compile(g, load_arch_config(std::string(TESSERA_SOURCE_DIR) + "/configs/tpu-v1.yaml"));
  int ub_tiles = 0;
  for (const auto& in : p.instructions) ub_tiles += in.op == Opcode::kReadWeights && in.weight_source == WeightSource::kUnifiedBuffer;
  EXPECT_EQ(ub_tiles, 2 * 12);  // per head one 64x128 K^T tile and one 128x64 V tile (256x256 array)
  EXPECT_EQ(p.weight_bytes_read, static_cast<uint64_t>(g.total_weights()));
}

// softplus (added through the op registry): 2 element operations per output (exp, then
// log1p), listed under its own name.
TEST(Lowering, SoftplusCostsTwoOperationsPerElement) {
  const graph::Graph g = parse(R"(
name: sp
inputs: [{name: x, shape: [4, 8]}]
layers:
  - {name: sp, op: softplus}
)");
  ASSERT_EQ(g.layers.size(), 1u);
  EXPECT_EQ(g.layers[0].op, graph::OpKind::kSoftplus);
  const Program p = compile(g, TinyArch{}.build());
  int64_t elements = 0;
  for (const auto& in : p.instructions)
    if (in.op == Opcode::kVector && in.layer == 0) {
      elements += in.elements;
      EXPECT_EQ(in.vector_function, "softplus");
    }
  EXPECT_EQ(elements, 2 * 32);
  EXPECT_EQ(p.layers[0].mapping, "vector");
  EXPECT_NE(p.listing().find("vector softplus elements=64 "), std::string::npos) << p.listing();
}

// The element-wise, scan and selection ops of issue 15 in the YAML format: shapes and
// attributes from their keys, hand-derived vector costs, their own listing names.
TEST(Lowering, Issue15VectorOpsShapesAndCosts) {
  const graph::Graph g = parse(R"(
name: ops15
inputs: [{name: x, shape: [4, 8]}, {name: y, shape: [4, 8]}]
layers:
  - {name: lg, op: log, input: x}
  - {name: ge, op: greater_equal, inputs: [x, y]}
  - {name: md, op: mod, input: x, constant: [1]}
  - {name: wh, op: where, inputs: [ge, x, y]}
  - {name: cl, op: clip, input: x, min: -1, max: 1.5}
  - {name: cs, op: cumsum, input: x, axis: 0, reverse: true}
  - {name: tk, op: topk, input: x, k: 2}
  - {name: ti, op: topk, input: x, k: 2, indices: true, largest: false}
  - {name: am, op: argmax, input: x, keepdims: false}
  - {name: tl, op: tile, input: x, repeats: [2, 1]}
  - {name: nt, op: not, input: ge}
outputs: [lg, md, wh, cl, cs, tk, ti, am, tl, nt]
)");
  EXPECT_EQ(out_shape(g, 1), (Shape{4, 8}));
  EXPECT_EQ(g.layers[4].clip_min, -1.0f);
  EXPECT_EQ(g.layers[4].clip_max, 1.5f);
  EXPECT_EQ(g.layers[5].axis, 0);
  EXPECT_TRUE(g.layers[5].reverse);
  EXPECT_EQ(out_shape(g, 6), (Shape{4, 2}));
  EXPECT_TRUE(g.layers[7].indices);
  EXPECT_FALSE(g.layers[7].largest);
  EXPECT_EQ(out_shape(g, 8), (Shape{4}));
  EXPECT_EQ(out_shape(g, 9), (Shape{8, 8}));
  const Program p = compile(g, TinyArch{}.build());
  auto elements = [&](int layer) {
    int64_t e = 0;
    for (const auto& in : p.instructions)
      if (in.op == Opcode::kVector && in.layer == layer) e += in.elements;
    return e;
  };
  EXPECT_EQ(elements(0), 32);      // one function per element
  EXPECT_EQ(elements(1), 32);      // a comparison
  EXPECT_EQ(elements(2), 2 * 32);  // mod: a divide, then a multiply-subtract
  EXPECT_EQ(elements(3), 32);
  EXPECT_EQ(elements(4), 32);
  EXPECT_EQ(elements(5), 32);      // a running sum
  // topk of 2 among 8: two passes over the 8 (fewer than a bitonic sort's 3 * 4 / 2 = 6), per row.
  EXPECT_EQ(elements(6), 4 * 2 * 8);
  EXPECT_EQ(elements(7), 4 * 2 * 8);
  EXPECT_EQ(elements(8), 32);      // every input element once
  EXPECT_EQ(elements(9), 64);      // a copy per output element
  const std::string listing = p.listing();
  for (const char* fn : {"vector log ", "vector greater_equal ", "vector mod ", "vector where ", "vector clip ",
                         "vector cumsum ", "vector topk ", "vector argmax ", "vector tile ", "vector not "}) {
    EXPECT_NE(listing.find(fn), std::string::npos) << fn;
  }
  EXPECT_NE(error_of("name: g\ninputs: [{name: x, shape: [4, 8]}]\nlayers:\n  - {name: t, op: topk, k: 9}\n")
                .find("topk k = 9 must be in [1, 8]"),
            std::string::npos);
  EXPECT_NE(error_of("name: g\ninputs: [{name: x, shape: [4, 8]}]\nlayers:\n  - {name: t, op: tile, repeats: [2]}\n")
                .find("tile needs one repeat count per axis"),
            std::string::npos);
}
