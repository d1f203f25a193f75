// Quantized ONNX graphs (issue 15, item 4): QDQ pairs around Conv/MatMul/Gemm, QLinearConv,
// QLinearMatMul, ConvInteger/MatMulInteger after DynamicQuantizeLinear. The model's own
// int8/uint8 tensors set the precision of the matrix layers that read them (MACs unchanged);
// a Q or DQ that does not fold into a matrix layer is a vector layer with its cost.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/compiler/compiler.h"
#include "sim/config/arch_config.h"
#include "sim/functional/functional.h"
#include "sim/graph/onnx_importer.h"
#include "sim/precision/precision.h"
#include "tests/support/onnx_model.h"
#include "tests/support/run_cli.h"
#include "tests/support/tiny_arch.h"

using namespace tessera;
using namespace tessera::graph;
using test_support::attr;
using test_support::Model;
namespace fs = std::filesystem;

namespace {

constexpr int kU8 = onnx::TensorProto_DataType_UINT8;
constexpr int kI8 = onnx::TensorProto_DataType_INT8;
constexpr int kI32 = onnx::TensorProto_DataType_INT32;

// An integer initializer of ONNX type `elem` (int8, uint8, int32), raw little-endian data.
void typed(Model& m, const std::string& name, std::vector<int64_t> dims, int elem, std::vector<int64_t> values = {}) {
  auto* t = m.g->add_initializer();
  t->set_name(name);
  t->set_data_type(elem);
  int64_t n = 1;
  for (int64_t d : dims) t->add_dims(d), n *= d;
  if (values.empty()) values.assign(static_cast<size_t>(n), 1);
  const size_t size = elem == kI32 ? 4 : 1;
  std::string raw(values.size() * size, '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    const int32_t v = static_cast<int32_t>(values[i]);
    std::memcpy(raw.data() + i * size, &v, size);  // little-endian: the low bytes
  }
  t->set_raw_data(raw);
}

// Scale and zero point pairs: "<p>_s" (float) and "<p>_z" (of type elem).
void qparams(Model& m, const std::string& p, float scale, int elem, int64_t zero) {
  m.floats(p + "_s", {scale});
  typed(m, p + "_z", {}, elem, {zero});
}

void q(Model& m, const std::string& x, const std::string& p, const std::string& y, const std::string& name) {
  m.node("QuantizeLinear", {x, p + "_s", p + "_z"}, {y}, name);
}
void dq(Model& m, const std::string& x, const std::string& p, const std::string& y, const std::string& name) {
  m.node("DequantizeLinear", {x, p + "_s", p + "_z"}, {y}, name);
}

const Layer* layer_named(const Graph& g, const std::string& name) {
  for (const Layer& l : g.layers)
    if (l.name == name) return &l;
  return nullptr;
}

int count_op(const Graph& g, OpKind op) {
  int n = 0;
  for (const Layer& l : g.layers) n += l.op == op;
  return n;
}

Dtype input_dtype(const Graph& g, const Layer& l) { return g.tensors[static_cast<size_t>(l.inputs[0])].dtype; }

void apply_policy(Graph& g, const std::string& spec) {
  const auto policy = precision::parse_policy(spec);
  precision::apply(g, precision::assign(g, policy), policy.defaults.activations);
}

// x [1, 3, 8, 8] -> Q -> DQ -> conv (int8 weights through DQ, int32 bias through DQ) ->
// Q -> DQ -> conv2 (1x1) -> z. `qdq`: false gives the same network in float.
Model qdq_convs(bool qdq) {
  Model m;
  m.input("x", {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{8}});
  std::string x = "x";
  if (qdq) {
    qparams(m, "a", 0.05f, kU8, 128);
    q(m, "x", "a", "xq", "x_q");
    dq(m, "xq", "a", "xd", "x_dq");
    x = "xd";
    typed(m, "w1q", {4, 3, 3, 3}, kI8);
    qparams(m, "w1", 0.01f, kI8, 0);
    dq(m, "w1q", "w1", "w1", "w1_dq");
    typed(m, "b1q", {4}, kI32);
    m.floats("b1_s", {0.0005f});
    m.node("DequantizeLinear", {"b1q", "b1_s"}, {"b1"}, "b1_dq");
  } else {
    m.weight("w1", {4, 3, 3, 3});
    m.weight("b1", {4});
  }
  attr(m.node("Conv", {x, "w1", "b1"}, {"y"}, "conv"), "pads", std::vector<int64_t>{1, 1, 1, 1});
  std::string y = "y";
  if (qdq) {
    qparams(m, "c", 0.1f, kU8, 0);
    q(m, "y", "c", "yq", "y_q");
    dq(m, "yq", "c", "yd", "y_dq");
    y = "yd";
    typed(m, "w2q", {2, 4, 1, 1}, kI8);
    qparams(m, "w2", 0.02f, kI8, 0);
    dq(m, "w2q", "w2", "w2", "w2_dq");
  } else {
    m.weight("w2", {2, 4, 1, 1});
  }
  m.node("Conv", {y, "w2"}, {"z"}, "conv2");
  m.output("z");
  return m;
}

}  // namespace

// QDQ around two convs: the input's Q is a quantize layer (nothing before it to fold into);
// the DQs fold into the convs that read them, the Q after conv into conv's activate; the
// int8 weights stay int8. After the int8 policy the convs run uint8 x int8; MACs are those
// of the float network.
TEST(OnnxQuantized, QdqPairsAroundConvsSetTheirPrecision) {
  OnnxImportInfo info;
  Graph g = load_onnx(qdq_convs(true).save("qdq_convs.onnx"), {}, &info);
  const Graph f = load_onnx(qdq_convs(false).save("float_convs.onnx"), {});
  EXPECT_EQ(g.total_macs_per_sample(), f.total_macs_per_sample());
  EXPECT_EQ(g.total_macs_per_sample(), 8 * 8 * 27 * 4 + 8 * 8 * 4 * 2);
  EXPECT_EQ(count_op(g, OpKind::kQuantize), 1);
  EXPECT_EQ(count_op(g, OpKind::kDequantize), 0);
  EXPECT_EQ(info.absorbed.at("x_dq"), "dequantized by the matrix layer");
  EXPECT_EQ(info.absorbed.at("y_dq"), "dequantized by the matrix layer");
  EXPECT_EQ(info.absorbed.at("y_q"), "quantized by the matrix layer");
  EXPECT_EQ(info.absorbed.at("w1_dq"), "folded");
  const Layer* conv = layer_named(g, "conv");
  const Layer* conv2 = layer_named(g, "conv2");
  ASSERT_NE(conv, nullptr);
  ASSERT_NE(conv2, nullptr);
  EXPECT_EQ(conv->quantized_weights, Dtype::kInt8);
  EXPECT_EQ(conv2->quantized_weights, Dtype::kInt8);
  EXPECT_EQ(g.tensors[static_cast<size_t>(conv->output)].quantized, Dtype::kUint8);  // the Q folded into it
  EXPECT_EQ(layer_named(g, "x_q")->quant_dtype, Dtype::kUint8);
  apply_policy(g, "int8");
  EXPECT_EQ(input_dtype(g, *conv), Dtype::kUint8);
  EXPECT_EQ(conv->weight_dtype, Dtype::kInt8);
  EXPECT_EQ(input_dtype(g, *conv2), Dtype::kUint8);
  EXPECT_EQ(conv2->weight_dtype, Dtype::kInt8);
  EXPECT_EQ(g.tensors[static_cast<size_t>(g.inputs[0])].dtype, Dtype::kInt8);  // the float input: the policy's
  // The compiled layers: the int8 mode multiplies uint8 codes; the MACs are the float network's.
  const ArchConfig arch = load_arch_config(std::string(TESSERA_SOURCE_DIR) + "/configs/tpu-v1.yaml");
  const compiler::Program p = compiler::compile(g, arch);
  int64_t macs = 0;
  for (size_t i = 0; i < g.layers.size(); ++i) {
    macs += p.layers[i].macs;
    if (g.layers[i].name == "conv" || g.layers[i].name == "conv2") {
      EXPECT_EQ(p.layers[i].a_dtype, Dtype::kUint8) << g.layers[i].name;
      EXPECT_EQ(p.layers[i].b_dtype, Dtype::kInt8) << g.layers[i].name;
    }
  }
  EXPECT_EQ(macs, f.total_macs_per_sample());
}

// The model's precision wins over the policy's default (int16: the quantized convs stay
// 8-bit), an explicit layer rule wins over the model's.
TEST(OnnxQuantized, PolicyDefaultsDoNotOverrideTheModelButRulesDo) {
  Graph g = load_onnx(qdq_convs(true).save("qdq_policy.onnx"), {});
  apply_policy(g, "int16");
  const Layer* conv = layer_named(g, "conv");
  EXPECT_EQ(input_dtype(g, *conv), Dtype::kUint8);
  EXPECT_EQ(conv->weight_dtype, Dtype::kInt8);
  EXPECT_EQ(g.tensors[static_cast<size_t>(g.inputs[0])].dtype, Dtype::kInt16);  // read by the quantize layer
  const fs::path rule = fs::path(testing::TempDir()) / "rule.yaml";
  std::ofstream(rule) << "layers:\n  - {match: conv2, activations: int16, weights: int16}\n";
  Graph h = load_onnx(qdq_convs(true).save("qdq_rule.onnx"), {});
  apply_policy(h, rule.string());
  const Layer* conv2 = layer_named(h, "conv2");
  EXPECT_EQ(input_dtype(h, *conv2), Dtype::kInt16);
  EXPECT_EQ(conv2->weight_dtype, Dtype::kInt16);
  EXPECT_EQ(input_dtype(h, *layer_named(h, "conv")), Dtype::kUint8);
}

// Q and DQ next to vector ops are vector layers: 2 element operations per element each.
TEST(OnnxQuantized, QdqAroundVectorOpsCostVectorWork) {
  Model m;
  m.input("x", {int64_t{1}, int64_t{4}, int64_t{8}});
  qparams(m, "a", 0.05f, kI8, 0);
  qparams(m, "b", 0.1f, kI8, 0);
  m.floats("one", {1.0f});
  q(m, "x", "a", "xq", "x_q");
  dq(m, "xq", "a", "xd", "x_dq");
  m.node("Add", {"xd", "one"}, {"s"}, "add");
  q(m, "s", "b", "sq", "s_q");
  dq(m, "sq", "b", "z", "s_dq");
  m.output("z");
  Graph g = load_onnx(m.save("qdq_vector.onnx"), {});
  std::vector<std::string> ops;
  for (const Layer& l : g.layers) ops.emplace_back(op_name(l.op));
  EXPECT_EQ(ops, (std::vector<std::string>{"quantize", "dequantize", "add", "quantize", "dequantize"}));
  EXPECT_EQ(g.layers[0].quant_dtype, Dtype::kInt8);
  apply_policy(g, "int8");
  const compiler::Program p = compiler::compile(g, test_support::TinyArch{}.build());
  std::map<std::string, int64_t> elements;
  for (const auto& in : p.instructions)
    if (in.op == compiler::Opcode::kVector) elements[g.layers[static_cast<size_t>(in.layer)].name] += in.elements;
  EXPECT_EQ(elements["x_q"], 2 * 32);  // a multiply and an add (rounding, saturation in the same pass)
  EXPECT_EQ(elements["x_dq"], 2 * 32);
  EXPECT_EQ(elements["add"], 32);
  EXPECT_EQ(elements["s_q"], 2 * 32);
  EXPECT_NE(p.listing().find("vector quantize elements=64 "), std::string::npos) << p.listing();
  EXPECT_NE(p.listing().find("vector dequantize elements=64 "), std::string::npos);
}

// QLinearConv and QLinearMatMul: the matrix layer on the codes; its input and output are
// codes of the types the model gives (x_zero_point's, y_zero_point's).
TEST(OnnxQuantized, QLinearConvAndMatMulRunOnTheModelsCodes) {
  {
    Model m;
    m.input("x", {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{8}}, kU8);
    qparams(m, "x", 0.05f, kU8, 128);
    typed(m, "w", {4, 3, 3, 3}, kI8);
    qparams(m, "w", 0.01f, kI8, 0);
    qparams(m, "y", 0.1f, kI8, 0);
    attr(m.node("QLinearConv", {"x", "x_s", "x_z", "w", "w_s", "w_z", "y_s", "y_z"}, {"y"}, "qconv"), "pads",
         std::vector<int64_t>{1, 1, 1, 1});
    m.output("y");
    Graph g = load_onnx(m.save("qlinearconv.onnx"), {});
    const Layer* conv = layer_named(g, "qconv");
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(conv->op, OpKind::kConv2d);
    EXPECT_EQ(conv->macs_per_sample(), 8 * 8 * 27 * 4);
    apply_policy(g, "int8");
    EXPECT_EQ(input_dtype(g, *conv), Dtype::kUint8);
    EXPECT_EQ(conv->weight_dtype, Dtype::kInt8);
    EXPECT_EQ(g.tensors[static_cast<size_t>(conv->output)].dtype, Dtype::kInt8);
    EXPECT_EQ(g.tensors[static_cast<size_t>(g.inputs[0])].dtype, Dtype::kUint8);
  }
  Model m;
  m.input("a", {int64_t{1}, int64_t{4}, int64_t{8}}, kU8);
  qparams(m, "a", 0.05f, kU8, 128);
  typed(m, "b", {8, 5}, kI8);
  qparams(m, "b", 0.01f, kI8, 0);
  qparams(m, "y", 0.1f, kU8, 10);
  m.node("QLinearMatMul", {"a", "a_s", "a_z", "b", "b_s", "b_z", "y_s", "y_z"}, {"y"}, "qmatmul");
  m.output("y");
  Graph g = load_onnx(m.save("qlinearmatmul.onnx"), {});
  const Layer* fc = layer_named(g, "qmatmul");
  ASSERT_NE(fc, nullptr);
  EXPECT_EQ(fc->op, OpKind::kFc);
  EXPECT_EQ(fc->macs_per_sample(), 4 * 8 * 5);
  apply_policy(g, "int8");
  EXPECT_EQ(input_dtype(g, *fc), Dtype::kUint8);
  EXPECT_EQ(fc->weight_dtype, Dtype::kInt8);
  EXPECT_EQ(g.tensors[static_cast<size_t>(fc->output)].dtype, Dtype::kUint8);
}

// Dynamic quantization (the onnxruntime quantizer's form): DynamicQuantizeLinear is a
// dynamic_quantize layer (range, then codes: 4 operations per element); ConvInteger /
// MatMulInteger the matrix layer on uint8 codes; the Cast and the scale Mul after it ride
// along the activate (the scale is the product of the runtime and the weight scales).
TEST(OnnxQuantized, DynamicQuantizationWithIntegerOps) {
  Model m;
  m.input("x", {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{8}});
  m.node("DynamicQuantizeLinear", {"x"}, {"xq", "xs", "xz"}, "x_dql");
  typed(m, "w", {4, 3, 3, 3}, kU8);
  m.floats("ws", {0.01f});
  typed(m, "wz", {}, kU8, {128});
  m.node("Mul", {"xs", "ws"}, {"scale"}, "scales");
  attr(m.node("ConvInteger", {"xq", "w", "xz", "wz"}, {"acc"}, "conv"), "pads", std::vector<int64_t>{1, 1, 1, 1});
  attr(m.node("Cast", {"acc"}, {"accf"}, "cast"), "to", int64_t{onnx::TensorProto_DataType_FLOAT});
  m.node("Mul", {"accf", "scale"}, {"y"}, "rescale");
  m.output("y");
  OnnxImportInfo info;
  Graph g = load_onnx(m.save("convinteger.onnx"), {}, &info);
  EXPECT_EQ(info.absorbed.at("rescale"), "fused");
  EXPECT_EQ(info.absorbed.at("scales"), "folded");
  const Layer* dql = layer_named(g, "x_dql");
  const Layer* conv = layer_named(g, "conv");
  ASSERT_NE(dql, nullptr);
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(dql->op, OpKind::kDynamicQuantize);
  EXPECT_EQ(conv->macs_per_sample(), 8 * 8 * 27 * 4);
  apply_policy(g, "int8");
  EXPECT_EQ(input_dtype(g, *conv), Dtype::kUint8);
  EXPECT_EQ(conv->weight_dtype, Dtype::kUint8);
  const compiler::Program p = compiler::compile(g, test_support::TinyArch{}.build());
  int64_t dql_elements = 0;
  for (const auto& in : p.instructions)
    if (in.op == compiler::Opcode::kVector && g.layers[static_cast<size_t>(in.layer)].name == "x_dql") dql_elements += in.elements;
  EXPECT_EQ(dql_elements, 4 * 3 * 64);  // min, max, then scale and zero point per element

  Model mm;
  mm.input("a", {int64_t{1}, int64_t{4}, int64_t{8}});
  mm.node("DynamicQuantizeLinear", {"a"}, {"aq", "as", "az"}, "a_dql");
  typed(mm, "b", {8, 5}, kI8);
  typed(mm, "bz", {}, kI8, {0});
  mm.node("MatMulInteger", {"aq", "b", "az", "bz"}, {"acc"}, "matmul");
  attr(mm.node("Cast", {"acc"}, {"y"}, "cast"), "to", int64_t{onnx::TensorProto_DataType_FLOAT});
  mm.output("y");
  Graph h = load_onnx(mm.save("matmulinteger.onnx"), {});
  const Layer* fc = layer_named(h, "matmul");
  ASSERT_NE(fc, nullptr);
  EXPECT_EQ(fc->op, OpKind::kFc);
  EXPECT_EQ(fc->macs_per_sample(), 4 * 8 * 5);
  apply_policy(h, "int8");
  EXPECT_EQ(input_dtype(h, *fc), Dtype::kUint8);
  EXPECT_EQ(fc->weight_dtype, Dtype::kInt8);
}

// Constant folding: DequantizeLinear (per tensor with a zero point, per axis) and
// QuantizeLinear (rounding, saturation) of known constants compute their values.
TEST(OnnxQuantized, QuantizeAndDequantizeFoldOnConstants) {
  // x [1, width] -> Reshape(x, [1, c]) -> Relu, c computed by `build` (a float scalar "v").
  auto width_of = [](int64_t width, const std::function<void(Model&)>& build) {
    Model m;
    m.input("x", {int64_t{1}, width});
    m.ints("one", {1});
    m.ints("ax", {0});
    build(m);
    attr(m.node("Cast", {"v"}, {"vi"}, "to_int"), "to", int64_t{onnx::TensorProto_DataType_INT64});
    m.node("Unsqueeze", {"vi", "ax"}, {"c"}, "unsq");
    attr(m.node("Concat", {"one", "c"}, {"t"}, "cat"), "axis", int64_t{0});
    m.node("Reshape", {"x", "t"}, {"y"}, "reshape");
    m.node("Relu", {"y"}, {"z"}, "relu");
    m.output("z");
    const std::string e = test_support::error_of(m.save("qfold.onnx"));
    return e.empty() ? std::string("ok") : e;
  };
  // (130 - 98) * 0.5 = 16
  EXPECT_EQ(width_of(16, [](Model& m) {
              typed(m, "c8", {}, kU8, {130});
              qparams(m, "p", 0.5f, kU8, 98);
              dq(m, "c8", "p", "v", "dq");
            }), "ok");
  // Per axis 0 of [[4, 2], [3, 1]] with scales [1, 4]: [[4, 2], [12, 4]], whose max is 12.
  EXPECT_EQ(width_of(12, [](Model& m) {
              typed(m, "w", {2, 2}, kI8, {4, 2, 3, 1});
              m.floats("s", {1.0f, 4.0f});
              typed(m, "zp", {2}, kI8, {0, 0});
              attr(m.node("DequantizeLinear", {"w", "s", "zp"}, {"wd"}, "dq"), "axis", int64_t{0});
              attr(m.node("ReduceMax", {"wd"}, {"v"}, "max"), "keepdims", int64_t{0});
            }), "ok");
  // round(33 / 2) = 16 (halves to even), + 0.
  EXPECT_EQ(width_of(16, [](Model& m) {
              m.floats("f", {33.0f});
              qparams(m, "p", 2.0f, kI8, 0);
              q(m, "f", "p", "v", "q");
            }), "ok");
  // 1000 saturates to 255 (uint8); 255 - 239 = 16.
  EXPECT_EQ(width_of(16, [](Model& m) {
              m.floats("f", {1000.0f});
              qparams(m, "p", 1.0f, kU8, 0);
              m.ints("k", {239}, true);
              q(m, "f", "p", "sat", "q");
              attr(m.node("Cast", {"sat"}, {"sat64"}, "widen"), "to", int64_t{onnx::TensorProto_DataType_INT64});
              m.node("Sub", {"sat64", "k"}, {"v"}, "sub");
            }), "ok");
  // DynamicQuantizeLinear of a constant: the codes' shape, and scalar scale and zero point.
  Model m;
  m.input("x", {int64_t{1}, int64_t{6}});
  m.weight("c", {6});
  m.node("DynamicQuantizeLinear", {"c"}, {"cq", "cs", "cz"}, "dql");
  m.node("Add", {"x", "cq"}, {"z"}, "add");
  m.output("z");
  OnnxImportInfo info;
  load_onnx(m.save("dql_const.onnx"), {}, &info);
  EXPECT_EQ(info.value_shapes.at("cq"), std::vector<int64_t>{6});
  EXPECT_EQ(info.value_shapes.at("cs"), std::vector<int64_t>{});
  EXPECT_EQ(info.value_shapes.at("cz"), std::vector<int64_t>{});
}

// The YAML format: quantize (to int8 or uint8), dequantize, dynamic_quantize; a matrix
// layer reading quantize's output (through a reshape) runs at its codes' type.
TEST(OnnxQuantized, YamlQuantizeOps) {
  Graph g = parse_graph_yaml(YamlNode::load_string(R"(
name: q
inputs: [{name: x, shape: [4, 8]}]
layers:
  - {name: q, op: quantize, to: uint8}
  - {name: r, op: reshape, shape: [32]}
  - {name: fc, op: fc, units: 16}
  - {name: dq, op: dequantize}
  - {name: dyn, op: dynamic_quantize, input: x}
  - {name: fc2, op: fc, units: 4}
outputs: [dq, fc2]
)",
                                                   "q.yaml"));
  EXPECT_EQ(g.layers[0].quant_dtype, Dtype::kUint8);
  EXPECT_EQ(g.layers[4].quant_dtype, Dtype::kUint8);  // dynamic_quantize: uint8 unless `to` says otherwise
  const auto codes = model_quantization(g);
  EXPECT_EQ(codes[static_cast<size_t>(g.layers[1].output)], Dtype::kUint8);  // a reshape keeps the codes
  EXPECT_FALSE(codes[static_cast<size_t>(g.layers[2].output)]);
  apply_policy(g, "int8");
  EXPECT_EQ(input_dtype(g, g.layers[2]), Dtype::kUint8);
  EXPECT_EQ(input_dtype(g, g.layers[5]), Dtype::kUint8);
  EXPECT_EQ(g.layers[2].weight_dtype, Dtype::kInt8);
  EXPECT_EQ(g.tensors[static_cast<size_t>(g.layers[3].output)].dtype, Dtype::kInt8);
  EXPECT_THROW(parse_graph_yaml(YamlNode::load_string(
                   "name: q\ninputs: [{name: x, shape: [4]}]\nlayers:\n  - {name: q, op: quantize, to: int16}\n", "q.yaml")),
               InputError);
}

// Functional mode runs the quantized network: Q and DQ are the identity on values (the
// codes' type is the tensor's precision, which functional mode applies); uint8 tensors
// are 8-bit codes.
TEST(OnnxQuantized, FunctionalModeRunsAQdqNetwork) {
  Graph g = load_onnx(qdq_convs(true).save("qdq_functional.onnx"), {});
  apply_policy(g, "int8");
  functional::FunctionalOptions o;
  o.calibration_batches = 0;
  const ArchConfig arch = load_arch_config(std::string(TESSERA_SOURCE_DIR) + "/configs/tpu-v1.yaml");
  const functional::FunctionalResult r = functional::run_functional(g, arch, o);
  bool saw_conv = false;
  for (const auto& l : r.layers) {
    if (l.name != "conv") continue;
    saw_conv = true;
    EXPECT_EQ(l.a_dtype, Dtype::kUint8);
    EXPECT_EQ(l.b_dtype, Dtype::kInt8);
    EXPECT_GT(l.sqnr_db, 20.0);
  }
  EXPECT_TRUE(saw_conv);
  EXPECT_EQ(r.outputs.size(), 1u);
}

// The report says which layers the model quantized and at which precision.
TEST(OnnxQuantized, ReportNamesTheModelsQuantization) {
  const fs::path model = qdq_convs(true).save("qdq_report.onnx");
  const fs::path out = fs::path(testing::TempDir()) / "qdq_report";
  const auto r = tessera_test::run_tessera("run --arch configs/tpu-v1.yaml --workload " + model.string() + " --out " +
                                           out.string() + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(out / "report.json");
  const auto report = nlohmann::json::parse(in);
  EXPECT_EQ(report["workload"]["quantized_by_model"]["matrix_layers"], 2);
  EXPECT_EQ(report["workload"]["quantized_by_model"]["modes"], nlohmann::json::array({"uint8xint8"}));
  int convs = 0;
  for (const auto& l : report["layers"]) {
    if (l["op"] != "conv2d") continue;
    ++convs;
    EXPECT_EQ(l["a_dtype"], "uint8");
    EXPECT_EQ(l["b_dtype"], "int8");
  }
  EXPECT_EQ(convs, 2);
  EXPECT_EQ(report["summary"]["macs"], 8 * 8 * 27 * 4 + 8 * 8 * 4 * 2);
}

// ONNX's FLOAT8E4M3FN (17), FLOAT8E5M2 (19) and INT4 (22) element types (onnx 1.14 / 1.16;
// the installed headers predate them, the numbers are onnx.proto's): int4 and fp8 weights
// through DequantizeLinear set the matrix layer's weight precision; an fp8 graph input its
// activations'. A 4 x 3 int4 initializer is 6 bytes of packed data.
TEST(OnnxQuantized, Fp8AndInt4ElementTypesSetThePrecision) {
  for (const auto& [elem, want] : {std::pair{22, Dtype::kInt4}, std::pair{17, Dtype::kFp8E4m3}, std::pair{19, Dtype::kFp8E5m2}}) {
    Model m(21);
    m.input("x", {int64_t{1}, int64_t{4}}, elem == 22 ? onnx::TensorProto_DataType_FLOAT : elem);
    auto* w = m.g->add_initializer();
    w->set_name("wq");
    w->set_data_type(elem);
    w->add_dims(4);
    w->add_dims(3);
    w->set_raw_data(std::string(elem == 22 ? 6 : 12, '\0'));
    m.floats("ws", {0.5f});
    m.node("DequantizeLinear", {"wq", "ws"}, {"w"}, "w_dq");
    m.node("MatMul", {"x", "w"}, {"y"}, "mm");
    m.output("y");
    Graph g = load_onnx(m.save("q" + std::to_string(elem) + ".onnx"), {});
    const Layer* mm = layer_named(g, "mm");
    ASSERT_NE(mm, nullptr) << elem;
    EXPECT_EQ(mm->quantized_weights, want) << elem;
    apply_policy(g, "bf16");
    EXPECT_EQ(mm->weight_dtype, want) << elem;
    EXPECT_EQ(input_dtype(g, *mm), elem == 22 ? Dtype::kBf16 : want) << elem;
  }
}
