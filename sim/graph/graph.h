#pragma once
// Graph IR: tensors with per-sample shapes and dtypes, and the layers between them.
// The batch dimension is implicit; the compiler multiplies it in.
//
// Layout: a tensor is stored as a 2-D array, rows = batch x (product of all but the
// last axis), cols = the last axis. Images are [H, W, C] (channels last); sequences
// are [T, features]; attention tensors are e.g. [heads, T, d].
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/common/dtype.h"

namespace tessera {
class YamlNode;
}

namespace tessera::graph {

using Shape = std::vector<int64_t>;  // per sample: [features], [rows, features], [H, W, C], ...

int64_t shape_elements(const Shape& shape);
std::string shape_text(const Shape& shape);  // "[56, 56, 64]"

enum class OpKind {
  kFc,
  kConv2d,
  kMaxPool,
  kAvgPool,
  kGlobalAvgPool,
  kFlatten,
  kConcat,
  kAdd,
  kMul,
  kSigmoid,
  kTanh,
  kRelu,
  // Matrix ops beyond fc/conv2d.
  kConvTranspose2d,  // transposed convolution: GEMM of input pixels x (kernel x filters), then overlap-add
  kMatmul,           // activation x activation (attention): the second operand is loaded as weights from the UB
  kLstm,             // a whole LSTM layer: input projection + per-step recurrent matmul and cell
  kGru,              // a whole GRU layer
  // Element-wise (vector unit). Binary ops broadcast (numpy rules, per-sample shapes);
  // with one input they combine it with a constant of shape `const_shape`.
  kSub,
  kDiv,
  kPow,
  kMax,
  kMin,
  kWhere,  // select(cond, a, b): inputs broadcast
  kSqrt,
  kErf,
  kExp,
  kGelu,
  kClip,
  kLeakyRelu,
  kHardSigmoid,
  kHardSwish,
  // Normalisation and reductions (vector unit).
  kBatchNorm,   // per-channel scale and shift (when it cannot be folded into a conv)
  kLayerNorm,   // normalise over the axes from `axis` on
  kSoftmax,     // along `axis`
  kReduceMean,  // over `axes`
  kReduceSum,
  kReduceMax,
  kGlobalMaxPool,
  // Spatial and layout ops.
  kResize,     // nearest / linear / cubic to `target_shape`
  kPad,        // constant/edge/reflect padding by `pads`
  kTranspose,  // permutes axes by `perm`: data moves
  kReshape,    // to `target_shape`: an alias, no data moves
  kSlice,      // along `axis`: begin/end/step; data moves (a copy)
  kExpand,     // broadcast to `target_shape`: data moves
  kSoftplus,   // log(1 + exp(x)), element-wise (vector unit)
  // Element-wise (vector unit): unary functions and rounding; comparisons and logic
  // give 1 or 0; mod takes the divisor's sign (Python's %), fmod the dividend's (C's fmod).
  kLog,
  kAbs,
  kSign,
  kFloor,
  kCeil,
  kRound,  // to nearest, halves to even
  kNot,
  kGreater,
  kGreaterEqual,
  kLess,
  kLessEqual,
  kEqual,
  kAnd,
  kOr,
  kMod,
  kFmod,
  // Scans, selection and copies (vector unit).
  kCumSum,  // running sum along `axis` (exclusive, reverse)
  kTopK,    // the k largest (or smallest) along `axis`: their values, or (`indices`) their positions
  kArgMax,  // position of the largest along `axis`
  kArgMin,
  kTile,    // repeats every axis `repeats[i]` times: data moves
  // Quantization (vector unit): values to integer codes of `quant_dtype` and back; the
  // dynamic form first finds the tensor's range (its scale and zero point).
  kQuantize,
  kDequantize,
  kDynamicQuantize,
  kSoftsign,  // x / (1 + |x|), element-wise (vector unit)
  // Element-wise functions of real exports (vector unit): Mish (YOLOv4/v7), the
  // trigonometric family (rotary position embeddings computed in the graph), exponential
  // linear units, and PRelu (x < 0 ? slope * x : x, slope broadcast: a binary op).
  kMish,  // x * tanh(softplus(x))
  kSin,
  kCos,
  kTan,
  kAsin,
  kAcos,
  kAtan,
  kSinh,
  kCosh,
  kAsinh,
  kAcosh,
  kAtanh,
  kElu,              // alpha (e^x - 1) below 0; ONNX's alpha is not carried (as leaky_relu)
  kSelu,             // gamma (alpha (e^x - 1) below 0, x above); alpha, gamma not carried
  kCelu,             // max(0, x) + min(0, alpha (e^(x/alpha) - 1)); alpha not carried
  kThresholdedRelu,  // x above alpha, else 0; alpha not carried
  kPRelu,
  // Add new ops above this line: tables over all ops iterate up to kOpCount.
  kOpCount,
};
std::string_view op_name(OpKind op);
bool is_matrix_op(OpKind op);   // runs on the systolic array
bool is_layout_op(OpKind op);   // flatten, reshape: no data moves (an alias of the input)
bool is_elementwise_op(OpKind op);  // one output element per (broadcast) input element

enum class Activation { kNone, kRelu, kSigmoid, kTanh, kRelu6 };
std::string_view activation_name(Activation a);

struct Tensor {
  std::string name;
  Shape shape;
  Dtype dtype = Dtype::kInt8;
  int producer = -1;  // layer index, -1 for graph inputs
  bool integer_values = false;  // graph input whose host values are integers (ONNX int/bool input: a mask)
  // The model stores integer codes of this type here (a quantized model's int8/uint8 input,
  // or a matrix layer's output that the model requantizes): see model_quantization().
  std::optional<Dtype> quantized;
};

struct Layer {
  std::string name;
  OpKind op = OpKind::kFc;
  std::vector<int> inputs;  // tensor ids
  int output = -1;          // tensor id
  Activation activation = Activation::kNone;
  Dtype weight_dtype = Dtype::kInt8;
  // Matrix ops: the model's own weight codes (int8/uint8 initializers, dequantized or not);
  // the precision policy keeps them (docs/precision.md).
  std::optional<Dtype> quantized_weights;
  Dtype quant_dtype = Dtype::kInt8;  // quantize, dynamic_quantize: the codes' type
  // fc: units; conv2d: filters
  int64_t out_features = 0;
  // conv2d / pooling window
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;                          // conv2d / conv_transpose2d channel groups (= channels: depthwise)
  int64_t output_pad_h = 0, output_pad_w = 0;  // conv_transpose2d
  bool ceil_mode = false;                      // pooling output size rounds up

  // lstm / gru
  int64_t hidden = 0;
  int64_t directions = 1;          // 1 or 2 (bidirectional)
  bool reverse = false;            // direction: reverse (with directions == 1); cumsum: from the end
  bool linear_before_reset = true; // gru: r applies after the recurrent matmul (PyTorch's form)
  bool peepholes = false;          // lstm

  // Vector / layout op attributes (axes are per-sample axes of the IR shape).
  int64_t axis = -1;                 // concat, softmax, layer_norm, slice
  std::vector<int64_t> axes;         // reductions
  bool keepdims = true;              // reductions, argmax/argmin
  bool select_last = false;          // argmax/argmin: the last of equal values (else the first)
  bool exclusive = false;            // cumsum: the sum of the elements before (not including) each
  int64_t k = 0;                     // topk
  bool largest = true;               // topk: the largest (else the smallest)
  bool indices = false;              // topk: the output is the positions (else the values)
  std::vector<int64_t> repeats;      // tile: per axis
  // clip: the bounds (infinite: none)
  float clip_min = -std::numeric_limits<float>::infinity();
  float clip_max = std::numeric_limits<float>::infinity();
  std::vector<int64_t> perm;         // transpose
  Shape target_shape;                // reshape (may hold one -1), resize, expand
  int64_t slice_begin = 0, slice_end = 0, slice_step = 1;  // slice
  std::vector<int64_t> pads;         // pad: begin for every axis, then end for every axis
  std::string mode;                  // resize: nearest|linear|cubic; pad: constant|edge|reflect
  Shape const_shape;                 // element-wise op with one input: the constant operand's shape
  bool has_const = false;
  // The constant's values when the workload gives them (ONNX constants of up to 4 Ki
  // elements; empty otherwise) and whether it is the first operand (1 - x, c / x).
  // Only functional mode reads them.
  std::vector<float> const_values;
  bool const_first = false;
  int const_index = -1;  // where: the operand (0 cond, 1 a, 2 b) the constant stands for; -1: the last
  // Matrix ops: a scalar Mul/Div after the layer that the importer absorbed
  // (attention's 1 / sqrt(d)), applied as results leave the accumulators.
  double output_multiplier = 1.0;

  // Matrix view of a matrix op for one sample: (M rows) x (K) times (K) x (N),
  // `gemm_groups` times (conv groups; attention heads for matmul). lstm/gru: the
  // input projection (M = steps, K = input features, N = gates x hidden).
  int64_t gemm_m_per_sample = 0;
  int64_t gemm_k = 0;
  int64_t gemm_n = 0;
  int64_t gemm_groups = 1;

  int64_t gates() const { return op == OpKind::kLstm ? 4 : op == OpKind::kGru ? 3 : 0; }
  int64_t weight_count() const;
  int64_t macs_per_sample() const;
};

// Work an accelerator of this kind leaves to the host (an imported model's
// NonMaxSuppression, data-dependent gathers, string and sequence ops, and whatever reads
// their results): no layer of the program. The tensors it reads are graph outputs, sent to
// host memory over PCIe; what it computes is the host's (docs/workloads.md, "Host work").
struct HostOp {
  std::string name;        // the model's node
  std::string op;          // its op type
  std::vector<int> reads;  // tensor ids the accelerator sends it (also in Graph::outputs)
};

struct Graph {
  std::string name;
  std::string description;
  std::string source;  // file it came from
  int64_t default_batch = 1;
  // Set when a YAML graph declares dtypes (its `dtype`, an input's or a layer's `dtype`,
  // `weight_dtype`): the graph's default dtype. The declared dtypes are then the precision
  // policy unless --precision overrides them (docs/precision.md, "Which precision runs").
  std::optional<Dtype> declared_dtype;
  std::vector<Tensor> tensors;
  std::vector<Layer> layers;  // topological order
  std::vector<int> inputs;    // tensor ids
  std::vector<int> outputs;   // tensor ids
  std::vector<HostOp> host_ops;  // in the model's order

  int64_t total_weights() const;
  int64_t total_macs_per_sample() const;
  int find_tensor(const std::string& name) const;  // -1 if absent
};

// A layer's inputs do not fit its op. The message names tensors and shapes, not the
// file: the YAML loader and the ONNX importer add the file and the layer/node.
class ShapeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The integer type whose codes each tensor holds as the model says (nullopt: none): a
// tensor marked `quantized`, the output of a quantize or dynamic_quantize layer (its
// quant_dtype), and the output of a layer that only copies its input's codes (reshape,
// transpose, slice, concat, ..., maxpool) when every input holds codes of the same type.
std::vector<std::optional<Dtype>> model_quantization(const Graph& g);

// Numpy-style broadcast of two per-sample shapes; throws ShapeError.
Shape broadcast_shapes(const Shape& a, const Shape& b);

// Output shape of `layer` from its attributes and its input tensors' shapes; fills the
// matrix view (gemm_*) and out_features. Shared by the YAML loader and the ONNX
// importer so both accept exactly the same graphs. Throws ShapeError.
Shape infer_layer(const Graph& g, Layer& layer);

// YAML graph format (docs/workloads.md). Throws InputError naming file, line and layer.
Graph load_graph_yaml(const std::filesystem::path& path);
Graph parse_graph_yaml(const YamlNode& root);

}  // namespace tessera::graph
