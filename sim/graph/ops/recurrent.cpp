// Recurrent layers (matrix ops): lstm and gru, a whole layer each. The compiler lowers
// them step by step (input projection, per-step recurrent matmul, a vector cell).
#include <string>

#include "sim/common/yaml_reader.h"
#include "sim/graph/ops/op_util.h"
#include "sim/graph/ops/registry.h"

namespace tessera::graph {
namespace {

using namespace ops;

void parse_recurrent(const YamlNode& node, const Graph&, Layer& layer) {
  layer.hidden = node.at("hidden").as_int(1, 1 << 20);
  const std::string dir = node.get("direction") ? node.at("direction").as_choice({"forward", "reverse", "bidirectional"})
                                                : std::string("forward");
  layer.directions = dir == "bidirectional" ? 2 : 1;
  layer.reverse = dir == "reverse";
  if (layer.op == OpKind::kGru) layer.linear_before_reset = node.bool_or("linear_before_reset", true);
  if (layer.op == OpKind::kLstm) layer.peepholes = node.bool_or("peepholes", false);
  if (auto w = node.get("weight_dtype")) layer.weight_dtype = weight_dtype_of(*w);
}

// Inputs: the sequence, then optional initial states (h0; lstm also c0).
Shape infer_recurrent(const Graph& g, Layer& L) {
  const std::string opname(op_name(L.op));
  need_inputs(L, 1, L.op == OpKind::kLstm ? 3 : 2);
  const Tensor& x = input(g, L, 0);
  need_rank(L, x, 2, 2, "[steps, features]");
  if (L.hidden < 1) throw ShapeError("op " + opname + " needs hidden >= 1");
  if (L.directions != 1 && L.directions != 2) throw ShapeError("directions must be 1 or 2");
  for (size_t i = 1; i < L.inputs.size(); ++i) {
    const Shape want{L.directions, L.hidden};
    const Tensor& s = input(g, L, i);
    if (shape_elements(s.shape) != shape_elements(want)) {
      throw ShapeError("initial state '" + s.name + "' is " + shape_text(s.shape) + ", expected " + shape_text(want));
    }
  }
  L.gemm_m_per_sample = x.shape[0];
  L.gemm_k = x.shape[1];
  L.gemm_n = L.gates() * L.hidden;
  return {x.shape[0], L.directions, L.hidden};
}

}  // namespace

void add_recurrent_ops(OpRegistry& r) {
  // YAML arity is checked by the shape rule (1 to 3 inputs for lstm, 1 to 2 for gru).
  r.add({.kind = OpKind::kLstm,
         .name = "lstm",
         .energy_class = EnergyClass::kFp32MultiplyAdd,  // its cell step: sigmoids and tanhs
         .cls = OpClass::kMatrix,
         .inputs = {1, 3},
         .yaml_keys = {"hidden", "direction", "weight_dtype", "peepholes"},
         .parse_yaml = parse_recurrent,
         .infer = infer_recurrent,
         .vector_function = "lstm_cell"});
  r.add({.kind = OpKind::kGru,
         .name = "gru",
         .energy_class = EnergyClass::kFp32MultiplyAdd,  // its cell step: sigmoids and tanhs
         .cls = OpClass::kMatrix,
         .inputs = {1, 2},
         .yaml_keys = {"hidden", "direction", "weight_dtype", "linear_before_reset"},
         .parse_yaml = parse_recurrent,
         .infer = infer_recurrent,
         .vector_function = "gru_cell"});
}

}  // namespace tessera::graph
