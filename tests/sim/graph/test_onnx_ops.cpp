// Single-op ONNX models through the importer and functional mode's fp32 reference:
// what each element-wise op computes on hand-picked values (x = [1, 2, -3, 0.5]).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sim/common/error.h"
#include "sim/config/arch_config.h"
#include "sim/functional/functional.h"
#include "sim/graph/onnx_importer.h"

using namespace tessera;
using namespace tessera::graph;
namespace fs = std::filesystem;

namespace {

// x [1, 4] (batch 1) -> op -> y, saved under the test's temp dir.
fs::path one_node_model(const std::string& op, const std::string& file) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("one_" + op);
  for (const char* io : {"x", "y"}) {
    auto* v = std::string(io) == "x" ? g->add_input() : g->add_output();
    v->set_name(io);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto_DataType_FLOAT);
    t->mutable_shape()->add_dim()->set_dim_value(1);  // the batch
    t->mutable_shape()->add_dim()->set_dim_value(4);
  }
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(op);
  n->add_input("x");
  n->add_output("y");
  const fs::path p = fs::path(testing::TempDir()) / file;
  std::ofstream f(p, std::ios::binary);
  m.SerializeToOstream(&f);
  return p;
}

// The fp32 reference of y for x = [1, 2, -3, 0.5].
std::vector<float> reference_of(const Graph& g) {
  functional::FunctionalOptions o;
  o.calibration_batches = 0;
  o.inputs["x"] = {1.0f, 2.0f, -3.0f, 0.5f};
  const ArchConfig arch = load_arch_config(std::string(TESSERA_SOURCE_DIR) + "/configs/tpu-v1.yaml");
  const functional::FunctionalResult r = functional::run_functional(g, arch, o);
  return r.outputs.at(0).reference;
}

}  // namespace

// D1: Neg is x * -1 and Reciprocal 1 / x; the constant travels with the layer (it was
// lost, and functional mode filled a seeded scale near one instead: Neg gave x * 1.085).
TEST(OnnxOps, NegMultipliesByMinusOne) {
  const Graph g = load_onnx(one_node_model("Neg", "neg.onnx"), {});
  ASSERT_EQ(g.layers.size(), 1u);
  const Layer& l = g.layers[0];
  EXPECT_EQ(l.op, OpKind::kMul);
  EXPECT_TRUE(l.has_const);
  EXPECT_EQ(l.const_values, std::vector<float>{-1.0f});
  EXPECT_FALSE(l.const_first);
  EXPECT_EQ(reference_of(g), (std::vector<float>{-1.0f, -2.0f, 3.0f, -0.5f}));
}

TEST(OnnxOps, ReciprocalDividesOneByX) {
  const Graph g = load_onnx(one_node_model("Reciprocal", "reciprocal.onnx"), {});
  ASSERT_EQ(g.layers.size(), 1u);
  const Layer& l = g.layers[0];
  EXPECT_EQ(l.op, OpKind::kDiv);
  EXPECT_EQ(l.const_values, std::vector<float>{1.0f});
  EXPECT_TRUE(l.const_first);
  EXPECT_EQ(reference_of(g), (std::vector<float>{1.0f, 0.5f, 1.0f / -3.0f, 2.0f}));
}

// D3: the unsupported-node message lists exactly the ops with a handler (it was
// hand-written and left out six of them).
TEST(OnnxOps, UnsupportedMessageListsEveryHandledOp) {
  std::string e;
  try {
    load_onnx(one_node_model("Det", "det.onnx"), {});
  } catch (const InputError& err) {
    e = err.what();
  }
  const std::vector<std::string> ops = onnx_supported_ops();
  std::string list;
  for (const auto& op : ops) list += (list.empty() ? "" : ", ") + op;
  EXPECT_NE(e.find("1 node(s) cannot be imported: 'Det' (Det). Supported ops: " + list +
                   ", and constant folding of shape computations"),
            std::string::npos)
      << e;
  for (const char* op : {"Cast", "CastLike", "DequantizeLinear", "FastGelu", "Identity", "QuantizeLinear", "Neg",
                         "Reciprocal", "Add", "Where"}) {
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
  }
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
}

// Softplus (added through the op registry): ONNX Softplus -> IR softplus, whose fp32
// reference is log(1 + e^x): [1.3132617, 2.1269280, 0.0485873, 0.9740770] (by hand, in double).
TEST(OnnxOps, SoftplusIsLogOnePlusExp) {
  const Graph g = load_onnx(one_node_model("Softplus", "softplus.onnx"), {});
  ASSERT_EQ(g.layers.size(), 1u);
  EXPECT_EQ(g.layers[0].op, OpKind::kSoftplus);
  EXPECT_EQ(op_name(g.layers[0].op), "softplus");
  EXPECT_EQ(g.tensors[g.layers[0].output].shape, (Shape{4}));
  const std::vector<float> y = reference_of(g);
  const std::vector<double> want = {1.3132616875182228, 2.1269280110429727, 0.04858735157374206, 0.9740769841801067};
  ASSERT_EQ(y.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-6) << i;
}

// Softsign (added through the recipe of issue 32: its OpKind line, its OpDef row with the
// fp32 kernel, its ONNX table row): x / (1 + |x|) = [1/2, 2/3, -3/4, 1/3] for x = [1, 2, -3, 0.5].
TEST(OnnxOps, SoftsignIsXOverOnePlusAbsX) {
  const Graph g = load_onnx(one_node_model("Softsign", "softsign.onnx"), {});
  ASSERT_EQ(g.layers.size(), 1u);
  EXPECT_EQ(g.layers[0].op, OpKind::kSoftsign);
  EXPECT_EQ(op_name(g.layers[0].op), "softsign");
  EXPECT_EQ(g.tensors[g.layers[0].output].shape, (Shape{4}));
  const std::vector<float> y = reference_of(g);
  const std::vector<double> want = {0.5, 2.0 / 3.0, -0.75, 1.0 / 3.0};
  ASSERT_EQ(y.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-7) << i;
}

// ---------------------------------------------------------------- issue 15: the ops real exports use

#include "tests/support/onnx_model.h"

namespace {

using test_support::attr;
using test_support::Model;

// Functional mode's fp32 reference of output `out` with the given inputs (batch 1).
std::vector<float> reference(const Graph& g, const std::map<std::string, std::vector<float>>& inputs, size_t out = 0) {
  functional::FunctionalOptions o;
  o.calibration_batches = 0;
  for (const auto& [name, v] : inputs) o.inputs[name] = v;
  const ArchConfig arch = load_arch_config(std::string(TESSERA_SOURCE_DIR) + "/configs/tpu-v1.yaml");
  return functional::run_functional(g, arch, o).outputs.at(out).reference;
}

const Layer* layer_named(const Graph& g, const std::string& name) {
  for (const Layer& l : g.layers)
    if (l.name == name) return &l;
  return nullptr;
}

// x [1, 4] -> op(x [, y | constant c]) -> z; y [1, 4] a second input when `second`.
Model binary_model(const std::string& op, bool second, float c = 0) {
  Model m;
  m.input("x", {int64_t{1}, int64_t{4}});
  if (second) m.input("y", {int64_t{1}, int64_t{4}});
  else m.floats("c", {c});
  m.node(op, {"x", second ? "y" : "c"}, {"z"}, op);
  m.output("z");
  return m;
}

const std::vector<float> kX = {1.0f, 2.0f, -3.0f, 0.5f};

}  // namespace

// Unary functions: one layer of the same name, the fp32 reference by hand.
TEST(OnnxOps, UnaryFunctionsAndRounding) {
  struct Case {
    std::string onnx, ir;
    std::vector<float> x, want;
  };
  const std::vector<Case> cases = {
      {"Log", "log", {1.0f, 2.0f, 4.0f, 0.5f}, {0.0f, 0.69314718f, 1.38629436f, -0.69314718f}},
      {"Abs", "abs", kX, {1.0f, 2.0f, 3.0f, 0.5f}},
      {"Sign", "sign", {1.0f, 0.0f, -3.0f, 0.5f}, {1.0f, 0.0f, -1.0f, 1.0f}},
      {"Floor", "floor", {1.5f, 2.0f, -3.5f, 0.5f}, {1.0f, 2.0f, -4.0f, 0.0f}},
      {"Ceil", "ceil", {1.5f, 2.0f, -3.5f, 0.5f}, {2.0f, 2.0f, -3.0f, 1.0f}},
      {"Round", "round", {0.5f, 1.5f, -2.5f, 2.4f}, {0.0f, 2.0f, -2.0f, 2.0f}},  // halves to even
      {"Not", "not", {0.0f, 1.0f, -3.0f, 0.0f}, {1.0f, 0.0f, 0.0f, 1.0f}},
  };
  for (const auto& c : cases) {
    const Graph g = load_onnx(one_node_model(c.onnx, c.onnx + ".onnx"), {});
    ASSERT_EQ(g.layers.size(), 1u) << c.onnx;
    EXPECT_EQ(op_name(g.layers[0].op), c.ir);
    const std::vector<float> y = reference(g, {{"x", c.x}});
    ASSERT_EQ(y.size(), 4u);
    for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(y[i], c.want[i], 1e-6) << c.onnx << " " << i;
  }
}

// Comparisons and logic give 1 or 0; Mod takes the divisor's sign, fmod the dividend's.
TEST(OnnxOps, ComparisonsLogicAndMod) {
  struct Case {
    std::string onnx, ir;
    float c;
    std::vector<float> want;
  };
  // x = [1, 2, -3, 0.5] against a scalar constant.
  const std::vector<Case> with_const = {
      {"Greater", "greater", 1.0f, {0, 1, 0, 0}},      {"GreaterOrEqual", "greater_equal", 1.0f, {1, 1, 0, 0}},
      {"Less", "less", 1.0f, {0, 0, 1, 1}},            {"LessOrEqual", "less_equal", 1.0f, {1, 0, 1, 1}},
      {"Equal", "equal", 2.0f, {0, 1, 0, 0}},          {"And", "and", 1.0f, {1, 1, 1, 1}},
      {"Or", "or", 0.0f, {1, 1, 1, 1}},
  };
  for (const auto& c : with_const) {
    const Graph g = load_onnx(binary_model(c.onnx, false, c.c).save(c.onnx + "_c.onnx"), {});
    ASSERT_EQ(g.layers.size(), 1u) << c.onnx;
    EXPECT_EQ(op_name(g.layers[0].op), c.ir);
    EXPECT_TRUE(g.layers[0].has_const);
    EXPECT_EQ(g.layers[0].const_values, std::vector<float>{c.c});
    EXPECT_EQ(reference(g, {{"x", kX}}), c.want) << c.onnx;
  }
  // Two activations.
  const std::vector<float> a = {0, 1, 1, 0}, b = {0, 0, 1, 1};
  EXPECT_EQ(reference(load_onnx(binary_model("And", true).save("and.onnx"), {}), {{"x", a}, {"y", b}}),
            (std::vector<float>{0, 0, 1, 0}));
  EXPECT_EQ(reference(load_onnx(binary_model("Or", true).save("or.onnx"), {}), {{"x", a}, {"y", b}}),
            (std::vector<float>{0, 1, 1, 1}));
  const std::vector<float> num = {5, -5, 7, -7}, den = {3, 3, -3, -3};
  const Graph mod = load_onnx(binary_model("Mod", true).save("mod.onnx"), {});
  EXPECT_EQ(op_name(mod.layers[0].op), "mod");
  EXPECT_EQ(reference(mod, {{"x", num}, {"y", den}}), (std::vector<float>{2, 1, -2, -1}));
  Model fm = binary_model("Mod", true);
  attr(fm.g->mutable_node(0), "fmod", int64_t{1});
  const Graph fmod = load_onnx(fm.save("fmod.onnx"), {});
  EXPECT_EQ(op_name(fmod.layers[0].op), "fmod");
  EXPECT_EQ(reference(fmod, {{"x", num}, {"y", den}}), (std::vector<float>{2, -2, 1, -1}));
}

// Exp, Max/Min of two activations and Expand, against hand-computed values
// (x = [1, 2, -3, 0.5], y = [0, 3, -4, 1]).
TEST(OnnxOps, ExpMaxMinAndExpand) {
  const Graph e = load_onnx(one_node_model("Exp", "exp.onnx"), {});
  ASSERT_EQ(e.layers.size(), 1u);
  EXPECT_EQ(e.layers[0].op, OpKind::kExp);
  EXPECT_EQ(e.tensors[static_cast<size_t>(e.layers[0].output)].shape, (Shape{4}));
  const std::vector<float> ey = reference(e, {{"x", kX}});
  const std::vector<float> ew = {2.7182818f, 7.3890561f, 0.0497871f, 1.6487213f};
  ASSERT_EQ(ey.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(ey[i], ew[i], 1e-5) << i;

  const std::vector<float> y = {0, 3, -4, 1};
  const Graph mx = load_onnx(binary_model("Max", true).save("max2.onnx"), {});
  const Graph mn = load_onnx(binary_model("Min", true).save("min2.onnx"), {});
  EXPECT_EQ(mx.layers.at(0).op, OpKind::kMax);
  EXPECT_EQ(mn.layers.at(0).op, OpKind::kMin);
  EXPECT_EQ(reference(mx, {{"x", kX}, {"y", y}}), (std::vector<float>{1, 3, -3, 1}));
  EXPECT_EQ(reference(mn, {{"x", kX}, {"y", y}}), (std::vector<float>{0, 2, -4, 0.5f}));

  // x [1, 1, 4] expanded to [1, 3, 4]: per sample [1, 4] -> [3, 4], the row three times.
  Model m;
  m.input("x", {int64_t{1}, int64_t{1}, int64_t{4}});
  m.ints("shape", {1, 3, 4});
  m.node("Expand", {"x", "shape"}, {"z"}, "expand");
  m.output("z");
  OnnxImportInfo info;
  const Graph g = load_onnx(m.save("expand.onnx"), {}, &info);
  ASSERT_EQ(g.layers.size(), 1u);
  EXPECT_EQ(g.layers[0].op, OpKind::kExpand);
  EXPECT_EQ(g.tensors[static_cast<size_t>(g.layers[0].output)].shape, (Shape{3, 4}));
  EXPECT_EQ(info.value_shapes.at("z"), (std::vector<int64_t>{1, 3, 4}));
  EXPECT_EQ(reference(g, {{"x", kX}}), (std::vector<float>{1, 2, -3, 0.5f, 1, 2, -3, 0.5f, 1, 2, -3, 0.5f}));
}

// Where with a constant in either value position: the constant knows which operand it is.
TEST(OnnxOps, WhereSelectsWithAConstantInEitherPosition) {
  for (int pos : {1, 2}) {
    Model m;
    m.input("cond", {int64_t{1}, int64_t{4}});
    m.input("x", {int64_t{1}, int64_t{4}});
    m.floats("c", {9.0f});
    m.node("Where", {"cond", pos == 1 ? "c" : "x", pos == 1 ? "x" : "c"}, {"z"}, "where");
    m.output("z");
    const Graph g = load_onnx(m.save("where" + std::to_string(pos) + ".onnx"), {});
    ASSERT_EQ(g.layers.size(), 1u);
    EXPECT_EQ(g.layers[0].op, OpKind::kWhere);
    EXPECT_EQ(g.layers[0].const_index, pos);
    const std::vector<float> y = reference(g, {{"cond", {1, 0, 0, 1}}, {"x", kX}});
    EXPECT_EQ(y, pos == 1 ? (std::vector<float>{9, 2, -3, 9}) : (std::vector<float>{1, 9, 9, 0.5f})) << pos;
  }
}

// Clip with constant bounds keeps them; with a bound computed at run time (the
// log-mel spectrogram's max - 80 dB) it is max, then min. The max comes from a reduction
// over every axis: one value per sample, broadcast against the tensor.
TEST(OnnxOps, ClipWithConstantAndRuntimeBounds) {
  {
    Model m;
    m.input("x", {int64_t{1}, int64_t{4}});
    m.floats("lo", {-1.0f});
    m.floats("hi", {1.5f});
    m.node("Clip", {"x", "lo", "hi"}, {"z"}, "clip");
    m.output("z");
    const Graph g = load_onnx(m.save("clip_const.onnx"), {});
    ASSERT_EQ(g.layers.size(), 1u);
    EXPECT_EQ(g.layers[0].op, OpKind::kClip);
    EXPECT_EQ(g.layers[0].clip_min, -1.0f);
    EXPECT_EQ(g.layers[0].clip_max, 1.5f);
    EXPECT_EQ(reference(g, {{"x", kX}}), (std::vector<float>{1, 1.5f, -1, 0.5f}));
  }
  Model m;
  m.input("x", {int64_t{1}, int64_t{4}});
  m.floats("db", {2.5f});
  m.floats("hi", {1.75f});
  attr(m.node("ReduceMax", {"x"}, {"mx"}, "max_all"), "keepdims", int64_t{0});
  m.node("Sub", {"mx", "db"}, {"lo"}, "floor");
  m.node("Clip", {"x", "lo", "hi"}, {"z"}, "clip");
  m.output("z");
  OnnxImportInfo info;
  const Graph g = load_onnx(m.save("clip_runtime.onnx"), {}, &info);
  EXPECT_EQ(info.value_shapes.at("mx"), std::vector<int64_t>{});  // a scalar, as ONNX says
  std::vector<std::string> ops;
  for (const Layer& l : g.layers) ops.emplace_back(op_name(l.op));
  EXPECT_EQ(ops, (std::vector<std::string>{"reduce_max", "sub", "max", "min"}));
  EXPECT_EQ(g.tensors[g.layers[0].output].shape, (Shape{1}));
  EXPECT_TRUE(g.layers[0].axes.empty());  // every axis
  ASSERT_NE(layer_named(g, "clip/max"), nullptr);
  ASSERT_NE(layer_named(g, "clip/min"), nullptr);
  // max(x) = 2, so the floor is -0.5; the ceiling 1.75.
  EXPECT_EQ(reference(g, {{"x", kX}}), (std::vector<float>{1, 1.75f, -0.5f, 0.5f}));
}

// A reduction over every axis (no axes): at batch 1 each sample's own; a larger batch
// would mix samples and is refused.
TEST(OnnxOps, ReductionOverEveryAxis) {
  for (int64_t keep : {0, 1}) {
    Model m;
    m.input("x", {int64_t{1}, int64_t{2}, int64_t{3}});
    attr(m.node("ReduceSum", {"x"}, {"s"}, "sum"), "keepdims", keep);
    m.node("Relu", {"s"}, {"z"}, "relu");
    m.output("z");
    OnnxImportInfo info;
    const Graph g = load_onnx(m.save("sum_all" + std::to_string(keep) + ".onnx"), {}, &info);
    EXPECT_EQ(info.value_shapes.at("s"), keep ? (std::vector<int64_t>{1, 1, 1}) : std::vector<int64_t>{});
    ASSERT_EQ(g.layers.size(), 2u);
    EXPECT_EQ(g.layers[0].op, OpKind::kReduceSum);
    EXPECT_EQ(g.tensors[g.layers[0].output].shape, keep ? (Shape{1, 1}) : (Shape{1}));
    EXPECT_EQ(reference(g, {{"x", {1, 2, 3, 4, 5, -6}}}), std::vector<float>{9});
    OnnxOptions b2;
    b2.input_shapes["x"] = {2, 2, 3};
    const std::string e = test_support::error_of(m.save("sum_all_b2.onnx"), b2);
    EXPECT_NE(e.find("'sum' (ReduceSum: reduces over every axis, the batch included, at batch 2"), std::string::npos) << e;
  }
}

// CumSum, TopK, ArgMax/ArgMin, Tile on x = [1, 2, -3, 0.5].
TEST(OnnxOps, ScanSelectionAndTile) {
  auto cumsum = [](int64_t exclusive, int64_t reverse) {
    Model m;
    m.input("x", {int64_t{1}, int64_t{4}});
    m.ints("axis", {1}, true);
    auto* n = m.node("CumSum", {"x", "axis"}, {"z"}, "cumsum");
    attr(n, "exclusive", exclusive);
    attr(n, "reverse", reverse);
    m.output("z");
    return load_onnx(m.save("cumsum" + std::to_string(exclusive) + std::to_string(reverse) + ".onnx"), {});
  };
  const Graph c = cumsum(0, 0);
  ASSERT_EQ(c.layers.size(), 1u);
  EXPECT_EQ(c.layers[0].op, OpKind::kCumSum);
  EXPECT_EQ(c.layers[0].axis, 0);  // the batch axis is not in the IR
  EXPECT_EQ(reference(c, {{"x", kX}}), (std::vector<float>{1, 3, 0, 0.5f}));
  EXPECT_EQ(reference(cumsum(1, 0), {{"x", kX}}), (std::vector<float>{0, 1, 3, 0}));
  EXPECT_EQ(reference(cumsum(0, 1), {{"x", kX}}), (std::vector<float>{0.5f, -0.5f, -2.5f, 0.5f}));

  for (int64_t largest : {1, 0}) {
    Model m;
    m.input("x", {int64_t{1}, int64_t{4}});
    m.ints("k", {2});
    attr(m.node("TopK", {"x", "k"}, {"v", "i"}, "topk"), "largest", largest);
    m.output("v");
    m.output("i");
    const Graph g = load_onnx(m.save("topk" + std::to_string(largest) + ".onnx"), {});
    ASSERT_EQ(g.layers.size(), 2u);
    EXPECT_EQ(g.layers[0].op, OpKind::kTopK);
    EXPECT_EQ(g.layers[0].k, 2);
    EXPECT_FALSE(g.layers[0].indices);
    EXPECT_TRUE(g.layers[1].indices);
    EXPECT_EQ(g.layers[1].name, "topk/indices");
    EXPECT_EQ(g.tensors[g.layers[0].output].shape, (Shape{2}));
    EXPECT_EQ(reference(g, {{"x", kX}}, 0), largest ? (std::vector<float>{2, 1}) : (std::vector<float>{-3, 0.5f}));
    EXPECT_EQ(reference(g, {{"x", kX}}, 1), largest ? (std::vector<float>{1, 0}) : (std::vector<float>{2, 3}));
  }

  for (const std::string op : {"ArgMax", "ArgMin"}) {
    Model m;
    m.input("x", {int64_t{1}, int64_t{4}});
    auto* n = m.node(op, {"x"}, {"z"}, op);
    attr(n, "axis", int64_t{1});
    attr(n, "keepdims", int64_t{0});
    m.output("z");
    OnnxImportInfo info;
    const Graph g = load_onnx(m.save(op + ".onnx"), {}, &info);
    EXPECT_EQ(info.value_shapes.at("z"), std::vector<int64_t>{1});
    EXPECT_EQ(reference(g, {{"x", kX}}), std::vector<float>{op == "ArgMax" ? 1.0f : 2.0f});
  }

  Model t;
  t.input("x", {int64_t{1}, int64_t{2}, int64_t{2}});
  t.ints("r", {1, 2, 1});
  t.node("Tile", {"x", "r"}, {"z"}, "tile");
  t.output("z");
  const Graph g = load_onnx(t.save("tile.onnx"), {});
  ASSERT_EQ(g.layers.size(), 1u);
  EXPECT_EQ(g.layers[0].op, OpKind::kTile);
  EXPECT_EQ(g.layers[0].repeats, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(g.tensors[g.layers[0].output].shape, (Shape{4, 2}));
  EXPECT_EQ(reference(g, {{"x", kX}}), (std::vector<float>{1, 2, -3, 0.5f, 1, 2, -3, 0.5f}));
  t.g->mutable_initializer(0)->set_int64_data(0, 2);
  const std::string e = test_support::error_of(t.save("tile_batch.onnx"));
  EXPECT_NE(e.find("'tile' (Tile: Tile repeats the batch dimension)"), std::string::npos) << e;
}

// Two-operand Einsum lowers to matrix layers: hand-derived MACs and shapes.
TEST(OnnxOps, EinsumLowersToMatrixLayers) {
  struct Case {
    std::string eq;
    std::vector<int64_t> a, b;
    bool b_weight;
    std::vector<std::string> ops;
    int64_t macs;
    std::vector<int64_t> out;
  };
  const std::vector<Case> cases = {
      {"bij,bjk->bik", {1, 3, 4}, {1, 4, 5}, false, {"matmul"}, 3 * 4 * 5, {1, 3, 5}},
      {"bhqd,bhkd->bhqk", {1, 2, 3, 4}, {1, 2, 5, 4}, false, {"transpose", "matmul"}, 2 * 3 * 4 * 5, {1, 2, 3, 5}},
      {"bhqk,bhkd->bhqd", {1, 2, 3, 5}, {1, 2, 5, 4}, false, {"matmul"}, 2 * 3 * 5 * 4, {1, 2, 3, 4}},
      {"bid,jd->bij", {1, 3, 4}, {6, 4}, true, {"fc"}, 3 * 4 * 6, {1, 3, 6}},
      {"ij,jk->ik", {1, 4}, {4, 6}, true, {"fc"}, 4 * 6, {1, 6}},
      {"ij,jk", {1, 4}, {4, 6}, true, {"fc"}, 4 * 6, {1, 6}},  // implicit output: ik
      {"jk,ij->ik", {1, 4}, {4, 6}, true, {"fc"}, 4 * 6, {1, 6}},  // the weight first
      {"bij,bjk->bki", {1, 3, 4}, {1, 4, 5}, false, {"matmul", "transpose"}, 3 * 4 * 5, {1, 5, 3}},
      {"bijk,bjkl->bil", {1, 2, 3, 4}, {1, 3, 4, 5}, false, {"reshape", "reshape", "matmul"}, 2 * 12 * 5, {1, 2, 5}},
      {"...ij,...jk->...ik", {1, 2, 3, 4}, {1, 2, 4, 5}, false, {"matmul"}, 2 * 3 * 4 * 5, {1, 2, 3, 5}},
  };
  for (const auto& c : cases) {
    Model m;
    m.input("a", std::vector<test_support::Dim>(c.a.begin(), c.a.end()));
    if (c.b_weight) m.weight("b", c.b);
    else m.input("b", std::vector<test_support::Dim>(c.b.begin(), c.b.end()));
    attr(m.node("Einsum", {"a", "b"}, {"z"}, "einsum"), "equation", c.eq);
    m.output("z");
    if (c.eq == "jk,ij->ik") m.g->mutable_node(0)->set_input(0, "b"), m.g->mutable_node(0)->set_input(1, "a");
    OnnxImportInfo info;
    Graph g;
    try {
      g = load_onnx(m.save("einsum.onnx"), {}, &info);
    } catch (const InputError& e) {
      ADD_FAILURE() << c.eq << ": " << e.what();
      continue;
    }
    std::vector<std::string> ops;
    for (const Layer& l : g.layers) ops.emplace_back(op_name(l.op));
    EXPECT_EQ(ops, c.ops) << c.eq;
    EXPECT_EQ(g.total_macs_per_sample(), c.macs) << c.eq;
    EXPECT_EQ(info.value_shapes.at("z"), c.out) << c.eq;
  }
  // The product itself: 'bij,bjk->bki' of [1,2,3; 4,5,6] and [1,0; 0,1; 1,1] is [[4, 10], [5, 11]] transposed.
  Model m;
  m.input("a", {int64_t{1}, int64_t{2}, int64_t{3}});
  m.input("b", {int64_t{1}, int64_t{3}, int64_t{2}});
  attr(m.node("Einsum", {"a", "b"}, {"z"}, "einsum"), "equation", std::string("bij,bjk->bki"));
  m.output("z");
  EXPECT_EQ(reference(load_onnx(m.save("einsum_values.onnx"), {}), {{"a", {1, 2, 3, 4, 5, 6}}, {"b", {1, 0, 0, 1, 1, 1}}}),
            (std::vector<float>{4, 10, 5, 11}));
  // Other forms are an error that lists the equation.
  for (const std::string eq : {"bii,bij->bj", "bij,bjk->bk"}) {
    Model u;
    u.input("a", {int64_t{1}, int64_t{3}, int64_t{3}});
    u.input("b", {int64_t{1}, int64_t{3}, int64_t{3}});
    attr(u.node("Einsum", {"a", "b"}, {"z"}, "mix"), "equation", eq);
    u.output("z");
    const std::string e = test_support::error_of(u.save("einsum_bad.onnx"));
    EXPECT_NE(e.find("'mix' (Einsum: equation '" + eq + "': "), std::string::npos) << e;
    EXPECT_NE(e.find("(supported: two operands"), std::string::npos) << e;
  }
}

// A Range whose bounds come from the activations has a data-dependent shape.
TEST(OnnxOps, RangeOfActivationsIsNamed) {
  Model m;
  m.input("x", {int64_t{1}});
  m.ints("zero", {0}, true);
  m.ints("one", {1}, true);
  m.node("Squeeze", {"x"}, {"s"}, "squeeze");
  m.node("Range", {"zero", "s", "one"}, {"z"}, "range");
  m.output("z");
  const std::string e = test_support::error_of(m.save("range.onnx"));
  EXPECT_NE(e.find("(Range: start, limit or delta computed from the activations"), std::string::npos) << e;
}

// Constant folding of the new ops: each computes a reshape target's 16 from constants.
TEST(OnnxOps, NewOpsFoldOnConstants) {
  // x [1, 16] -> Reshape(x, [1, c]) -> Relu; c computed by `build` into value "c" (a 1-element int64).
  auto shape_of = [](const std::string& name, const std::function<void(Model&)>& build) {
    Model m(13);
    m.input("x", {int64_t{1}, int64_t{16}});
    m.ints("one", {1});
    build(m);
    attr(m.node("Concat", {"one", "c"}, {"t"}, "cat"), "axis", int64_t{0});
    m.node("Reshape", {"x", "t"}, {"y"}, "reshape");
    m.node("Relu", {"y"}, {"z"}, "relu");
    m.output("z");
    OnnxImportInfo info;
    const std::string e = test_support::error_of(m.save("fold_" + name + ".onnx"));
    if (!e.empty()) return std::vector<int64_t>{-1};
    load_onnx(m.save("fold_" + name + ".onnx"), {}, &info);
    return info.value_shapes.at("y");
  };
  const std::vector<int64_t> want = {1, 16};
  auto unsq = [](Model& m, const std::string& from) {
    m.ints("ax0", {0});
    m.node("Unsqueeze", {from, "ax0"}, {"c"}, "unsq");
  };
  EXPECT_EQ(shape_of("sign", [](Model& m) {
              m.ints("a", {-3});
              m.ints("b", {-16});
              m.node("Sign", {"a"}, {"s"}, "sign");
              m.node("Mul", {"s", "b"}, {"c"}, "mul");
            }), want);
  EXPECT_EQ(shape_of("cumsum", [&](Model& m) {
              m.ints("a", {4, 4, 8});
              m.ints("axis", {0}, true);
              m.ints("i", {2});
              m.node("CumSum", {"a", "axis"}, {"cs"}, "cumsum");
              m.node("Gather", {"cs", "i"}, {"c"}, "pick");
            }), want);
  EXPECT_EQ(shape_of("topk", [&](Model& m) {
              m.ints("a", {3, 16, 5});
              m.ints("k", {1});
              m.node("TopK", {"a", "k"}, {"c", "ci"}, "topk");
            }), want);
  EXPECT_EQ(shape_of("topk_indices", [&](Model& m) {
              m.ints("a", {3, 16, 5});
              m.ints("k", {1});
              m.ints("fifteen", {15});
              m.node("TopK", {"a", "k"}, {"v", "ix"}, "topk");
              m.node("Add", {"ix", "fifteen"}, {"c"}, "add");
            }), want);
  EXPECT_EQ(shape_of("argmax", [&](Model& m) {
              m.ints("a", {3, 16, 5});
              m.ints("fifteen", {15});
              attr(m.node("ArgMax", {"a"}, {"am"}, "argmax"), "keepdims", int64_t{1});
              m.node("Add", {"am", "fifteen"}, {"c"}, "add");
            }), want);
  EXPECT_EQ(shape_of("reduce_all", [&](Model& m) {
              m.ints("a", {6, 10});
              attr(m.node("ReduceSum", {"a"}, {"r"}, "sum"), "keepdims", int64_t{0});
              unsq(m, "r");
            }), want);
  EXPECT_EQ(shape_of("reduce_prod", [&](Model& m) {
              m.ints("a", {2, 8});
              attr(m.node("ReduceProd", {"a"}, {"r"}, "prod"), "keepdims", int64_t{1});
              m.node("Identity", {"r"}, {"c"}, "id");
            }), want);
  EXPECT_EQ(shape_of("tile", [&](Model& m) {
              m.ints("a", {8});
              m.ints("r", {2});
              m.node("Tile", {"a", "r"}, {"tt"}, "tile");
              attr(m.node("ReduceSum", {"tt"}, {"c"}, "sum"), "keepdims", int64_t{1});
            }), want);
  EXPECT_EQ(shape_of("max3", [&](Model& m) {
              m.ints("a", {3});
              m.ints("b", {16});
              m.ints("d", {5});
              m.node("Max", {"a", "b", "d"}, {"c"}, "max");
            }), want);
  EXPECT_EQ(shape_of("clip", [&](Model& m) {
              m.ints("a", {20});
              m.ints("lo", {0}, true);
              m.ints("hi", {16}, true);
              m.node("Clip", {"a", "lo", "hi"}, {"c"}, "clip");
            }), want);
  EXPECT_EQ(shape_of("compare", [&](Model& m) {
              m.floats("p", {2.0f});
              m.floats("q", {1.0f});
              m.ints("yes", {16});
              m.ints("no", {0});
              m.node("GreaterOrEqual", {"p", "q"}, {"ge"}, "ge");
              m.node("LessOrEqual", {"q", "p"}, {"le"}, "le");
              m.node("And", {"ge", "le"}, {"both"}, "and");
              m.node("Where", {"both", "yes", "no"}, {"c"}, "where");
            }), want);
  EXPECT_EQ(shape_of("einsum", [&](Model& m) {
              m.weight("p", {16, 3});
              m.weight("q", {3, 2});
              m.ints("i", {0});
              attr(m.node("Einsum", {"p", "q"}, {"e"}, "einsum"), "equation", std::string("ij,jk->ik"));
              m.node("Shape", {"e"}, {"s"}, "shape");
              m.node("Gather", {"s", "i"}, {"c"}, "pick");
            }), want);
}

// ---------------------------------------------------------------- element-wise ops of real exports
// Each added through the recipe (docs/architecture.md "A vector op"): its OpKind line, its
// OpDef row with the fp32 kernel, its ONNX table row. References for x = [1, 2, -3, 0.5],
// computed by hand in double (Python's math module).

static void expect_unary(const char* onnx_op, OpKind kind, const char* ir_name, const std::vector<double>& want) {
  const Graph g = load_onnx(one_node_model(onnx_op, std::string(ir_name) + ".onnx"), {});
  ASSERT_EQ(g.layers.size(), 1u) << onnx_op;
  EXPECT_EQ(g.layers[0].op, kind) << onnx_op;
  EXPECT_EQ(op_name(g.layers[0].op), ir_name);
  EXPECT_EQ(g.tensors[g.layers[0].output].shape, (Shape{4})) << onnx_op;
  if (want.empty()) return;
  const std::vector<float> y = reference_of(g);
  ASSERT_EQ(y.size(), want.size()) << onnx_op;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(y[i], want[i], 2e-6 * std::max(1.0, std::fabs(want[i]))) << onnx_op << " " << i;
  }
}

TEST(OnnxOps, MishIsXTimesTanhOfSoftplus) {
  expect_unary("Mish", OpKind::kMish, "mish",
               {0.8650983882673103, 1.9439589595339946, -0.1456474612756246, 0.3752452113048951});
}

TEST(OnnxOps, SinAndCosForRotaryEmbeddings) {
  expect_unary("Sin", OpKind::kSin, "sin", {0.8414709848078965, 0.9092974268256817, -0.1411200080598672, 0.479425538604203});
  expect_unary("Cos", OpKind::kCos, "cos",
               {0.5403023058681398, -0.4161468365471424, -0.9899924966004454, 0.8775825618903728});
  expect_unary("Atan", OpKind::kAtan, "atan",
               {0.7853981633974483, 1.1071487177940904, -1.2490457723982544, 0.4636476090008061});
  expect_unary("Sinh", OpKind::kSinh, "sinh",
               {1.1752011936438014, 3.626860407847019, -10.017874927409903, 0.5210953054937474});
}

// Their alpha is not carried by the IR (as LeakyRelu's): imported with their shape, no reference.
TEST(OnnxOps, ExponentialLinearUnitsImportWithTheirShape) {
  expect_unary("Elu", OpKind::kElu, "elu", {});
  expect_unary("Selu", OpKind::kSelu, "selu", {});
  expect_unary("Celu", OpKind::kCelu, "celu", {});
  expect_unary("ThresholdedRelu", OpKind::kThresholdedRelu, "thresholded_relu", {});
}

// PRelu with a slope per channel: y = x for x >= 0, slope * x below: [1, 2, -3 * 0.3, 0.5].
TEST(OnnxOps, PReluScalesNegativesByTheBroadcastSlope) {
  Model m;
  m.input("x", {int64_t{1}, int64_t{4}});
  m.floats("slope", {0.1f, 0.2f, 0.3f, 0.4f});
  m.node("PRelu", {"x", "slope"}, {"y"}, "prelu");
  m.output("y");
  const Graph g = load_onnx(m.save("prelu.onnx"), {});
  ASSERT_EQ(g.layers.size(), 1u);
  EXPECT_EQ(g.layers[0].op, OpKind::kPRelu);
  EXPECT_EQ(g.layers[0].const_values, (std::vector<float>{0.1f, 0.2f, 0.3f, 0.4f}));
  const std::vector<float> y = reference_of(g);
  ASSERT_EQ(y.size(), 4u);
  EXPECT_FLOAT_EQ(y[0], 1.0f);
  EXPECT_FLOAT_EQ(y[1], 2.0f);
  EXPECT_FLOAT_EQ(y[2], -3.0f * 0.3f);
  EXPECT_FLOAT_EQ(y[3], 0.5f);
}

// Sum of three inputs is a chain of two adds (as Max and Min of several): 3x.
TEST(OnnxOps, SumOfThreeIsTwoAdds) {
  Model m;
  m.input("x", {int64_t{1}, int64_t{4}});
  m.node("Sum", {"x", "x", "x"}, {"y"}, "sum");
  m.output("y");
  const Graph g = load_onnx(m.save("sum3.onnx"), {});
  ASSERT_EQ(g.layers.size(), 2u);
  EXPECT_EQ(g.layers[0].op, OpKind::kAdd);
  EXPECT_EQ(g.layers[1].op, OpKind::kAdd);
  EXPECT_EQ(reference_of(g), (std::vector<float>{3.0f, 6.0f, -9.0f, 1.5f}));
}

// A rotary embedding's angle table computed in the graph folds through the kernels: cos(0.5) x.
TEST(OnnxOps, CosOfAConstantFolds) {
  Model m;
  m.input("x", {int64_t{1}, int64_t{4}});
  m.floats("theta", {0.5f});
  m.node("Cos", {"theta"}, {"c"}, "cos");
  m.node("Mul", {"x", "c"}, {"y"}, "mul");
  m.output("y");
  const Graph g = load_onnx(m.save("fold_cos.onnx"), {});
  ASSERT_EQ(g.layers.size(), 1u);
  EXPECT_EQ(g.layers[0].op, OpKind::kMul);
  EXPECT_EQ(g.layers[0].const_values, std::vector<float>{std::cos(0.5f)});
}
