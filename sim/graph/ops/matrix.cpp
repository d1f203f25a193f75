// Matrix ops (the systolic array): fc, conv2d, conv_transpose2d, matmul. Shape rules fill
// the GEMM view; the compiler's matrix lowering stays keyed by OpKind.
#include <string>

#include "sim/common/yaml_reader.h"
#include "sim/graph/ops/op_util.h"
#include "sim/graph/ops/registry.h"

namespace tessera::graph {

void ops::parse_matrix_extras(const YamlNode& node, Layer& layer) {
  if (auto a = node.get("activation")) {
    const std::string act = a->as_choice({"none", "relu", "relu6", "sigmoid", "tanh"});
    layer.activation = act == "relu"      ? Activation::kRelu
                       : act == "relu6"   ? Activation::kRelu6
                       : act == "sigmoid" ? Activation::kSigmoid
                       : act == "tanh"    ? Activation::kTanh
                                          : Activation::kNone;
  }
  if (auto w = node.get("weight_dtype")) layer.weight_dtype = ops::weight_dtype_of(*w);
}

namespace {

using namespace ops;

void parse_fc(const YamlNode& node, const Graph& g, Layer& layer) {
  const Tensor& x = input(g, layer, 0);
  if (x.shape.size() > 2) {
    yaml_need_rank(node, layer, x, 1, "vector [features] or [rows, features] (add a flatten or global_avgpool layer first)");
  }
  layer.out_features = node.at("units").as_int(1, 1 << 24);
  parse_matrix_extras(node, layer);
}

void parse_conv(const YamlNode& node, const Graph& g, Layer& layer) {
  parse_window_yaml(node, g, layer);
  parse_matrix_extras(node, layer);
}

void parse_matmul(const YamlNode& node, const Graph&, Layer& layer) { parse_matrix_extras(node, layer); }

Shape infer_fc(const Graph& g, Layer& L) {
  need_inputs(L, 1, 1);
  const Tensor& x = input(g, L, 0);
  if (L.out_features < 1) throw ShapeError("op fc needs units >= 1");
  L.gemm_m_per_sample = shape_elements(x.shape) / x.shape.back();
  L.gemm_k = x.shape.back();
  L.gemm_n = L.out_features;
  Shape out = x.shape;
  out.back() = L.out_features;
  return out;
}

Shape infer_matmul(const Graph& g, Layer& L) {
  need_inputs(L, 2, 2);
  const Tensor& x = input(g, L, 0);
  const Tensor& b = input(g, L, 1);
  need_rank(L, x, 2, 16, "[..., M, K]");
  need_rank(L, b, 2, 16, "[..., K, N]");
  const int64_t M = x.shape[x.shape.size() - 2], K = x.shape.back();
  const int64_t Kb = b.shape[b.shape.size() - 2], N = b.shape.back();
  if (K != Kb) {
    throw ShapeError("matmul inner dimensions differ: '" + x.name + "' is " + shape_text(x.shape) + ", '" + b.name +
                     "' is " + shape_text(b.shape));
  }
  Shape la(x.shape.begin(), x.shape.end() - 2), lb(b.shape.begin(), b.shape.end() - 2);
  Shape lead;
  try {
    lead = broadcast_shapes(la, lb);
  } catch (const ShapeError&) {
    throw ShapeError("matmul leading (batch) dimensions do not broadcast: '" + x.name + "' is " +
                     shape_text(x.shape) + ", '" + b.name + "' is " + shape_text(b.shape));
  }
  L.gemm_m_per_sample = M;
  L.gemm_k = K;
  L.gemm_n = N;
  L.gemm_groups = shape_elements(lead);
  Shape out = lead;
  out.push_back(M);
  out.push_back(N);
  return out;
}

}  // namespace

void add_matrix_ops(OpRegistry& r) {
  r.add({.kind = OpKind::kFc,
         .name = "fc",
         .energy_class = EnergyClass::kNoVectorWork,
         .cls = OpClass::kMatrix,
         .yaml_keys = {"activation", "weight_dtype", "units"},
         .parse_yaml = parse_fc,
         .infer = infer_fc,
         .functional = FunctionalKernel::kMatrix});
  // A grouped or depthwise conv2d may run on the vector unit instead (the compiler's
  // mapping choice); its vector function is then "grouped_conv". UNCONFIRMED: its energy
  // class is the 32-bit add, the price it had before classes (the built-in table did not
  // name it); a tap is a multiply-add.
  r.add({.kind = OpKind::kConv2d,
         .name = "conv2d",
         .energy_class = EnergyClass::kAdd32,
         .cls = OpClass::kMatrix,
         .yaml_keys = {"activation", "weight_dtype", "filters", "kernel", "stride", "padding", "dilation", "groups"},
         .parse_yaml = parse_conv,
         .infer = infer_window,
         .windowed = true,
         .vector_function = "grouped_conv",
         .functional = FunctionalKernel::kMatrix});
  r.add({.kind = OpKind::kConvTranspose2d,
         .name = "conv_transpose2d",
         .energy_class = EnergyClass::kNoVectorWork,
         .cls = OpClass::kMatrix,
         .yaml_keys = {"activation", "weight_dtype", "filters", "kernel", "stride", "padding", "dilation", "groups",
                       "output_padding"},
         .parse_yaml = parse_conv,
         .infer = infer_window});
  r.add({.kind = OpKind::kMatmul,
         .name = "matmul",
         .energy_class = EnergyClass::kNoVectorWork,
         .cls = OpClass::kMatrix,
         .inputs = {2, 2},
         .yaml_keys = {"activation"},
         .parse_yaml = parse_matmul,
         .infer = infer_matmul,
         .functional = FunctionalKernel::kMatmul});
}

}  // namespace tessera::graph
