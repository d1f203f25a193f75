// Functional mode end to end: the fast integer path against the PE-level reference,
// SQNR sanity across precisions, JSON, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/config/arch_config.h"
#include "sim/functional/functional.h"
#include "sim/graph/graph.h"
#include "sim/precision/precision.h"
#include "tests/support/tiny_arch.h"

using namespace tessera;
using namespace tessera::functional;
using graph::Graph;

namespace {

Graph parse(const std::string& text) { return graph::parse_graph_yaml(YamlNode::load_string(text, "g.yaml")); }

// Every tensor and weight at one dtype.
void set_all(Graph& g, Dtype t) {
  for (auto& ten : g.tensors) ten.dtype = t;
  for (auto& l : g.layers) l.weight_dtype = t;
}

const char* kFcConv = R"(
name: fc_conv
inputs: [{name: img, shape: [6, 6, 3]}]
layers:
  - {name: conv1, op: conv2d, filters: 5, kernel: 3, padding: same, activation: relu}
  - {name: conv2, op: conv2d, filters: 6, kernel: 3, stride: 2, activation: relu}
  - {name: pool, op: maxpool, kernel: 2}
  - {name: flat, op: flatten}
  - {name: fc1, op: fc, units: 10, activation: tanh}
  - {name: fc2, op: fc, units: 7}
)";

const char* kMlp = R"(
name: mlp
inputs: [{name: x, shape: [64]}]
layers:
  - {name: fc1, op: fc, units: 128, activation: relu}
  - {name: fc2, op: fc, units: 128, activation: relu}
  - {name: fc3, op: fc, units: 10}
)";

const char* kLstmCell = R"(
name: cell
inputs: [{name: x, shape: [32]}, {name: h, shape: [32]}, {name: c, shape: [32]}]
layers:
  - {name: xh, op: concat, inputs: [x, h]}
  - {name: i, op: fc, units: 32, activation: sigmoid}
  - {name: f, op: fc, input: xh, units: 32, activation: sigmoid}
  - {name: g, op: fc, input: xh, units: 32, activation: tanh}
  - {name: o, op: fc, input: xh, units: 32, activation: sigmoid}
  - {name: fc, op: mul, inputs: [f, c]}
  - {name: ig, op: mul, inputs: [i, g]}
  - {name: c_new, op: add, inputs: [fc, ig]}
  - {name: tc, op: tanh}
  - {name: h_new, op: mul, inputs: [o, tc]}
  - {name: res, op: add, inputs: [h_new, x]}
outputs: [res, c_new]
)";

const char* kPools = R"(
name: pools
inputs: [{name: img, shape: [9, 9, 4]}]
layers:
  - {name: conv, op: conv2d, filters: 8, kernel: 3, padding: same, activation: relu}
  - {name: mp, op: maxpool, kernel: 3, stride: 2, padding: 1}
  - {name: ap, op: avgpool, kernel: 3, stride: 1, padding: same}
  - {name: r, op: relu}
  - {name: gap, op: global_avgpool}
  - {name: s, op: sigmoid}
  - {name: out, op: fc, units: 5}
)";

ArchConfig tiny(int rows, int cols, const std::string& dataflow, bool db = true) {
  test_support::TinyArch t;
  t.rows = rows;
  t.cols = cols;
  t.dataflow = dataflow;
  t.double_buffered = db;
  return t.build();
}

ArchConfig tpu(int accumulator_bits = 32) {
  ArchConfig a = load_arch_config(std::string(TESSERA_SOURCE_DIR) + "/configs/tpu-v1.yaml");
  a.accumulators.width_bits = accumulator_bits;
  return a;
}

void expect_identical(const FunctionalResult& a, const FunctionalResult& b, const std::string& what) {
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  for (std::size_t i = 0; i < a.outputs.size(); ++i) {
    EXPECT_EQ(a.outputs[i].codes, b.outputs[i].codes) << what << " output " << a.outputs[i].name;
    EXPECT_EQ(a.outputs[i].values, b.outputs[i].values) << what;
  }
  ASSERT_EQ(a.layers.size(), b.layers.size());
  for (std::size_t i = 0; i < a.layers.size(); ++i) {
    EXPECT_EQ(a.layers[i].sqnr_db, b.layers[i].sqnr_db) << what << " layer " << a.layers[i].name;
    EXPECT_EQ(a.layers[i].max_abs_error, b.layers[i].max_abs_error) << what;
    EXPECT_EQ(a.layers[i].saturated, b.layers[i].saturated) << what;
    EXPECT_EQ(a.layers[i].accumulator_saturated, b.layers[i].accumulator_saturated) << what;
  }
}

}  // namespace

TEST(Functional, PeReferenceBitEqualsFastPathOnSmallArrays) {
  // Full-scale scales (no accumulator headroom), so that 16-bit accumulators and
  // int16 x int16 saturate and the saturation path is compared too; the next test
  // repeats it with the default headroom.
  struct Precision {
    Dtype act, weight;
  };
  const Precision precisions[] = {{Dtype::kInt8, Dtype::kInt8}, {Dtype::kInt16, Dtype::kInt8},
                                  {Dtype::kInt8, Dtype::kInt16}, {Dtype::kInt16, Dtype::kInt16}};
  int saturating = 0, compared = 0, refused = 0;
  for (int dim : {4, 8}) {
    for (const char* df : {"ws", "os", "is"}) {
      for (const Precision& p : precisions) {
        for (int width : {32, 16}) {
          Graph g = parse(kFcConv);
          for (auto& t : g.tensors) t.dtype = p.act;
          for (auto& l : g.layers) l.weight_dtype = p.weight;
          ArchConfig arch = tiny(dim, dim, df, width == 32);
          arch.accumulators.width_bits = width;
          FunctionalOptions fast;
          fast.batch = 2;
          fast.per_channel = p.weight == Dtype::kInt16;
          fast.accumulator_headroom_bits = -1;
          FunctionalOptions pe = fast;
          pe.use_pe_reference = true;
          const std::string what = std::string(df) + " " + std::to_string(dim) + "x" + std::to_string(dim) + " " +
                                   std::string(dtype_name(p.act)) + "x" + std::string(dtype_name(p.weight)) +
                                   " acc" + std::to_string(width);
          const FunctionalResult a = run_functional(g, arch, fast);
          FunctionalResult b;
          try {
            b = run_functional(g, arch, pe);
          } catch (const InputError& e) {
            // int16 x int16 codes near full scale: a tile's partial sum can exceed the
            // reference's 32-bit registers (the fast path's partial sums are exact).
            EXPECT_TRUE(p.act == Dtype::kInt16 && p.weight == Dtype::kInt16) << what << ": " << e.what();
            EXPECT_NE(std::string(e.what()).find("32-bit registers"), std::string::npos) << e.what();
            ++refused;
            continue;
          }
          expect_identical(a, b, what);
          ASSERT_FALSE(a.outputs.at(0).codes.empty());
          for (const auto& l : a.layers) saturating += l.accumulator_saturated > 0 ? 1 : 0;
          ++compared;
        }
      }
    }
  }
  EXPECT_EQ(compared + refused, 48);
  EXPECT_LE(refused, 6);  // with seed 1: the three 8x8 int16 x int16 runs with 32-bit accumulators
  EXPECT_GT(saturating, 0);  // some runs with 16-bit accumulators (and int16 x int16 at 32) do saturate
}

TEST(Functional, PeReferenceBitEqualsFastPathWithAccumulatorHeadroom) {
  // With headroom the raised weight scales keep every partial sum inside the PE's
  // 32-bit registers, so no run is refused, and nothing saturates at 32 bits.
  int compared = 0;
  for (const char* df : {"ws", "os", "is"}) {
    for (Dtype t : {Dtype::kInt8, Dtype::kInt16}) {
      for (int width : {32, 16}) {
        Graph g = parse(kFcConv);
        set_all(g, t);
        ArchConfig arch = tiny(8, 8, df);
        arch.accumulators.width_bits = width;
        FunctionalOptions fast;
        fast.batch = 2;
        FunctionalOptions pe = fast;
        pe.use_pe_reference = true;
        const std::string what = std::string(df) + " " + std::string(dtype_name(t)) + " acc" + std::to_string(width);
        const FunctionalResult a = run_functional(g, arch, fast);
        expect_identical(a, run_functional(g, arch, pe), what);
        if (width == 32)
          for (const auto& l : a.layers) EXPECT_EQ(l.accumulator_saturated, 0) << what << " " << l.name;
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, 12);
}

TEST(Functional, PeReferenceRejectsLargeArrays) {
  const Graph g = parse(kMlp);
  FunctionalOptions o;
  o.use_pe_reference = true;
  try {
    run_functional(g, tpu(), o);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("up to 32x32"), std::string::npos) << e.what();
  }
}

TEST(Functional, Int16GainsAboutSixDbPerBitOverInt8OnAnMlp) {
  // 64-bit accumulators: full-scale int16 x int16 sums exceed 32 bits (next test), and
  // this one measures operand precision alone.
  Graph g8 = parse(kMlp), g16 = parse(kMlp);
  set_all(g16, Dtype::kInt16);
  FunctionalOptions o;
  o.batch = 16;
  const FunctionalResult r8 = run_functional(g8, tpu(64), o);
  const FunctionalResult r16 = run_functional(g16, tpu(64), o);
  // Uniform quantization noise: ~6.02 dB per bit, 8 bits more = ~48 dB.
  EXPECT_GT(r16.output_sqnr_db - r8.output_sqnr_db, 30.0) << r8.output_sqnr_db << " vs " << r16.output_sqnr_db;
  EXPECT_LT(r16.output_sqnr_db - r8.output_sqnr_db, 60.0);
  // A single int8 fc layer of unit-variance inputs: ~40 dB.
  ASSERT_EQ(r8.layers[0].name, "fc1");
  EXPECT_GT(r8.layers[0].sqnr_db, 30.0);
  EXPECT_LT(r8.layers[0].sqnr_db, 50.0);
  EXPECT_GT(r8.output_sqnr_db, 25.0);
  for (const auto& l : r8.layers) {
    EXPECT_EQ(l.accumulator_saturated, 0);
    EXPECT_EQ(l.elements, 16 * (l.name == "fc3" ? 10 : 128));
  }
  for (const auto& l : r16.layers) EXPECT_EQ(l.accumulator_saturated, 0);
  // int8 on TPU v1's own 32-bit accumulators: identical (nothing comes near 2^31).
  const FunctionalResult r8_32 = run_functional(g8, tpu(32), o);
  EXPECT_EQ(r8_32.output_sqnr_db, r8.output_sqnr_db);
}

TEST(Functional, FullScaleInt16TimesInt16OverflowsThirtyTwoBitAccumulators) {
  // Codes near 32767 on both operands give products near 2^30: a few dozen of them pass
  // 2^31. With TPU v1's 32-bit accumulators the int16 MLP saturates and loses its gain.
  Graph g = parse(kMlp);
  set_all(g, Dtype::kInt16);
  FunctionalOptions o;
  o.batch = 16;
  o.accumulator_headroom_bits = -1;  // full-scale scales
  const FunctionalResult r32 = run_functional(g, tpu(32), o);
  const FunctionalResult r64 = run_functional(g, tpu(64), o);
  int64_t saturated = 0;
  for (const auto& l : r32.layers) saturated += l.accumulator_saturated;
  EXPECT_GT(saturated, 0);
  EXPECT_LT(r32.output_sqnr_db, r64.output_sqnr_db - 20.0);
  for (const auto& l : r32.layers) EXPECT_EQ(l.headroom_factor, 1.0);
  // The default: weight scales raised for 2 bits of headroom. Nothing saturates, and
  // the few weight bits given up cost ~6 dB each, far less than saturation did.
  FunctionalOptions h = o;
  h.accumulator_headroom_bits = 2;
  const FunctionalResult rh = run_functional(g, tpu(32), h);
  for (const auto& l : rh.layers) {
    EXPECT_EQ(l.accumulator_saturated, 0) << l.name;
    EXPECT_GT(l.headroom_factor, 1.0) << l.name;
    EXPECT_LT(l.headroom_factor, 64.0) << l.name;
  }
  EXPECT_GT(rh.output_sqnr_db, r32.output_sqnr_db + 30.0);
  EXPECT_GT(rh.output_sqnr_db, r64.output_sqnr_db - 30.0);
  // ... and on 64-bit accumulators the headroom never binds: identical results.
  EXPECT_EQ(run_functional(g, tpu(64), h).output_sqnr_db, r64.output_sqnr_db);
  // int16 activations x int8 weights (products < 2^22) fit 32 bits.
  for (auto& l : g.layers) l.weight_dtype = Dtype::kInt8;
  const FunctionalResult mixed = run_functional(g, tpu(32), o);
  for (const auto& l : mixed.layers) EXPECT_EQ(l.accumulator_saturated, 0) << l.name;
}

TEST(Functional, SixteenBitFloatsLandBetweenInt8AndInt16) {
  Graph g = parse(kMlp);
  FunctionalOptions o;
  o.batch = 8;
  set_all(g, Dtype::kFp16);
  const FunctionalResult fp16 = run_functional(g, tpu(), o);
  set_all(g, Dtype::kBf16);
  const FunctionalResult bf16 = run_functional(g, tpu(), o);
  // fp16 keeps 11 significant bits, bf16 8: ~18 dB apart.
  EXPECT_GT(fp16.output_sqnr_db, 55.0);
  EXPECT_GT(bf16.output_sqnr_db, 38.0);
  EXPECT_GT(fp16.output_sqnr_db - bf16.output_sqnr_db, 12.0);
  EXPECT_EQ(to_json(fp16)["layers"][0]["a_dtype"], "fp16");
}

namespace {
// One fc layer, K = 64 -> 10, batch 32 calibrated on itself (nothing saturates), under a
// named precision policy: the setup of the float-format SQNR tests below.
FunctionalResult fc64_under(const ArchConfig& arch, const char* policy) {
  const char* kFc = R"(
name: fc
inputs: [{name: x, shape: [64]}]
layers:
  - {name: fc1, op: fc, units: 10}
)";
  FunctionalOptions o;
  o.batch = 32;
  o.calibration_batches = 0;
  Graph g = parse(kFc);
  const precision::PrecisionPolicy p = precision::parse_policy(policy);
  precision::apply(g, precision::assign(g, p), p.defaults.activations);
  return run_functional(g, arch, o);
}
}  // namespace

TEST(Functional, Fp8PolicyGivesTheFormatsSqnr) {
  // One fc layer, K = 64 -> 10, under the named fp8 policies. Hand estimate: a value rounded
  // to a float with p significand bits has a relative error uniform in +-2^-p (half a
  // quantum of 2^(1-p) relative to the binade), so noise / signal = 2^-2p / 3 / E[s^2]
  // with the significand s in [1, 2) (E[s^2] ~ 2.16 for Gaussian data): 32.2 dB for E4M3
  // (p = 4), 26.2 dB for E5M2 (p = 3). Each product carries two roundings (-3 dB) and the
  // sum keeps the ratio (independent terms); rounding the output adds one more: noise
  // ratios 2 x 10^-3.22 + 10^-3.22 -> 27.4 dB (E4M3), 21.4 dB (E5M2), 6 dB apart (one bit).
  const FunctionalResult e4m3 = fc64_under(tpu(), "fp8_e4m3");
  const FunctionalResult e5m2 = fc64_under(tpu(), "fp8_e5m2");
  ASSERT_EQ(e4m3.layers.size(), 1u);
  EXPECT_EQ(to_json(e4m3)["layers"][0]["a_dtype"], "fp8_e4m3");
  EXPECT_EQ(to_json(e4m3)["layers"][0]["b_dtype"], "fp8_e4m3");
  EXPECT_EQ(to_json(e5m2)["layers"][0]["out_dtype"], "fp8_e5m2");
  EXPECT_TRUE(std::isfinite(e4m3.output_sqnr_db));
  EXPECT_GT(e4m3.output_sqnr_db, 24.0);
  EXPECT_LT(e4m3.output_sqnr_db, 31.0);
  EXPECT_GT(e5m2.output_sqnr_db, 18.0);
  EXPECT_LT(e5m2.output_sqnr_db, 25.0);
  EXPECT_GT(e4m3.output_sqnr_db - e5m2.output_sqnr_db, 4.0);
  EXPECT_LT(e4m3.output_sqnr_db - e5m2.output_sqnr_db, 8.0);
  EXPECT_EQ(e4m3.layers[0].saturated, 0);
  EXPECT_EQ(e4m3.input_saturated, 0);
  // int4 weights under bf16 activations: 4-bit codes, ~7 levels per side: far below fp8.
  const std::string path = std::string(TESSERA_BINARY_DIR) + "/w4.yaml";
  std::ofstream(path) << "default: {activations: bf16, weights: int4}\n";
  const FunctionalResult r4 = fc64_under(tpu(), path.c_str());
  EXPECT_EQ(to_json(r4)["layers"][0]["b_dtype"], "int4");
  EXPECT_GT(r4.output_sqnr_db, 10.0);
  EXPECT_LT(r4.output_sqnr_db, e4m3.output_sqnr_db);
}

TEST(Functional, VectorOpsOfAnLstmCell) {
  // Calibrated on the evaluated batch: nothing is clipped, so the comparison shows the
  // arithmetic of concat / mul / add / tanh at each precision (with separate calibration
  // data, clipping of the few values beyond the calibrated range dominates int16's error).
  Graph g8 = parse(kLstmCell), g16 = parse(kLstmCell);
  set_all(g16, Dtype::kInt16);
  FunctionalOptions o;
  o.batch = 8;
  o.calibration_batches = 0;
  const FunctionalResult r8 = run_functional(g8, tpu(64), o);
  const FunctionalResult r16 = run_functional(g16, tpu(64), o);
  ASSERT_EQ(r8.layers.size(), 11u);
  for (std::size_t i = 0; i < r8.layers.size(); ++i) {
    EXPECT_GT(r8.layers[i].sqnr_db, 25.0) << r8.layers[i].name;
    EXPECT_GT(r16.layers[i].sqnr_db - r8.layers[i].sqnr_db, 25.0) << r8.layers[i].name;
  }
  EXPECT_EQ(r8.outputs.size(), 2u);
  EXPECT_GT(r16.output_sqnr_db - r8.output_sqnr_db, 30.0);
  EXPECT_EQ(r8.input_saturated, 0);
  // With separate calibration data some evaluated inputs lie beyond the calibrated range.
  o.calibration_batches = 4;
  EXPECT_GT(run_functional(g16, tpu(64), o).input_saturated, 0);
}

TEST(Functional, PoolsAndMixedPrecision) {
  Graph g = parse(kPools);
  FunctionalOptions o;
  o.batch = 2;
  ArchConfig arch = tiny(8, 8, "ws");
  arch.accumulators.width_bits = 48;
  const FunctionalResult r = run_functional(g, arch, o);
  for (const auto& l : r.layers) EXPECT_GT(l.sqnr_db, 25.0) << l.name;
  // Mixed: int16 for the input and the first and last layer, fp16/bf16 for the pools,
  // int8 elsewhere.
  g.tensors[g.inputs[0]].dtype = Dtype::kInt16;
  g.tensors[g.layers[0].output].dtype = Dtype::kInt16;
  g.layers[0].weight_dtype = Dtype::kInt16;
  g.tensors[g.layers[1].output].dtype = Dtype::kFp16;
  g.tensors[g.layers[2].output].dtype = Dtype::kBf16;
  g.layers.back().weight_dtype = Dtype::kInt16;
  g.tensors[g.layers.back().output].dtype = Dtype::kInt16;
  const FunctionalResult m = run_functional(g, arch, o);
  EXPECT_EQ(m.layers[1].out_dtype, Dtype::kFp16);
  EXPECT_EQ(m.layers[2].a_dtype, Dtype::kFp16);
  EXPECT_EQ(m.layers[3].a_dtype, Dtype::kBf16);
  EXPECT_GT(m.layers[0].sqnr_db, r.layers[0].sqnr_db + 20.0);
  for (const auto& l : m.layers) EXPECT_GT(l.sqnr_db, 25.0) << l.name;
}

TEST(Functional, SixteenBitAccumulatorsSaturateAndHurt) {
  Graph g = parse(kMlp);
  ArchConfig arch = tpu();
  FunctionalOptions o;
  o.batch = 4;
  o.accumulator_headroom_bits = -1;  // full-scale scales
  const FunctionalResult wide = run_functional(g, arch, o);
  set_all(g, Dtype::kInt16);
  arch.accumulators.width_bits = 16;
  const FunctionalResult narrow = run_functional(g, arch, o);
  EXPECT_GT(narrow.layers[0].accumulator_saturated, 0);
  EXPECT_GE(narrow.layers[0].saturated, narrow.layers[0].accumulator_saturated);
  EXPECT_LT(narrow.output_sqnr_db, wide.output_sqnr_db);
}

TEST(Functional, DeterministicAndSeeded) {
  const Graph g = parse(kFcConv);
  FunctionalOptions o;
  o.batch = 2;
  const auto a = to_json(run_functional(g, tiny(4, 4, "ws"), o)).dump();
  const auto b = to_json(run_functional(g, tiny(4, 4, "ws"), o)).dump();
  EXPECT_EQ(a, b);
  o.seed = 2;
  EXPECT_NE(to_json(run_functional(g, tiny(4, 4, "ws"), o)).dump(), a);
  // The evaluated samples do not depend on the batch size: sample 0 of batch 1 = sample 0 of batch 2
  // (calibration differs, so compare the fp32 reference values).
  FunctionalOptions one;
  one.batch = 1;
  FunctionalOptions two;
  two.batch = 2;
  const auto r1 = run_functional(g, tiny(4, 4, "ws"), one);
  const auto r2 = run_functional(g, tiny(4, 4, "ws"), two);
  ASSERT_EQ(r1.outputs[0].reference.size() * 2, r2.outputs[0].reference.size());
  for (std::size_t i = 0; i < r1.outputs[0].reference.size(); ++i)
    EXPECT_EQ(r1.outputs[0].reference[i], r2.outputs[0].reference[i]);
}

TEST(Functional, UnsupportedOpsNameTheOpAndLayer) {
  Graph g = parse(kMlp);
  g.layers[1].op = graph::OpKind::kResize;
  try {
    run_functional(g, tpu(), {});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("functional mode does not support op"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(layer fc2)"), std::string::npos) << msg;
  }
  FunctionalOptions bad;
  bad.batch = 0;
  EXPECT_THROW(run_functional(parse(kMlp), tpu(), bad), InputError);
}

TEST(Functional, ReshapeIsAnAliasLikeFlatten) {
  Graph g = parse(kFcConv);
  FunctionalOptions o;
  o.batch = 2;
  const FunctionalResult flat = run_functional(g, tiny(4, 4, "ws"), o);
  g.layers[3].op = graph::OpKind::kReshape;  // flat: [1, 1, 6] -> [6]
  const FunctionalResult reshaped = run_functional(g, tiny(4, 4, "ws"), o);
  EXPECT_EQ(flat.outputs[0].codes, reshaped.outputs[0].codes);
  EXPECT_EQ(flat.layers[3].sqnr_db, reshaped.layers[3].sqnr_db);
}

TEST(Functional, JsonWritesExactAsNull) {
  FunctionalResult r;
  r.output_sqnr_db = std::numeric_limits<double>::infinity();
  LayerError e;
  e.name = "x";
  e.op = "relu";
  e.sqnr_db = std::numeric_limits<double>::infinity();
  r.layers.push_back(e);
  LayerError f = e;
  f.name = "y";
  f.sqnr_db = 41.5;
  r.layers.push_back(f);
  const auto j = to_json(r);
  EXPECT_TRUE(j["output_sqnr_db"].is_null());
  EXPECT_TRUE(j["output_exact"].get<bool>());
  EXPECT_TRUE(j["layers"][0]["sqnr_db"].is_null());
  EXPECT_TRUE(j["layers"][0]["exact"].get<bool>());
  EXPECT_DOUBLE_EQ(j["layers"][1]["sqnr_db"].get<double>(), 41.5);
  EXPECT_FALSE(j["layers"][1]["exact"].get<bool>());
  EXPECT_NE(summary_line(r).find("exact"), std::string::npos);
}

TEST(Functional, CalibrationOnTheEvaluatedBatchAvoidsRequantSaturation) {
  // With the evaluated batch as calibration data, no activation exceeds its range, so only
  // rounding at the very top of a range can clamp; with other calibration data some can.
  const Graph g = parse(kMlp);
  FunctionalOptions o;
  o.batch = 4;
  o.calibration_batches = 0;
  const FunctionalResult r = run_functional(g, tpu(), o);
  EXPECT_EQ(r.input_saturated, 0);
  for (const auto& l : r.layers) EXPECT_LE(l.requant_saturated, 2) << l.name;
}

TEST(Functional, Fp16RunAsBf16RoundsTheOperandsToBf16) {
  // One fc layer, K = 64 -> 10, fp16 policy, on two arrays: one whose fp16 mode is native and
  // one whose fp16 mode converts its operands to bf16 (`runs_as: bf16`, TPU v4's MXUs). Hand
  // estimate (as in Fp8PolicyGivesTheFormatsSqnr): a rounding to p significand bits leaves
  // noise 2^-2p / 3 / E[s^2] of the signal. Native fp16 (p = 11): two operand roundings and
  // the output's: 3 x 10^-7.53 -> 70.8 dB. As bf16 (p = 8) the two operand roundings dominate:
  // 2 x 10^-5.72 + 10^-7.53 -> 54.5 dB, about 16 dB lower.
  auto run = [&](std::optional<Dtype> runs_as) {
    ArchConfig arch = tpu();
    arch.array.mac_modes.push_back(MacMode{Dtype::kFp16, Dtype::kFp16, 1.0, Dtype::kFp32, runs_as});
    return fc64_under(arch, "fp16");
  };
  const double native = run(std::nullopt).output_sqnr_db;
  const double as_bf16 = run(Dtype::kBf16).output_sqnr_db;
  EXPECT_GT(native, 64.0);
  EXPECT_GT(as_bf16, 48.0);
  EXPECT_LT(as_bf16, 60.0);
  EXPECT_GT(native - as_bf16, 11.0);
  EXPECT_LT(native - as_bf16, 21.0);
}

