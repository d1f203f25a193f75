#pragma once
// ONNX models -> Graph IR (DESIGN.md §2). Reads the protobuf with Debian's libonnx
// (onnx_proto), binds dynamic dimensions, folds shape sub-graphs and constants,
// infers every value's shape, and maps NCHW activations onto the IR's per-sample
// channels-last layout. Errors are InputError naming the file and the node.
//
// The first axis of every graph input is the batch (for an input fed straight into an
// LSTM/GRU with layout 0, or into Gemm as a transposed A, the second axis): the batch
// becomes the IR's implicit batch and Graph::default_batch takes its bound value.
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
};

Graph load_onnx(const std::filesystem::path& path, const OnnxOptions& options = {}, OnnxImportInfo* info = nullptr);

// "x=1,3,224,224" -> {"x", {1, 3, 224, 224}}, for --input-shape. Throws InputError.
std::pair<std::string, std::vector<int64_t>> parse_input_shape(const std::string& text);

// The ONNX op types the importer has a handler for, sorted (the unsupported-node
// message lists exactly these).
std::vector<std::string> onnx_supported_ops();

// True when `path` names an ONNX model (by extension, case-insensitive ".onnx").
bool is_onnx_path(const std::filesystem::path& path);

}  // namespace tessera::graph
