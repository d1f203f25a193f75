#pragma once
// Private to the ONNX importer: the handlers of the ops that build IR layers, one class per
// family (the rows of op_table.cpp call them). Each works on the Importer's values and IR
// through the Importer's builders (ir_builder.cpp) and readers (node_reader.cpp); the
// classes hold nothing of their own, a handler is `MatrixOps(m).op_conv(n, false)`.
//   MatrixOps  ops_matrix.cpp  Conv, ConvTranspose, Gemm, MatMul, LSTM, GRU, Einsum, pooling
//   QuantOps   ops_quant.cpp   QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinear*, *Integer
//   VectorOps  ops_vector.cpp  activations, element-wise ops, normalisation, softmax, reductions
//   LayoutOps  ops_layout.cpp  reshape-like ops, Transpose, Concat, Split, Slice, Gather, Expand, Pad, Resize
#include "sim/graph/onnx/importer.h"

namespace tessera::graph::onnx_import {

// Ops on the systolic array, and the windowed ops that share their spatial attributes.
class MatrixOps {
 public:
  explicit MatrixOps(Importer& m) : m_(m) {}
  void op_conv(const onnx::NodeProto& n, bool transposed);
  void op_gemm(const onnx::NodeProto& n);
  void op_matmul(const onnx::NodeProto& n);
  void op_recurrent(const onnx::NodeProto& n, bool lstm);
  void op_pool(const onnx::NodeProto& n, OpKind kind);
  void op_global_pool(const onnx::NodeProto& n, OpKind kind);
  void op_einsum(const onnx::NodeProto& n);

  // Einsum: the equation parsed for two operands of the given ranks (ellipses expanded):
  // one label string per operand and the output's (checked; Unsupported otherwise).
  struct EinsumSpec {
    std::vector<std::string> in;
    std::string out;
  };
  EinsumSpec einsum_spec(const onnx::NodeProto& n, const std::vector<size_t>& ranks);
  SymShape einsum_shape(const onnx::NodeProto& n, const EinsumSpec& e, const std::vector<const SymShape*>& shapes);

 private:
  using Node = onnx::NodeProto;
  // Convolution and pooling windows.
  size_t spatial_dims(const Value& x, const std::string& what) const;  // 1 or 2, else unsupported
  SpatialAttrs spatial(const Node& n, size_t dims, const std::vector<int64_t>& kernel);
  void plan_padding(const Node& n, SpatialAttrs& a, const std::vector<int64_t>& in, bool transposed,
                    const std::vector<int64_t>& out_pad);
  int64_t window_out(const Node& n, const SpatialAttrs& a, const std::vector<int64_t>& in, size_t i, bool ceil_mode);

  Importer& m_;
};

// Quantized graphs: Q and DQ fold into the matrix layers next to them, else they are
// vector layers; QLinear and Integer ops are the matrix ops on codes.
class QuantOps {
 public:
  explicit QuantOps(Importer& m) : m_(m) {}
  void op_quantize(const onnx::NodeProto& n);
  void op_dequantize(const onnx::NodeProto& n);
  void op_dynamic_quantize(const onnx::NodeProto& n);
  void op_qlinear(const onnx::NodeProto& n);  // QLinearConv, QLinearMatMul
  void op_integer(const onnx::NodeProto& n);  // ConvInteger, MatMulInteger
  int32_t quantize_elem(const onnx::NodeProto& n);  // QuantizeLinear's output type
  std::optional<Dtype> weight_codes(const Value& w) const;  // the codes a weight holds, if any

 private:
  using Node = onnx::NodeProto;
  bool feeds_only_matrix_ops(const std::string& value, int depth = 0) const;  // through aliases
  void mark_codes(const Value& v, int32_t elem);  // v's IR tensor holds codes of type elem

  Importer& m_;
};

// Ops on the vector unit.
class VectorOps {
 public:
  explicit VectorOps(Importer& m) : m_(m) {}
  void op_batchnorm(const onnx::NodeProto& n);
  // `l` on input 0, in its preferred layout; the output has its shape. `onnx_axis`: l.axis, mapped to the IR.
  void op_elementwise(const onnx::NodeProto& n, Layer l, std::optional<int64_t> onnx_axis = std::nullopt);
  void op_unary(const onnx::NodeProto& n, OpKind kind);
  // Neg, Reciprocal: an element-wise op with a scalar constant `value` (the first operand when `const_first`).
  void op_with_scalar(const onnx::NodeProto& n, OpKind kind, float value, bool const_first);
  void op_activation(const onnx::NodeProto& n, OpKind kind);  // Relu, Clip, Sigmoid, Tanh: fused when possible
  void op_binary(const onnx::NodeProto& n, OpKind kind);
  void op_variadic(const onnx::NodeProto& n, OpKind kind);  // Max, Min of 1, 2 or more inputs: a chain of binary layers
  void op_softmax(const onnx::NodeProto& n);
  void op_layernorm(const onnx::NodeProto& n);
  void op_reduce(const onnx::NodeProto& n, OpKind kind);
  void op_cumsum(const onnx::NodeProto& n);
  void op_tile(const onnx::NodeProto& n);
  void op_topk(const onnx::NodeProto& n);
  void op_arg(const onnx::NodeProto& n, OpKind kind);  // ArgMax, ArgMin

 private:
  using Node = onnx::NodeProto;
  void op_clip_runtime(const Node& n);  // Clip whose bounds are activations: max, then min

  Importer& m_;
};

// Ops that move or reshape data.
class LayoutOps {
 public:
  explicit LayoutOps(Importer& m) : m_(m) {}
  void op_reshape_like(const onnx::NodeProto& n);  // Reshape, Flatten, Squeeze, Unsqueeze, Identity, Cast, Dropout, ...
  void op_transpose(const onnx::NodeProto& n);
  void op_concat(const onnx::NodeProto& n);
  void op_split(const onnx::NodeProto& n);
  std::vector<int64_t> split_sizes(const onnx::NodeProto& n, int64_t dim, int64_t axis);
  void op_slice(const onnx::NodeProto& n);
  void op_gather(const onnx::NodeProto& n);
  void op_expand(const onnx::NodeProto& n);
  void op_pad(const onnx::NodeProto& n);
  void op_resize(const onnx::NodeProto& n);

 private:
  using Node = onnx::NodeProto;
  int slice_ir(const Node& n, Value& in, int64_t onnx_axis, int64_t begin, int64_t end, int64_t step, int tensor,
               const std::string& out_name, const std::string& suffix, Shape* ir_out);

  Importer& m_;
};

}  // namespace tessera::graph::onnx_import
