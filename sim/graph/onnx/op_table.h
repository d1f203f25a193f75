#pragma once
// Private to the ONNX importer: one row per ONNX op it knows (op_table.cpp). Every fact the
// importer has about an op is a column of its row: arity, handler, the batch-axis rule, host
// work, how it folds on constant inputs (through the IR OpDef's fp32 kernel, sim/graph/ops),
// and the roles the layout and quantization scans ask about. Nothing else in
// sim/graph/onnx/ keeps a list of op names; tests/sim/graph/test_onnx_op_table.cpp checks
// the rows.
//
// Adding an element-wise op: its OpKind line (sim/graph/graph.h), its OpDef row with the fp32
// kernel (sim/graph/ops/<family>.cpp), and one row here (`unary` below shows the columns).
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "sim/graph/graph.h"

namespace onnx {
class NodeProto;
}

namespace tessera::graph::onnx_import {

class Importer;
class Folder;

// Inputs a node may have (ONNX's operator schemas, across the opsets the importer reads).
struct OnnxArity {
  static constexpr int kAny = std::numeric_limits<int>::max();
  int min = -1, max = -1;  // -1: the row has no arity (host work, never dispatched)
};

// How a graph input's axes are followed through a node that reads it (batch_axis.cpp).
enum class BatchRule : uint8_t {
  kStops,      // the axes are not followed further (Reshape, Flatten, ...)
  kKeeps,      // output 0 has the axes of input 0 (element-wise, Slice, Pad, Softmax, ...)
  kKeepsAll,   // output 0 has the axes of every input (Add, Mul, Concat, ...)
  kSplits,     // every output has the axes of input 0 (Split)
  kFirstAxis,  // reads input 0's first axis as the batch (MatMul, Conv, pools)
  kGemm,       // as kFirstAxis; with transA, says input 0's axis 1 is the batch
  kRecurrent,  // says X's and the initial states' batch axis (LSTM, GRU, RNN; their layout)
  kGather,     // the gathered axis becomes the index's axes
  kSqueeze,
  kUnsqueeze,
  kTranspose,
};

// How a reshape-like op maps its input's shape (NodeShapes::reshape_like_shape).
enum class ReshapeRule : uint8_t { kNone, kReshape, kFlatten, kSqueeze, kUnsqueeze };

// Roles other scans ask about (bit set).
enum OnnxRole : uint8_t {
  kNoRole = 0,
  kMacs = 1,            // a matrix op: after host work it is a blocker (its MACs would go uncounted)
  kSpatial = 2,         // reads an image-like input: the graph input is stored channels last
  kSpatialThrough = 4,  // passes an image-like input on towards a spatial reader
  kAliasOf0 = 8,        // output 0 is input 0's data, reshaped at most (moves nothing)
};

struct OnnxOp {
  std::string_view name;    // ONNX op_type
  bool microsoft = false;   // also read from the com.microsoft domain (besides ai.onnx)
  OnnxArity arity;
  // Before opset `legacy_until` the op took attributes instead of inputs: its arity then,
  // and the attributes it needs then (Slice's starts and ends).
  int legacy_until = 0;
  OnnxArity legacy_arity;
  std::vector<std::string_view> legacy_required;
  std::vector<std::string_view> required;  // attributes the schema requires (a default would change the meaning)
  // Builds the IR for a node with activation inputs; null: only folded (or host work).
  void (*handle)(Importer& m, const onnx::NodeProto& n, const OnnxOp& row) = nullptr;
  bool subgraphs = false;  // If, Loop, Scan: inlined; they check their own inputs
  bool host = false;       // work an accelerator of this kind leaves to the host
  bool folds_always = false;  // folded whatever its inputs (Shape, Size: an activation's shape is known)
  // Evaluates the node when every data input is constant (shapes only when the data is not
  // known or too large); null: a node on constants is unsupported.
  void (Folder::*fold)() = nullptr;
  OpKind kind = OpKind::kOpCount;  // the IR op: its OpDef's fp32 kernel is the fold's
  // The IR op from the node's attributes when they choose it (Mod's fmod); null: `kind`.
  OpKind (*kind_of)(const Importer& m, const onnx::NodeProto& n) = nullptr;
  // Ops lowered onto a binary IR op with a scalar constant (Neg: x * -1, Reciprocal: 1 / x).
  float scalar = 0;
  bool scalar_first = false;
  bool boolean = false;  // the result is 0 or 1 (comparisons, And, Or): integers when folded
  BatchRule batch = BatchRule::kStops;
  ReshapeRule reshape = ReshapeRule::kNone;
  uint8_t roles = kNoRole;
  int streamed_inputs = 0;  // matrix ops: the first inputs that stream through the array (the rest are weights)

  bool handled() const { return handle != nullptr || fold != nullptr; }  // dispatch reaches it
  bool has(OnnxRole r) const { return (roles & r) != 0; }
};

// Every row, in the table's order; and the row of an op type (null: none).
const std::vector<OnnxOp>& onnx_op_table();
const OnnxOp* find_onnx_op(std::string_view op_type);
// The ONNX op types with a handler (control flow aside), sorted.
std::vector<std::string> supported_op_types();

}  // namespace tessera::graph::onnx_import
