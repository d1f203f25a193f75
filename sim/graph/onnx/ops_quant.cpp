// Quantized graphs: QuantizeLinear and DequantizeLinear fold into the matrix layers next
// to them, else they are vector layers; QLinear and Integer ops are the matrix ops on codes.
#include "sim/graph/onnx/ops.h"

// ---------------------------------------------------------------- quantized graphs

namespace tessera::graph::onnx_import {

// QuantizeLinear's output type: its zero point's, else output_dtype (opset 21), else uint8.
int32_t QuantOps::quantize_elem(const Node& n) {
  if (m_.has_input(n, 2)) return m_.val(n, 2).elem;
  if (m_.opset_ >= 21 && m_.has_attr(n, "output_dtype")) return static_cast<int32_t>(m_.attr_i(n, "output_dtype", 0));
  return onnx::TensorProto_DataType_UINT8;
}

void QuantOps::mark_codes(const Value& v, int32_t elem) {
  const auto d = code_dtype(elem);
  if (d && !v.constant && v.tensor >= 0) m_.g_.tensors[static_cast<size_t>(v.tensor)].quantized = *d;
}

// Every reader of `value` (through reshapes, which move nothing) is a matrix layer that
// streams it: Conv/ConvTranspose/Gemm input A, either MatMul operand.
bool QuantOps::feeds_only_matrix_ops(const std::string& value, int depth) const {
  if (m_.graph_outputs_.count(value) || depth > 8) return false;
  const auto it = m_.consumer_nodes_.find(value);
  if (it == m_.consumer_nodes_.end()) return false;
  for (int idx : it->second) {
    const Node& c = m_.model_.graph().node(idx);
    const OnnxOp* row = find_onnx_op(c.op_type());
    for (int i = 0; i < c.input_size(); ++i) {
      if (c.input(i) != value) continue;
      const bool streamed = row && i < row->streamed_inputs;
      const bool alias = row && row->has(kAliasOf0) && i == 0 && c.output_size() > 0 &&
                         feeds_only_matrix_ops(c.output(0), depth + 1);
      if (!streamed && !alias) return false;
    }
  }
  return true;
}

// QuantizeLinear of an activation: right after a matrix layer its activate writes the
// codes (the requantization it does anyway); elsewhere a quantize layer.
void QuantOps::op_quantize(const Node& n) {
  Value& x = m_.val(n, 0);
  const int32_t elem = quantize_elem(n);
  const auto codes = code_dtype(elem);
  if (!codes) {
    throw Unsupported{"QuantizeLinear to " + onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(elem)) +
                      " (int8, uint8, int16, FLOAT8E4M3FN and FLOAT8E5M2 are supported)"};
  }
  Value& o = m_.out(n);
  o.shape = x.shape;
  o.quant_elem = elem;
  if (m_.fusable(n.input(0)) && m_.producer_layer(x)) {
    m_.g_.tensors[static_cast<size_t>(x.tensor)].quantized = *codes;
    return m_.absorb_into_producer(n, x, o, "quantized by the matrix layer");
  }
  Layer l;
  l.op = OpKind::kQuantize;
  l.quant_dtype = *codes;
  VectorOps(m_).op_elementwise(n, l);
}

// DequantizeLinear of an activation: a matrix layer reads codes as they are (their zero
// point is the array's business), so when only matrix layers read the result nothing
// runs; elsewhere a dequantize layer.
void QuantOps::op_dequantize(const Node& n) {
  Value& x = m_.val(n, 0);
  const int32_t elem = m_.has_input(n, 2) ? m_.val(n, 2).elem : x.quant_elem ? x.quant_elem : x.elem;
  mark_codes(x, elem);
  Value& o = m_.out(n);
  o.shape = x.shape;
  if (code_dtype(elem) && feeds_only_matrix_ops(n.output(0))) {
    m_.alias(n, x, o);
    o.quant_elem = elem;
    m_.absorb(n, "dequantized by the matrix layer");
    return;
  }
  Layer l;
  l.op = OpKind::kDequantize;
  VectorOps(m_).op_elementwise(n, l);
}

// DynamicQuantizeLinear: a dynamic_quantize layer (the range, then uint8 codes). Its scale
// and zero point are scalars the layer computes: the layers that use them take them as
// parameters (the scale multiplies in the next matrix layer's activate), not as tensors.
void QuantOps::op_dynamic_quantize(const Node& n) {
  Layer l;
  l.op = OpKind::kDynamicQuantize;
  l.quant_dtype = Dtype::kUint8;
  VectorOps(m_).op_elementwise(n, l);
  m_.out(n).quant_elem = onnx::TensorProto_DataType_UINT8;
  for (int i = 1; i < std::min(n.output_size(), 3); ++i) {
    if (n.output(i).empty()) continue;
    Value p;
    p.elem = i == 1 ? onnx::TensorProto_DataType_FLOAT : onnx::TensorProto_DataType_UINT8;
    p.is_float = i == 1;
    p.producer = node_name(n);
    m_.values_[n.output(i)] = p;
  }
}

}  // namespace tessera::graph::onnx_import

// ---------------------------------------------------------------- quantized matrix ops

namespace tessera::graph::onnx_import {

std::optional<Dtype> QuantOps::weight_codes(const Value& w) const {
  if (!w.constant) return std::nullopt;
  const int32_t elem = w.quant_elem ? w.quant_elem : w.elem;
  if (elem == kOnnxInt4) return Dtype::kInt4;  // int4 codes are weights only
  return code_dtype(elem);
}

// QLinearConv (x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B) and QLinearMatMul
// (a, ..., b, ..., y_scale, y_zp): the Conv / MatMul on the codes, whose output is codes
// of y_zp's type (the activate requantizes).
void QuantOps::op_qlinear(const Node& n) {
  const bool conv = n.op_type() == "QLinearConv";
  Value& x = m_.val(n, 0);
  x.quant_elem = m_.val(n, 2).elem;
  mark_codes(x, x.quant_elem);
  Value& w = m_.val(n, 3);
  w.quant_elem = m_.val(n, 5).elem;
  mark_codes(w, w.quant_elem);
  m_.synthetic(n, conv ? "Conv" : "MatMul", {n.input(0), n.input(3)}, n.output(0), "", [&](Node& s) {
    if (conv) *s.mutable_attribute() = n.attribute();
  });
  Value& o = m_.out(n);
  o.quant_elem = m_.val(n, 7).elem;
  mark_codes(o, o.quant_elem);
}

// ConvInteger (x, w, x_zp, w_zp) and MatMulInteger (a, b, a_zp, b_zp): the Conv / MatMul
// on the codes; the int32 result is the accumulators (the Cast and the scale Mul after it
// are the activate's dequantization).
void QuantOps::op_integer(const Node& n) {
  const bool conv = n.op_type() == "ConvInteger";
  for (int i : {0, 1}) {
    Value& v = m_.val(n, i);
    if (v.constant) continue;
    if (m_.has_input(n, i + 2)) v.quant_elem = m_.val(n, i + 2).elem;
    else if (!v.quant_elem) v.quant_elem = v.elem;
    mark_codes(v, v.quant_elem);
  }
  m_.synthetic(n, conv ? "Conv" : "MatMul", {n.input(0), n.input(1)}, n.output(0), "", [&](Node& s) {
    if (conv) *s.mutable_attribute() = n.attribute();
  });
}

}  // namespace tessera::graph::onnx_import
