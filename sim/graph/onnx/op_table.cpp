// The ONNX ops the importer knows, one row each (columns: op_table.h). Arity from ONNX's
// operator schemas across the opsets the importer reads; handlers in ops_*.cpp and
// control_flow.cpp; folding families in const_fold.cpp.
#include "sim/graph/onnx/op_table.h"

#include <algorithm>
#include <unordered_map>

#include "sim/graph/onnx/const_fold.h"
#include "sim/graph/onnx/importer.h"
#include "sim/graph/onnx/ops.h"

namespace tessera::graph::onnx_import {

// Friend of Importer: its handlers call the op-handler classes of ops.h and the Importer's ControlFlow. Rows by family.
struct OnnxRows {
  using Node = onnx::NodeProto;
  // Handlers shared by rows: the row says which IR op.
  static void unary(Importer& m, const Node& n, const OnnxOp& r) { VectorOps(m).op_unary(n, r.kind); }
  static void activation(Importer& m, const Node& n, const OnnxOp& r) { VectorOps(m).op_activation(n, r.kind); }
  static void scalar(Importer& m, const Node& n, const OnnxOp& r) { VectorOps(m).op_with_scalar(n, r.kind, r.scalar, r.scalar_first); }
  static void binary(Importer& m, const Node& n, const OnnxOp& r) { VectorOps(m).op_binary(n, r.kind_of ? r.kind_of(m, n) : r.kind); }
  static void variadic(Importer& m, const Node& n, const OnnxOp& r) { VectorOps(m).op_variadic(n, r.kind); }
  static void reduce(Importer& m, const Node& n, const OnnxOp& r) { VectorOps(m).op_reduce(n, r.kind); }
  static void pool(Importer& m, const Node& n, const OnnxOp& r) { MatrixOps(m).op_pool(n, r.kind); }
  static void global_pool(Importer& m, const Node& n, const OnnxOp& r) { MatrixOps(m).op_global_pool(n, r.kind); }
  static void arg(Importer& m, const Node& n, const OnnxOp& r) { VectorOps(m).op_arg(n, r.kind); }
  static void reshape_like(Importer& m, const Node& n, const OnnxOp&) { LayoutOps(m).op_reshape_like(n); }
  static void softmax(Importer& m, const Node& n, const OnnxOp&) { VectorOps(m).op_softmax(n); }
  static void qlinear(Importer& m, const Node& n, const OnnxOp&) { QuantOps(m).op_qlinear(n); }
  static void integer(Importer& m, const Node& n, const OnnxOp&) { QuantOps(m).op_integer(n); }
  static void resize(Importer& m, const Node& n, const OnnxOp&) { LayoutOps(m).op_resize(n); }
  static OpKind mod_kind(const Importer& m, const Node& n) { return m.attr_i(n, "fmod", 0) ? OpKind::kFmod : OpKind::kMod; }

  static std::vector<OnnxOp> shapes_and_control_flow();
  static std::vector<OnnxOp> matrix_and_normalisation();
  static std::vector<OnnxOp> elementwise();
  static std::vector<OnnxOp> reductions_and_quantization();
  static std::vector<OnnxOp> data_movement();
  static std::vector<OnnxOp> host_work();
};

namespace {
using B = BatchRule;
using R = ReshapeRule;
using F = Folder;
constexpr int kAny = OnnxArity::kAny;
constexpr uint8_t kMatrix = kMacs;
}  // namespace

std::vector<OnnxOp> OnnxRows::shapes_and_control_flow() {
  return {
      // ---- constants and shapes (folded)
      {.name = "Constant", .arity = {0, 0}, .fold = &F::constant},
      {.name = "ConstantOfShape", .arity = {1, 1}, .fold = &F::constant_of_shape},
      {.name = "Range", .arity = {3, 3},
       .handle = [](Importer&, const Node&, const OnnxOp&) {
         throw Unsupported{"start, limit or delta computed from the activations (a data-dependent shape)"};
       },
       .fold = &F::range},
      {.name = "Shape", .arity = {1, 1}, .folds_always = true, .fold = &F::shape},
      {.name = "Size", .arity = {1, 1}, .folds_always = true, .fold = &F::size},
      // ---- control flow: inlined (each checks its own inputs)
      {.name = "If", .arity = {1, 1}, .handle = [](Importer& m, const Node& n, const OnnxOp&) { m.control_flow_.op_if(n); }, .subgraphs = true},
      {.name = "Loop", .arity = {2, kAny}, .handle = [](Importer& m, const Node& n, const OnnxOp&) { m.control_flow_.op_loop(n); }, .subgraphs = true},
      {.name = "Scan", .arity = {1, kAny}, .handle = [](Importer& m, const Node& n, const OnnxOp&) { m.control_flow_.op_scan(n); }, .subgraphs = true},
  };
}

std::vector<OnnxOp> OnnxRows::matrix_and_normalisation() {
  return {
      // ---- matrix ops
      {.name = "Conv", .arity = {2, 3}, .handle = [](Importer& m, const Node& n, const OnnxOp&) { MatrixOps(m).op_conv(n, false); },
       .batch = B::kFirstAxis, .roles = kMatrix | kSpatial, .streamed_inputs = 1},
      {.name = "ConvTranspose", .arity = {2, 3}, .handle = [](Importer& m, const Node& n, const OnnxOp&) { MatrixOps(m).op_conv(n, true); },
       .batch = B::kFirstAxis, .roles = kMatrix | kSpatial, .streamed_inputs = 1},
      {.name = "Gemm", .arity = {2, 3}, .handle = [](Importer& m, const Node& n, const OnnxOp&) { MatrixOps(m).op_gemm(n); },
       .fold = &F::gemm, .batch = B::kGemm, .roles = kMatrix, .streamed_inputs = 1},
      {.name = "MatMul", .arity = {2, 2}, .handle = [](Importer& m, const Node& n, const OnnxOp&) { MatrixOps(m).op_matmul(n); },
       .fold = &F::matmul, .batch = B::kFirstAxis, .roles = kMatrix, .streamed_inputs = 2},
      {.name = "LSTM", .arity = {3, 8}, .handle = [](Importer& m, const Node& n, const OnnxOp&) { MatrixOps(m).op_recurrent(n, true); },
       .batch = B::kRecurrent, .roles = kMatrix},
      {.name = "GRU", .arity = {3, 6}, .handle = [](Importer& m, const Node& n, const OnnxOp&) { MatrixOps(m).op_recurrent(n, false); },
       .batch = B::kRecurrent, .roles = kMatrix},
      {.name = "RNN", .arity = {3, 6}, .batch = B::kRecurrent, .roles = kMatrix},  // no handler: its state still says the batch
      {.name = "Einsum", .arity = {1, kAny}, .handle = [](Importer& m, const Node& n, const OnnxOp&) { MatrixOps(m).op_einsum(n); },
       .fold = &F::einsum, .roles = kMatrix},
      {.name = "QLinearConv", .arity = {8, 9}, .handle = qlinear, .roles = kMatrix | kSpatial},
      {.name = "QLinearMatMul", .arity = {8, 8}, .handle = qlinear, .roles = kMatrix},
      {.name = "ConvInteger", .arity = {2, 4}, .handle = integer, .roles = kMatrix | kSpatial},
      {.name = "MatMulInteger", .arity = {2, 4}, .handle = integer, .roles = kMatrix},
      // ---- normalisation, softmax, pooling
      {.name = "BatchNormalization", .arity = {5, 5}, .handle = [](Importer& m, const Node& n, const OnnxOp&) { VectorOps(m).op_batchnorm(n); },
       .fold = &F::same_shape, .batch = B::kFirstAxis, .roles = kSpatial},
      {.name = "LayerNormalization", .arity = {2, 3}, .handle = [](Importer& m, const Node& n, const OnnxOp&) { VectorOps(m).op_layernorm(n); },
       .fold = &F::same_shape},
      {.name = "Softmax", .arity = {1, 1}, .handle = softmax, .fold = &F::same_shape, .batch = B::kKeeps},
      {.name = "LogSoftmax", .arity = {1, 1}, .handle = softmax, .fold = &F::same_shape, .batch = B::kKeeps},
      {.name = "MaxPool", .arity = {1, 1}, .required = {"kernel_shape"}, .handle = pool, .kind = OpKind::kMaxPool,
       .batch = B::kFirstAxis, .roles = kSpatial},
      {.name = "AveragePool", .arity = {1, 1}, .required = {"kernel_shape"}, .handle = pool, .kind = OpKind::kAvgPool,
       .batch = B::kFirstAxis, .roles = kSpatial},
      {.name = "GlobalAveragePool", .arity = {1, 1}, .handle = global_pool, .kind = OpKind::kGlobalAvgPool,
       .batch = B::kFirstAxis, .roles = kSpatial},
      {.name = "GlobalMaxPool", .arity = {1, 1}, .handle = global_pool, .kind = OpKind::kGlobalMaxPool,
       .batch = B::kFirstAxis, .roles = kSpatial},
  };
}

std::vector<OnnxOp> OnnxRows::elementwise() {
  return {
      // ---- activations (fused into the matrix layer before them when possible)
      {.name = "Relu", .arity = {1, 1}, .handle = activation, .fold = &F::unary, .kind = OpKind::kRelu, .batch = B::kKeeps,
       .roles = kSpatialThrough},
      {.name = "Sigmoid", .arity = {1, 1}, .handle = activation, .fold = &F::unary, .kind = OpKind::kSigmoid,
       .batch = B::kKeeps, .roles = kSpatialThrough},
      {.name = "Tanh", .arity = {1, 1}, .handle = activation, .fold = &F::unary, .kind = OpKind::kTanh, .batch = B::kKeeps,
       .roles = kSpatialThrough},
      {.name = "Clip", .arity = {1, 3}, .handle = activation, .fold = &F::clip, .kind = OpKind::kClip, .batch = B::kKeeps,
       .roles = kSpatialThrough},
      // ---- element-wise unary: the OpDef's kernel folds them
      {.name = "LeakyRelu", .arity = {1, 1}, .handle = unary, .fold = &F::same_shape, .kind = OpKind::kLeakyRelu, .batch = B::kKeeps},
      {.name = "HardSigmoid", .arity = {1, 1}, .handle = unary, .fold = &F::same_shape, .kind = OpKind::kHardSigmoid,
       .batch = B::kKeeps},
      {.name = "HardSwish", .arity = {1, 1}, .handle = unary, .fold = &F::same_shape, .kind = OpKind::kHardSwish, .batch = B::kKeeps},
      // Gelu's `approximate` (tanh form) is not the OpDef's erf form: shapes only when folded.
      {.name = "Gelu", .microsoft = true, .arity = {1, 1}, .handle = unary, .fold = &F::same_shape, .kind = OpKind::kGelu,
       .batch = B::kKeeps},
      {.name = "FastGelu", .microsoft = true, .arity = {1, 2}, .handle = unary, .kind = OpKind::kGelu},
      {.name = "Erf", .arity = {1, 1}, .handle = unary, .fold = &F::unary, .kind = OpKind::kErf, .batch = B::kKeeps},
      {.name = "Sqrt", .arity = {1, 1}, .handle = unary, .fold = &F::unary, .kind = OpKind::kSqrt, .batch = B::kKeeps},
      {.name = "Exp", .arity = {1, 1}, .handle = unary, .fold = &F::unary, .kind = OpKind::kExp, .batch = B::kKeeps},
      {.name = "Log", .arity = {1, 1}, .handle = unary, .fold = &F::unary, .kind = OpKind::kLog, .batch = B::kKeeps},
      {.name = "Abs", .arity = {1, 1}, .handle = unary, .fold = &F::unary, .kind = OpKind::kAbs, .batch = B::kKeeps},
      {.name = "Sign", .arity = {1, 1}, .handle = unary, .fold = &F::unary, .kind = OpKind::kSign},
      {.name = "Floor", .arity = {1, 1}, .handle = unary, .fold = &F::unary, .kind = OpKind::kFloor},
      {.name = "Ceil", .arity = {1, 1}, .handle = unary, .fold = &F::unary, .kind = OpKind::kCeil},
      {.name = "Round", .arity = {1, 1}, .handle = unary, .fold = &F::unary, .kind = OpKind::kRound},
      {.name = "Not", .arity = {1, 1}, .handle = unary, .fold = &F::unary, .kind = OpKind::kNot},
      {.name = "Softplus", .arity = {1, 1}, .handle = unary, .fold = &F::unary, .kind = OpKind::kSoftplus, .batch = B::kKeeps},
      {.name = "Softsign", .arity = {1, 1}, .handle = unary, .fold = &F::unary, .kind = OpKind::kSoftsign, .batch = B::kKeeps},
      {.name = "Mish", .arity = {1, 1}, .handle = unary, .fold = &F::unary, .kind = OpKind::kMish, .batch = B::kKeeps},
      {.name = "Sin", .arity = {1, 1}, .handle = unary, .fold = &F::unary, .kind = OpKind::kSin, .batch = B::kKeeps},
      {.name = "Cos", .arity = {1, 1}, .handle = unary, .fold = &F::unary, .kind = OpKind::kCos, .batch = B::kKeeps},
      {.name = "Tan", .arity = {1, 1}, .handle = unary, .fold = &F::unary, .kind = OpKind::kTan, .batch = B::kKeeps},
      {.name = "Asin", .arity = {1, 1}, .handle = unary, .fold = &F::unary, .kind = OpKind::kAsin, .batch = B::kKeeps},
      {.name = "Acos", .arity = {1, 1}, .handle = unary, .fold = &F::unary, .kind = OpKind::kAcos, .batch = B::kKeeps},
      {.name = "Atan", .arity = {1, 1}, .handle = unary, .fold = &F::unary, .kind = OpKind::kAtan, .batch = B::kKeeps},
      {.name = "Sinh", .arity = {1, 1}, .handle = unary, .fold = &F::unary, .kind = OpKind::kSinh, .batch = B::kKeeps},
      {.name = "Cosh", .arity = {1, 1}, .handle = unary, .fold = &F::unary, .kind = OpKind::kCosh, .batch = B::kKeeps},
      {.name = "Asinh", .arity = {1, 1}, .handle = unary, .fold = &F::unary, .kind = OpKind::kAsinh, .batch = B::kKeeps},
      {.name = "Acosh", .arity = {1, 1}, .handle = unary, .fold = &F::unary, .kind = OpKind::kAcosh, .batch = B::kKeeps},
      {.name = "Atanh", .arity = {1, 1}, .handle = unary, .fold = &F::unary, .kind = OpKind::kAtanh, .batch = B::kKeeps},
      // Their alpha (and gamma) are not carried by the IR: shapes only when folded.
      {.name = "Elu", .arity = {1, 1}, .handle = unary, .fold = &F::same_shape, .kind = OpKind::kElu, .batch = B::kKeeps},
      {.name = "Selu", .arity = {1, 1}, .handle = unary, .fold = &F::same_shape, .kind = OpKind::kSelu, .batch = B::kKeeps},
      {.name = "Celu", .arity = {1, 1}, .handle = unary, .fold = &F::same_shape, .kind = OpKind::kCelu, .batch = B::kKeeps},
      {.name = "ThresholdedRelu", .arity = {1, 1}, .handle = unary, .fold = &F::same_shape, .kind = OpKind::kThresholdedRelu,
       .batch = B::kKeeps},
      {.name = "Neg", .arity = {1, 1}, .handle = scalar, .fold = &F::unary, .kind = OpKind::kMul, .scalar = -1.0f,
       .batch = B::kKeeps},  // x * -1
      {.name = "Reciprocal", .arity = {1, 1}, .handle = scalar, .fold = &F::unary, .kind = OpKind::kDiv, .scalar = 1.0f,
       .scalar_first = true, .batch = B::kKeeps},  // 1 / x
      // ---- element-wise on several inputs (broadcasting)
      {.name = "Add", .arity = {2, 2}, .handle = binary, .fold = &F::binary, .kind = OpKind::kAdd, .batch = B::kKeepsAll,
       .roles = kSpatialThrough},
      {.name = "Sub", .arity = {2, 2}, .handle = binary, .fold = &F::binary, .kind = OpKind::kSub, .batch = B::kKeepsAll,
       .roles = kSpatialThrough},
      {.name = "Mul", .arity = {2, 2}, .handle = binary, .fold = &F::binary, .kind = OpKind::kMul, .batch = B::kKeepsAll,
       .roles = kSpatialThrough},
      {.name = "Div", .arity = {2, 2}, .handle = binary, .fold = &F::binary, .kind = OpKind::kDiv, .batch = B::kKeepsAll,
       .roles = kSpatialThrough},
      {.name = "Pow", .arity = {2, 2}, .handle = binary, .fold = &F::binary, .kind = OpKind::kPow, .batch = B::kKeeps},
      // PRelu's slope broadcasts to x (per channel: [C, 1, 1] against [N, C, H, W]).
      {.name = "PRelu", .arity = {2, 2}, .handle = binary, .fold = &F::binary, .kind = OpKind::kPRelu, .batch = B::kKeeps},
      // Sum of n inputs: a chain of n - 1 adds, as Max/Min.
      {.name = "Sum", .arity = {1, kAny}, .handle = variadic, .fold = &F::binary, .kind = OpKind::kAdd, .batch = B::kKeepsAll},
      {.name = "Mod", .arity = {2, 2}, .handle = binary, .fold = &F::binary, .kind = OpKind::kMod, .kind_of = mod_kind},
      {.name = "Max", .arity = {1, kAny}, .handle = variadic, .fold = &F::binary, .kind = OpKind::kMax, .batch = B::kKeepsAll},
      {.name = "Min", .arity = {1, kAny}, .handle = variadic, .fold = &F::binary, .kind = OpKind::kMin, .batch = B::kKeepsAll},
      {.name = "Equal", .arity = {2, 2}, .handle = binary, .fold = &F::binary, .kind = OpKind::kEqual, .boolean = true},
      {.name = "Less", .arity = {2, 2}, .handle = binary, .fold = &F::binary, .kind = OpKind::kLess, .boolean = true},
      {.name = "Greater", .arity = {2, 2}, .handle = binary, .fold = &F::binary, .kind = OpKind::kGreater, .boolean = true},
      {.name = "LessOrEqual", .arity = {2, 2}, .handle = binary, .fold = &F::binary, .kind = OpKind::kLessEqual, .boolean = true},
      {.name = "GreaterOrEqual", .arity = {2, 2}, .handle = binary, .fold = &F::binary, .kind = OpKind::kGreaterEqual,
       .boolean = true},
      {.name = "And", .arity = {2, 2}, .handle = binary, .fold = &F::binary, .kind = OpKind::kAnd, .boolean = true},
      {.name = "Or", .arity = {2, 2}, .handle = binary, .fold = &F::binary, .kind = OpKind::kOr, .boolean = true},
      {.name = "Where", .arity = {3, 3}, .handle = binary, .fold = &F::where, .kind = OpKind::kWhere},
  };
}

std::vector<OnnxOp> OnnxRows::reductions_and_quantization() {
  return {
      // ---- scans, selection, reductions
      {.name = "CumSum", .arity = {2, 2}, .handle = [](Importer& m, const Node& n, const OnnxOp&) { VectorOps(m).op_cumsum(n); },
       .fold = &F::cum_sum},
      {.name = "TopK", .arity = {2, 2}, .legacy_until = 10, .legacy_arity = {1, 1},  // k: an attribute, then an input
       .handle = [](Importer& m, const Node& n, const OnnxOp&) { VectorOps(m).op_topk(n); }, .fold = &F::top_k},
      {.name = "ArgMax", .arity = {1, 1}, .handle = arg, .fold = &F::arg_max, .kind = OpKind::kArgMax},
      {.name = "ArgMin", .arity = {1, 1}, .handle = arg, .fold = &F::arg_min, .kind = OpKind::kArgMin},
      {.name = "ReduceMean", .arity = {1, 2}, .handle = reduce, .fold = &F::reduce_mean, .kind = OpKind::kReduceMean},
      {.name = "ReduceSum", .arity = {1, 2}, .handle = reduce, .fold = &F::reduce_sum, .kind = OpKind::kReduceSum},
      {.name = "ReduceMax", .arity = {1, 2}, .handle = reduce, .fold = &F::reduce_max, .kind = OpKind::kReduceMax},
      {.name = "ReduceMin", .arity = {1, 2}, .fold = &F::reduce_min},
      {.name = "ReduceProd", .arity = {1, 2}, .fold = &F::reduce_prod},
      {.name = "ReduceL1", .arity = {1, 2}, .fold = &F::reduce_shapes_only},
      {.name = "ReduceL2", .arity = {1, 2}, .fold = &F::reduce_shapes_only},
      {.name = "ReduceLogSum", .arity = {1, 2}, .fold = &F::reduce_shapes_only},
      {.name = "ReduceLogSumExp", .arity = {1, 2}, .fold = &F::reduce_shapes_only},
      {.name = "ReduceSumSquare", .arity = {1, 2}, .fold = &F::reduce_shapes_only},
      // ---- quantization
      {.name = "QuantizeLinear", .arity = {2, 3}, .handle = [](Importer& m, const Node& n, const OnnxOp&) { QuantOps(m).op_quantize(n); },
       .fold = &F::quantization, .kind = OpKind::kQuantize, .batch = B::kKeeps, .roles = kSpatialThrough},
      {.name = "DequantizeLinear", .arity = {2, 3}, .handle = [](Importer& m, const Node& n, const OnnxOp&) { QuantOps(m).op_dequantize(n); },
       .fold = &F::quantization, .kind = OpKind::kDequantize, .batch = B::kKeeps, .roles = kSpatialThrough},
      {.name = "DynamicQuantizeLinear", .arity = {1, 1},
       .handle = [](Importer& m, const Node& n, const OnnxOp&) { QuantOps(m).op_dynamic_quantize(n); }, .fold = &F::dynamic_quantize,
       .roles = kSpatialThrough},
  };
}

std::vector<OnnxOp> OnnxRows::data_movement() {
  return {
      // ---- reshapes and precision (aliases: no data moves)
      {.name = "Reshape", .arity = {2, 2}, .handle = reshape_like, .fold = &F::reshape, .reshape = R::kReshape, .roles = kAliasOf0},
      {.name = "Flatten", .arity = {1, 1}, .handle = reshape_like, .fold = &F::reshape, .reshape = R::kFlatten, .roles = kAliasOf0},
      {.name = "Squeeze", .arity = {1, 2}, .handle = reshape_like, .fold = &F::reshape, .batch = B::kSqueeze,
       .reshape = R::kSqueeze, .roles = kAliasOf0},
      {.name = "Unsqueeze", .arity = {1, 2}, .handle = reshape_like, .fold = &F::reshape, .batch = B::kUnsqueeze,
       .reshape = R::kUnsqueeze, .roles = kAliasOf0},
      {.name = "Identity", .arity = {1, 1}, .handle = reshape_like, .fold = &F::pass, .batch = B::kKeeps,
       .roles = kAliasOf0 | kSpatialThrough},
      {.name = "Dropout", .arity = {1, 3}, .handle = reshape_like, .fold = &F::pass, .batch = B::kKeeps},
      {.name = "Cast", .arity = {1, 1}, .required = {"to"}, .handle = reshape_like, .fold = &F::cast, .batch = B::kKeeps,
       .roles = kSpatialThrough},
      {.name = "CastLike", .arity = {2, 2}, .handle = reshape_like, .fold = &F::cast, .batch = B::kKeeps},
      // ---- data movement
      {.name = "Transpose", .arity = {1, 1}, .handle = [](Importer& m, const Node& n, const OnnxOp&) { LayoutOps(m).op_transpose(n); },
       .fold = &F::transpose, .batch = B::kTranspose},
      {.name = "Concat", .arity = {1, kAny}, .required = {"axis"},
       .handle = [](Importer& m, const Node& n, const OnnxOp&) { LayoutOps(m).op_concat(n); }, .fold = &F::concat, .batch = B::kKeepsAll},
      {.name = "Split", .arity = {1, 2}, .handle = [](Importer& m, const Node& n, const OnnxOp&) { LayoutOps(m).op_split(n); },
       .fold = &F::split, .batch = B::kSplits},
      {.name = "Slice", .arity = {3, 5}, .legacy_until = 10, .legacy_arity = {1, 1},  // starts/ends: attributes, then inputs
       .legacy_required = {"starts", "ends"}, .handle = [](Importer& m, const Node& n, const OnnxOp&) { LayoutOps(m).op_slice(n); },
       .fold = &F::slice, .batch = B::kKeeps},
      {.name = "Gather", .arity = {2, 2}, .handle = [](Importer& m, const Node& n, const OnnxOp&) { LayoutOps(m).op_gather(n); },
       .fold = &F::gather, .batch = B::kGather},
      {.name = "Expand", .arity = {2, 2}, .handle = [](Importer& m, const Node& n, const OnnxOp&) { LayoutOps(m).op_expand(n); },
       .fold = &F::expand},
      {.name = "Tile", .arity = {2, 2}, .handle = [](Importer& m, const Node& n, const OnnxOp&) { VectorOps(m).op_tile(n); }, .fold = &F::tile},
      {.name = "Pad", .arity = {2, 4}, .legacy_until = 11, .legacy_arity = {1, 1},
       .handle = [](Importer& m, const Node& n, const OnnxOp&) { LayoutOps(m).op_pad(n); }, .batch = B::kKeeps, .roles = kSpatialThrough},
      {.name = "Resize", .arity = {1, 4}, .handle = resize, .roles = kSpatial},
      {.name = "Upsample", .arity = {1, 2}, .handle = resize, .roles = kSpatial},
  };
}

std::vector<OnnxOp> OnnxRows::host_work() {
  return {
      // ---- host work: outputs whose size depends on the data (NonMaxSuppression, NonZero,
      // Unique), gathers by index lists the vector unit has no addressing for, strings and sequences
      {.name = "NonMaxSuppression", .host = true},
      {.name = "NonZero", .host = true},
      {.name = "Unique", .host = true},
      {.name = "GatherND", .host = true},
      {.name = "GatherElements", .host = true},
      {.name = "ScatterND", .host = true},
      {.name = "ScatterElements", .host = true},
      {.name = "StringNormalizer", .host = true},
      {.name = "StringConcat", .host = true},
      {.name = "StringSplit", .host = true},
      {.name = "RegexFullMatch", .host = true},
      {.name = "TfIdfVectorizer", .host = true},
      {.name = "SequenceAt", .host = true},
      {.name = "SequenceConstruct", .host = true},
      {.name = "SequenceEmpty", .host = true},
      {.name = "SequenceErase", .host = true},
      {.name = "SequenceInsert", .host = true},
      {.name = "SequenceLength", .host = true},
      {.name = "SequenceMap", .host = true},
      {.name = "SplitToSequence", .host = true},
      {.name = "ConcatFromSequence", .host = true},
  };
}

const std::vector<OnnxOp>& onnx_op_table() {
  static const std::vector<OnnxOp> rows = [] {
    std::vector<OnnxOp> all;
    for (auto family : {OnnxRows::shapes_and_control_flow, OnnxRows::matrix_and_normalisation, OnnxRows::elementwise,
                        OnnxRows::reductions_and_quantization, OnnxRows::data_movement, OnnxRows::host_work}) {
      for (OnnxOp& r : family()) all.push_back(std::move(r));
    }
    return all;
  }();
  return rows;
}


const OnnxOp* find_onnx_op(std::string_view op_type) {
  static const auto index = [] {
    std::unordered_map<std::string_view, const OnnxOp*> by_name;
    for (const OnnxOp& r : onnx_op_table()) by_name.emplace(r.name, &r);  // a second row of a name: the test fails
    return by_name;
  }();
  const auto it = index.find(op_type);
  return it == index.end() ? nullptr : it->second;
}

// The ONNX op types with a handler (control flow aside), sorted: the unsupported-node
// message and onnx_supported_ops() read the table, so they cannot drift from it.
std::vector<std::string> supported_op_types() {
  std::vector<std::string> ops;
  for (const OnnxOp& row : onnx_op_table()) {
    if (row.handle && !row.subgraphs) ops.emplace_back(row.name);
  }
  std::sort(ops.begin(), ops.end());
  return ops;
}

}  // namespace tessera::graph::onnx_import
