// Functional mode's transformer and layout ops with hand-computed values, in the fp32
// reference and the quantized path: softmax, layer norm (fused and decomposed), the
// batched activation x activation matmul, element-wise ops with constants and
// broadcasting, reductions, data movement; and a whole tiny attention block.
//
// Hand computations (int8, calibrated on the evaluated batch, so a tensor's scale is
// max|x| / 127): the input [1, 2, 3, 4] has scale 4/127 and codes [32, 64, 95, 127]
// (1 / (4/127) = 31.75 -> 32, 63.5 -> 64 half away from zero, 95.25 -> 95), i.e. the
// dequantized values [1.00787, 2.01575, 2.99213, 4]. A vector op computes its function
// on those in fp32 and quantizes at its output's scale (max|reference| / 127).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/config/arch_config.h"
#include "sim/functional/functional.h"
#include "sim/graph/graph.h"

using namespace tessera;
using namespace tessera::functional;
using graph::Graph;

namespace {

Graph parse(const std::string& text) { return graph::parse_graph_yaml(YamlNode::load_string(text, "g.yaml")); }

void set_all(Graph& g, Dtype t) {
  for (auto& ten : g.tensors) ten.dtype = t;
  for (auto& l : g.layers) l.weight_dtype = t;
}

ArchConfig tpu(int accumulator_bits = 32) {
  ArchConfig a = load_arch_config(std::string(TESSERA_SOURCE_DIR) + "/configs/tpu-v1.yaml");
  a.accumulators.width_bits = accumulator_bits;
  return a;
}

// Batch 1 with the given input values, calibrated on them.
FunctionalOptions given(std::map<std::string, std::vector<float>> inputs) {
  FunctionalOptions o;
  o.calibration_batches = 0;
  o.inputs = std::move(inputs);
  return o;
}

const OutputValues& output(const FunctionalResult& r, const std::string& name) {
  for (const auto& o : r.outputs)
    if (o.name == name) return o;
  throw std::runtime_error("no output " + name);
}

const LayerError& layer(const FunctionalResult& r, const std::string& name) {
  for (const auto& l : r.layers)
    if (l.name == name) return l;
  throw std::runtime_error("no layer " + name);
}

void expect_near(const std::vector<float>& got, const std::vector<double>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << what << " [" << i << "]";
}

const std::vector<float> kOneToFour = {1, 2, 3, 4};

}  // namespace

TEST(FunctionalOps, SoftmaxOfASmallVector) {
  const Graph g = parse(R"(
name: sm
inputs: [{name: x, shape: [4]}]
layers: [{name: sm, op: softmax}]
)");
  const FunctionalResult r = run_functional(g, tpu(), given({{"x", kOneToFour}}));
  const OutputValues& o = output(r, "sm");
  // e^(x - 4) / sum: sum = 1 + e^-1 + e^-2 + e^-3 = 1.552899.
  expect_near(o.reference, {0.0320586, 0.0871443, 0.2368828, 0.6439143}, 1e-6, "fp32");
  // Of the dequantized codes: [0.032319, 0.088547, 0.235077, 0.644057] at scale 0.643914 / 127.
  EXPECT_EQ(o.codes, (std::vector<int64_t>{6, 17, 46, 127}));
  EXPECT_EQ(layer(r, "sm").requant_saturated, 0);
}

TEST(FunctionalOps, SoftmaxAlongAnInnerAxis) {
  // [2, 3] along axis 0: each column normalises on its own.
  const Graph g = parse(R"(
name: sm0
inputs: [{name: x, shape: [2, 3]}]
layers: [{name: sm, op: softmax, axis: 0}]
)");
  const FunctionalResult r = run_functional(g, tpu(), given({{"x", {0, 1, 2, 0, 0, 0}}}));
  const double e1 = 1 / (1 + std::exp(-1.0)), e2 = 1 / (1 + std::exp(-2.0));  // 0.731059, 0.880797
  expect_near(output(r, "sm").reference, {0.5, e1, e2, 0.5, 1 - e1, 1 - e2}, 1e-6, "fp32");
}

TEST(FunctionalOps, LayerNormOfATwoByFourInput) {
  const Graph g = parse(R"(
name: ln
inputs: [{name: x, shape: [2, 4]}]
layers: [{name: ln, op: layer_norm}]
)");
  const FunctionalResult r = run_functional(g, tpu(), given({{"x", {1, 2, 3, 4, -1, 0, 0, 1}}}));
  const OutputValues& o = output(r, "ln");
  // Row 1: mean 2.5, variance 1.25: (x - 2.5) / sqrt(1.25 + 1e-5). Row 2: mean 0, variance 0.5.
  expect_near(o.reference, {-1.3416354, -0.4472118, 0.4472118, 1.3416354, -1.4141994, 0, 0, 1.4141994}, 1e-6, "fp32");
  // Quantized: the codes [32, 64, 95, 127] and [-32, 0, 0, 32] dequantize to rows with
  // mean 2.503937, variance 1.238267 -> [-1.344439, -0.438712, ...] and +-1.4141996;
  // scale 1.4141994 / 127: -120.73 -> -121, -39.40 -> -39, 127.00002 -> 127.
  EXPECT_EQ(o.codes, (std::vector<int64_t>{-121, -39, 39, 121, -127, 0, 0, 127}));
}

TEST(FunctionalOps, DecomposedLayerNormMatchesTheFusedOp) {
  // As PyTorch exports LayerNorm at opset 13: ReduceMean, Sub, Pow 2, ReduceMean, Add eps,
  // Sqrt, Div. The constants' values come with the layer (the ONNX importer fills them).
  Graph g = parse(R"(
name: ln_parts
inputs: [{name: x, shape: [2, 4]}]
layers:
  - {name: fused, op: layer_norm}
  - {name: mean, op: reduce_mean, input: x, axes: [-1]}
  - {name: d, op: sub, inputs: [x, mean]}
  - {name: sq, op: pow, constant: [1]}
  - {name: var, op: reduce_mean, axes: [-1]}
  - {name: ve, op: add, constant: [1]}
  - {name: sd, op: sqrt}
  - {name: n, op: div, inputs: [d, sd]}
outputs: [fused, n]
)");
  g.layers[3].const_values = {2.0f};
  g.layers[5].const_values = {1e-5f};
  const std::vector<float> x = {1, 2, 3, 4, -1, 0, 0, 1};
  const FunctionalResult r = run_functional(g, tpu(), given({{"x", x}}));
  expect_near(output(r, "n").reference, {-1.3416354, -0.4472118, 0.4472118, 1.3416354, -1.4141994, 0, 0, 1.4141994},
              1e-6, "decomposed fp32");
  // Hand values of the pieces: mean [2.5, 0]; squared deviations of row 1 [2.25, 0.25, ...].
  EXPECT_NEAR(layer(r, "mean").ref_rms, std::sqrt(2.5 * 2.5 / 2), 1e-6);
  // Quantized, every piece is rounded to int8 on its own: the decomposed form is worse
  // than the fused op but still close (each step adds ~40 dB-level noise).
  EXPECT_GT(layer(r, "n").sqnr_db, 25.0);
  EXPECT_GT(layer(r, "fused").sqnr_db, layer(r, "n").sqnr_db - 1.0);
  // The pow and sqrt outputs by hand: codes 32, 64, 95, 127 -> deviations from the
  // dequantized mean 2.503937 squared: [2.238204, 0.238329, 0.238329, 2.238204] (row 1).
  const LayerError& sq = layer(r, "sq");
  EXPECT_EQ(sq.out_dtype, Dtype::kInt8);
  EXPECT_EQ(sq.requant_saturated, 0);
}

TEST(FunctionalOps, BatchedMatmulTwoByTwoByTwo) {
  const Graph g = parse(R"(
name: bmm
inputs: [{name: a, shape: [2, 2, 2]}, {name: b, shape: [2, 2, 2]}]
layers: [{name: c, op: matmul, inputs: [a, b]}]
)");
  // Head 0: [[1, 2], [3, 4]] x I; head 1: [[-1, 0], [0, 1]] x [[2, 1], [1, 2]] = [[-2, -1], [1, 2]].
  const FunctionalResult r =
      run_functional(g, tpu(), given({{"a", {1, 2, 3, 4, -1, 0, 0, 1}}, {"b", {1, 0, 0, 1, 2, 1, 1, 2}}}));
  const OutputValues& o = output(r, "c");
  expect_near(o.reference, {1, 2, 3, 4, -2, -1, 1, 2}, 0, "fp32");
  // Codes: a at 4/127 -> [32, 64, 95, 127 | -32, 0, 0, 32]; b at 2/127 -> [64, 0, 0, 64 | 127, 64, 64, 127].
  // Accumulators: [2048, 4096, 6080, 8128 | -4064, -2048, 2048, 4064]; requantized by
  // (4/127)(2/127) / (4/127) = 2/127: 32.25 -> 32, 64.50 -> 65, 95.75 -> 96, 128 -> 127
  // (saturated), -64, -32.25 -> -32, 32, 64.
  EXPECT_EQ(o.codes, (std::vector<int64_t>{32, 65, 96, 127, -64, -32, 32, 64}));
  const LayerError& e = layer(r, "c");
  EXPECT_EQ(e.requant_saturated, 1);
  EXPECT_EQ(e.accumulator_saturated, 0);
  EXPECT_EQ(e.b_dtype, Dtype::kInt8);
  EXPECT_EQ(e.headroom_factor, 1.0);
}

TEST(FunctionalOps, MatmulBroadcastsLeadingAxesAndAppliesTheAbsorbedScale) {
  // b has no head axis: both heads multiply by the same [2, 2]; the importer's absorbed
  // 1/sqrt(d) arrives as output_multiplier and scales the accumulators.
  Graph g = parse(R"(
name: bmm
inputs: [{name: a, shape: [2, 2, 2]}, {name: b, shape: [2, 2]}]
layers: [{name: c, op: matmul, inputs: [a, b]}]
)");
  g.layers[0].output_multiplier = 0.5;
  const FunctionalResult r =
      run_functional(g, tpu(), given({{"a", {1, 2, 3, 4, -1, 0, 0, 1}}, {"b", {2, 1, 1, 2}}}));
  // [[1,2],[3,4]] x [[2,1],[1,2]] = [[4, 5], [10, 11]]; [[-1,0],[0,1]] x ... = [[-2, -1], [1, 2]]; halved.
  expect_near(output(r, "c").reference, {2, 2.5, 5, 5.5, -1, -0.5, 0.5, 1}, 0, "fp32");
  EXPECT_GT(layer(r, "c").sqnr_db, 35.0);
}

TEST(FunctionalOps, ElementwiseOpsWithConstantsByHand) {
  Graph g = parse(R"(
name: ew
inputs: [{name: a, shape: [4]}]
layers:
  - {name: pow2, op: pow, input: a, constant: [1]}
  - {name: rsub, op: sub, input: a, constant: [1]}
  - {name: rdiv, op: div, input: a, constant: [1]}
  - {name: erf, op: erf, input: a}
  - {name: gelu, op: gelu, input: a}
  - {name: sqrt, op: sqrt, input: a}
  - {name: exp, op: exp, input: a}
outputs: [pow2, rsub, rdiv, erf, gelu, sqrt, exp]
)");
  g.layers[0].const_values = {2};
  g.layers[1].const_values = {1};  // 1 - a (the constant first, as BERT's mask)
  g.layers[1].const_first = true;
  g.layers[2].const_values = {2};  // 2 / a
  g.layers[2].const_first = true;
  const FunctionalResult r = run_functional(g, tpu(), given({{"a", kOneToFour}}));
  struct Want {
    const char* name;
    std::vector<double> ref;
    std::vector<int64_t> codes;  // f(dequantized codes) at max|ref| / 127
  };
  const Want want[] = {
      {"pow2", {1, 4, 9, 16}, {8, 32, 71, 127}},
      {"rsub", {0, -1, -2, -3}, {0, -43, -84, -127}},
      {"rdiv", {2, 1, 2.0 / 3, 0.5}, {126, 63, 42, 32}},
      {"erf", {0.8427008, 0.9953223, 0.9999779, 1.0}, {107, 126, 127, 127}},
      {"gelu", {0.8413447, 1.9544997, 2.9959503, 3.9998733}, {27, 63, 95, 127}},
      {"sqrt", {1, 1.4142136, 1.7320508, 2}, {64, 90, 110, 127}},
      {"exp", {2.7182818, 7.3890561, 20.0855369, 54.5981500}, {6, 17, 46, 127}},
  };
  for (const Want& w : want) {
    const OutputValues& o = output(r, w.name);
    expect_near(o.reference, w.ref, 2e-6 * std::abs(w.ref.back()) + 1e-6, w.name);
    EXPECT_EQ(o.codes, w.codes) << w.name;
  }
}

TEST(FunctionalOps, BroadcastingBinaryOps) {
  // [2, 2] with [2] (a row vector) and with [2, 1] (a column).
  const Graph g = parse(R"(
name: bc
inputs: [{name: a, shape: [2, 2]}, {name: row, shape: [2]}, {name: col, shape: [2, 1]}]
layers:
  - {name: sub, op: sub, inputs: [a, row]}
  - {name: div, op: div, inputs: [a, col]}
  - {name: max, op: max, inputs: [a, row]}
  - {name: add, op: add, inputs: [a, col]}
outputs: [sub, div, max, add]
)");
  const FunctionalResult r =
      run_functional(g, tpu(), given({{"a", kOneToFour}, {"row", {0.5f, -1}}, {"col", {2, 4}}}));
  expect_near(output(r, "sub").reference, {0.5, 3, 2.5, 5}, 0, "sub");
  expect_near(output(r, "div").reference, {0.5, 1, 0.75, 1}, 0, "div");
  expect_near(output(r, "max").reference, {1, 2, 3, 4}, 0, "max");
  expect_near(output(r, "add").reference, {3, 4, 7, 8}, 0, "add");
  for (const auto& l : r.layers) EXPECT_GT(l.sqnr_db, 35.0) << l.name;
}

TEST(FunctionalOps, UnknownConstantsAreSeededAndZeroWeightsAreNotUsed) {
  // A constant the workload does not give (a YAML `constant:`, or all-zero stripped ONNX
  // weights of more than one element) is drawn: 1 + 0.1 z for mul, 0.1 z for add.
  Graph g = parse(R"(
name: consts
inputs: [{name: x, shape: [2, 8]}]
layers:
  - {name: gamma, op: mul, constant: [8]}
  - {name: beta, op: add, constant: [8]}
outputs: [gamma, beta]
)");
  g.layers[1].const_values.assign(8, 0.0f);  // stripped: treated as unknown
  FunctionalOptions o;
  const FunctionalResult r = run_functional(g, tpu(), o);
  const OutputValues& out = output(r, "beta");
  // Not the identity: gamma ~ 1 +- 0.35 and beta ~ +-0.35 change every value.
  const FunctionalResult id = run_functional(parse(R"(
name: id
inputs: [{name: x, shape: [2, 8]}]
layers: [{name: r, op: reshape, shape: [2, 8]}]
)"),
                                             tpu(), o);
  int changed = 0;
  for (std::size_t i = 0; i < out.reference.size(); ++i) {
    const double diff = std::abs(out.reference[i] - id.outputs[0].reference[i]);
    EXPECT_LT(diff, 0.35 * 3.5 + 0.35 + 1e-6);
    changed += diff > 0 ? 1 : 0;
  }
  EXPECT_GT(changed, 12);
  // Deterministic, and a scalar zero constant (x * 0) is taken as given.
  EXPECT_EQ(output(run_functional(g, tpu(), o), "beta").reference, out.reference);
  g.layers[0].const_shape = {1};
  g.layers[0].const_values = {0.0f};
  const FunctionalResult zero = run_functional(g, tpu(), o);
  for (float v : output(zero, "gamma").reference) EXPECT_EQ(v, 0.0f);
}

TEST(FunctionalOps, PowNeedsAKnownExponent) {
  const Graph g = parse(R"(
name: p
inputs: [{name: x, shape: [4]}]
layers: [{name: p, op: pow, constant: [1]}]
)");
  try {
    run_functional(g, tpu(), {});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("pow without a known exponent"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(layer p)"), std::string::npos) << msg;
  }
}

TEST(FunctionalOps, ReductionsAreIntegerSumsOfCodes) {
  const Graph g = parse(R"(
name: red
inputs: [{name: x, shape: [2, 4]}]
layers:
  - {name: sum, op: reduce_sum, input: x, axes: [-1]}
  - {name: mean0, op: reduce_mean, input: x, axes: [0], keepdims: false}
  - {name: max, op: reduce_max, input: x, axes: [1]}
outputs: [sum, mean0, max]
)");
  const FunctionalResult r = run_functional(g, tpu(), given({{"x", {1, 2, 3, 4, -1, 0, 0, 1}}}));
  expect_near(output(r, "sum").reference, {10, 0}, 0, "sum");
  expect_near(output(r, "mean0").reference, {0, 1, 1.5, 2.5}, 0, "mean");
  expect_near(output(r, "max").reference, {4, 1}, 0, "max");
  // Codes [32, 64, 95, 127 | -32, 0, 0, 32]: sums 318 and 0 at 4/127 -> 10 at 10/127:
  // 318 x (4/127) / (10/127) = 127.2 -> 127; max codes 127 and 32, already at 4/127.
  EXPECT_EQ(output(r, "sum").codes, (std::vector<int64_t>{127, 0}));
  EXPECT_EQ(output(r, "max").codes, (std::vector<int64_t>{127, 32}));
  // Column means (0 + ...) / 2 at 2.5/127: codes sums [0, 64, 95, 159] x (4/127) / (2 x 2.5/127) = [0, 51.2, 76, 127.2].
  EXPECT_EQ(output(r, "mean0").codes, (std::vector<int64_t>{0, 51, 76, 127}));
}

TEST(FunctionalOps, DataMovementIsExact) {
  // transpose, slice, expand copy codes; their calibrated ranges equal the input's
  // (slice: its own, smaller range: the codes are rescaled).
  const Graph g = parse(R"(
name: mv
inputs: [{name: x, shape: [2, 3]}]
layers:
  - {name: t, op: transpose, input: x, perm: [1, 0]}
  - {name: s, op: slice, input: x, axis: 1, begin: 0, end: 3, step: 2}
  - {name: e, op: expand, input: x, shape: [2, 2, 3]}
outputs: [t, s, e]
)");
  const FunctionalResult r = run_functional(g, tpu(), given({{"x", {1, 2, 3, 4, 5, 6}}}));
  expect_near(output(r, "t").reference, {1, 4, 2, 5, 3, 6}, 0, "transpose");
  expect_near(output(r, "s").reference, {1, 3, 4, 6}, 0, "slice");
  expect_near(output(r, "e").reference, {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}, 0, "expand");
  // x at 6/127: codes [21, 42, 64, 85, 106, 127] (21.17, 42.33, 63.5 -> 64, 84.67, 105.83).
  EXPECT_EQ(output(r, "t").codes, (std::vector<int64_t>{21, 85, 42, 106, 64, 127}));
  EXPECT_EQ(output(r, "s").codes, (std::vector<int64_t>{21, 64, 85, 127}));
  EXPECT_EQ(layer(r, "t").sqnr_db, layer(r, "e").sqnr_db);
}

TEST(FunctionalOps, GraphInputValuesAreChecked) {
  const Graph g = parse(R"(
name: sm
inputs: [{name: x, shape: [4]}]
layers: [{name: sm, op: softmax}]
)");
  EXPECT_THROW(run_functional(g, tpu(), given({{"x", {1, 2}}})), InputError);
  EXPECT_THROW(run_functional(g, tpu(), given({{"y", kOneToFour}})), InputError);
}

namespace {

// One encoder block at 16 tokens, hidden 64, 4 heads: the op mix of BERT's layers
// (importer form: the 1/sqrt(d) scale on the score matmul, the decomposed-free ops).
const char* kAttention = R"(
name: attention
inputs: [{name: x, shape: [16, 64]}]
layers:
  - {name: q, op: fc, input: x, units: 64}
  - {name: k, op: fc, input: x, units: 64}
  - {name: v, op: fc, input: x, units: 64}
  - {name: qh, op: reshape, input: q, shape: [16, 4, 16]}
  - {name: qt, op: transpose, perm: [1, 0, 2]}
  - {name: kh, op: reshape, input: k, shape: [16, 4, 16]}
  - {name: kt, op: transpose, perm: [1, 2, 0]}
  - {name: vh, op: reshape, input: v, shape: [16, 4, 16]}
  - {name: vt, op: transpose, perm: [1, 0, 2]}
  - {name: scores, op: matmul, inputs: [qt, kt]}
  - {name: probs, op: softmax, axis: -1}
  - {name: context, op: matmul, inputs: [probs, vt]}
  - {name: ctx_t, op: transpose, perm: [1, 0, 2]}
  - {name: ctx, op: reshape, shape: [16, 64]}
  - {name: out, op: fc, units: 64}
  - {name: res, op: add, inputs: [out, x]}
  - {name: ln1, op: layer_norm}
  - {name: ffn_in, op: fc, units: 256}
  - {name: gelu, op: gelu}
  - {name: ffn_out, op: fc, units: 64}
  - {name: res2, op: add, inputs: [ffn_out, ln1]}
  - {name: ln2, op: layer_norm}
)";

}  // namespace

TEST(FunctionalOps, TinyAttentionBlockSqnr) {
  Graph g8 = parse(kAttention);
  g8.layers[9].output_multiplier = 0.25;  // 1 / sqrt(16)
  Graph g16 = g8;
  set_all(g16, Dtype::kInt16);
  FunctionalOptions o;
  o.batch = 2;
  const FunctionalResult r8 = run_functional(g8, tpu(), o);
  const FunctionalResult r16 = run_functional(g16, tpu(), o);
  ASSERT_TRUE(std::isfinite(r8.output_sqnr_db));
  ASSERT_TRUE(std::isfinite(r16.output_sqnr_db));
  EXPECT_GT(r8.output_sqnr_db, 20.0);
  EXPECT_LT(r8.output_sqnr_db, 45.0);
  // int16 with accumulator headroom on TPU v1's 32-bit accumulators: well above int8.
  EXPECT_GT(r16.output_sqnr_db, r8.output_sqnr_db + 15.0);
  for (const auto& l : r8.layers) EXPECT_EQ(l.accumulator_saturated, 0) << l.name;
  for (const auto& l : r16.layers) EXPECT_EQ(l.accumulator_saturated, 0) << l.name;
  EXPECT_EQ(layer(r8, "scores").op, "matmul");
  EXPECT_GT(layer(r16, "scores").headroom_factor, 1.0);  // int16 x int16 scores needed headroom
  // Deterministic.
  EXPECT_EQ(to_json(run_functional(g8, tpu(), o)).dump(), to_json(r8).dump());
}
