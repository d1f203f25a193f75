#pragma once
// ONNX models -> Graph IR (DESIGN.md §2). Reads the protobuf with Debian's libonnx
// (onnx_proto), binds dynamic dimensions, folds shape sub-graphs and constants,
// infers every value's shape, and maps NCHW activations onto the IR's per-sample
// channels-last layout. Errors are InputError naming the file and the node.
//
// Each graph input's batch axis is inferred from how the input is used: the first axis,
// unless the input reaches an LSTM/GRU (layout 0: the second axis of X and of the initial
// states, also through Gather/Slice/Squeeze/Unsqueeze/Transpose), Gemm as a transposed A,
// or a MatMul/Gemm/Conv on an axis other than its first, or shares the batch's named
// dimension with another input; OnnxOptions::batch_axes overrides it. The batch becomes
// the IR's implicit batch and Graph::default_batch takes its bound value.
// Control flow is inlined: an If whose condition folds (from shapes, constants or inputs
// bound by value) becomes its taken branch, a Loop or Scan with a trip count known at
// import time is unrolled (at most 65536 nodes per model).
// Weights only need their shapes; their values are read only where they matter for
// shapes (Reshape targets, Slice bounds, ...), also from external-data files.
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sim/common/dtype.h"
#include "sim/graph/graph.h"

namespace tessera::graph {

struct OnnxOptions {
  // Full ONNX shapes (batch first) for graph inputs: binds dynamic dims (dim_param or
  // unknown) and may override the batch. Other fixed dims must match the file.
  std::map<std::string, std::vector<int64_t>> input_shapes;
  // Graph inputs to treat as weights (ONNX's own test models feed weights as inputs).
  std::set<std::string> constant_inputs;
  // Graph inputs bound to values (--input-value sr=16000): constants whose elements are
  // known, so that conditions and trip counts computed from them fold.
  std::map<std::string, std::vector<double>> input_values;
  // The batch axis of graph inputs (--batch-axis state=1), overriding the inference.
  std::map<std::string, int64_t> batch_axes;
  Dtype activation_dtype = Dtype::kInt8;  // precision policy for every activation
  Dtype weight_dtype = Dtype::kInt8;      // and every weight
};

// What the importer saw and did, for tests and `tessera` diagnostics.
struct OnnxImportInfo {
  int64_t opset = 0;       // default-domain opset of the model
  int64_t batch = 1;       // bound batch
  std::string producer;    // e.g. "pytorch 2.1"
  // Every value's inferred ONNX shape at the bound batch (activations and constants).
  std::map<std::string, std::vector<int64_t>> value_shapes;
  // Nodes that produced no IR layer of their own, with why: "folded" (constant
  // sub-graph), "fused" (activation/bias/scale into the matrix layer before it),
  // "batchnorm folded", "alias" (reshape-like, no data moves), "host" (embedding lookup
  // done on the host: its output becomes a graph input).
  std::map<std::string, std::string> absorbed;
  // Per graph input (not initializers): the axis that holds the batch, -1 for none (a
  // scalar, a constant input or one bound by value).
  std::map<std::string, int64_t> batch_axes;
};

Graph load_onnx(const std::filesystem::path& path, const OnnxOptions& options = {}, OnnxImportInfo* info = nullptr);

// "x=1,3,224,224" -> {"x", {1, 3, 224, 224}}, for --input-shape. Throws InputError.
std::pair<std::string, std::vector<int64_t>> parse_input_shape(const std::string& text);

// "sr=16000" -> {"sr", {16000}}; "w=0.5,1" -> {"w", {0.5, 1}}, for --input-value. Throws InputError.
std::pair<std::string, std::vector<double>> parse_input_value(const std::string& text);

// "state=1" -> {"state", 1}, for --batch-axis. Throws InputError.
std::pair<std::string, int64_t> parse_batch_axis(const std::string& text);

// The ONNX op types the importer has a handler for, sorted (the unsupported-node
// message lists exactly these).
std::vector<std::string> onnx_supported_ops();

// True when `path` names an ONNX model (by extension, case-insensitive ".onnx").
bool is_onnx_path(const std::filesystem::path& path);

}  // namespace tessera::graph
