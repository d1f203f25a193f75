#pragma once
// Private to the ONNX importer: folding one node whose data inputs are all constant
// (const_fold.cpp). Its op's row (op_table.h) names the family below that evaluates it;
// element-wise families compute through the IR OpDef's fp32 kernel (sim/graph/ops), with
// an exact integer form for shape arithmetic (sym_binary, sym_unary).
#include "sim/graph/onnx/importer.h"
#include "sim/graph/onnx/op_table.h"

namespace tessera::graph::onnx_import {

class Folder {
 public:
  // `row`: n's op row; null for an op the table does not know (unsupported on constants).
  Folder(Importer& m, const onnx::NodeProto& n, const OnnxOp* row) : m_(m), n_(n), row_(row) {}
  void run();

  // ---- families (a row's `fold`)
  // generators: no data input
  void constant();
  void constant_of_shape();
  void range();
  // the shape of an activation or a constant
  void shape();
  void size();
  // output 0 keeps input 0's shape
  void pass();      // Identity, Dropout
  void cast();      // Cast, CastLike
  void quantization();  // QuantizeLinear, DequantizeLinear
  void unary();     // the OpDef's unary kernel (or binary with the row's scalar)
  void clip();
  void same_shape();  // shapes only (Softmax, LeakyRelu, normalisations)
  // element-wise on several inputs (broadcasting)
  void binary();  // Max and Min of more than two: pairwise, left to right
  void where();
  // data movement
  void reshape();  // Reshape, Flatten, Squeeze, Unsqueeze
  void concat();
  void gather();
  void slice();
  void expand();
  void transpose();
  void split();
  void tile();
  // along one axis
  void cum_sum();
  void arg_max();
  void arg_min();
  void top_k();
  // reductions (the other Reduce* ops: shapes only)
  void reduce_sum();
  void reduce_mean();
  void reduce_max();
  void reduce_min();
  void reduce_prod();
  void reduce_shapes_only();
  // shapes only
  void dynamic_quantize();
  void matmul();
  void gemm();
  void einsum();

 private:
  enum class Reduction { kNone, kSum, kMean, kMax, kMin, kProd };
  enum class AlongAxis { kCumSum, kArgMax, kArgMin, kTopK };

  const Value& first();  // input 0, the result's type from it; the node is absorbed as folded
  void finish(int output = 0);  // stores the result as output `output` (data dropped past the limits)
  void finish_same_shape();     // output 0, and the shape for the others (Dropout's mask)
  Value binary_of(const Value& x, const Value& y);
  void quantize_data(const Value& x);
  void reduce(Reduction how);
  void along_axis(AlongAxis how);
  OpKind kind() const;  // the row's IR op for this node

  Importer& m_;
  const onnx::NodeProto& n_;
  const OnnxOp* row_;
  Value res_;
};

}  // namespace tessera::graph::onnx_import
