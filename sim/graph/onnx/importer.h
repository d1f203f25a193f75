#pragma once
// Private to the ONNX importer (sim/graph/onnx/): the Importer that load_onnx runs and
// the value it tracks per ONNX name. Only these files see the protobuf headers; callers
// include sim/graph/onnx_importer.h.
//   model_reader.cpp     protobuf and opset, graph inputs and their bound shapes
//                        (--input-shape; the InputBinder), topological order
//   tensor_data.cpp      the TensorReader: tensor and initializer decoding (raw bytes, typed
//                        fields, external data and where it may live), the decode budget
//   node_reader.cpp      typed attributes, constant inputs, ONNX shapes and axes -> IR shapes
//   ir_builder.cpp       IR tensors and layers, NCHW <-> channels-last conversion, aliases
//   shape_inference.{h,cpp} NodeShapes: attributes and shapes shared by the constant and the activation paths
//   op_table.{h,cpp}     one row per ONNX op: arity, handler, batch-axis rule, host work, folding
//   const_fold.{h,cpp}   constant and shape sub-graphs: the Folder, one family per row
//   ops.h                the op handlers, one class per family:
//   ops_matrix.cpp         MatrixOps: Conv, ConvTranspose, Gemm, MatMul, LSTM, GRU, Einsum, pooling
//   ops_quant.cpp          QuantOps: QuantizeLinear, DequantizeLinear, QLinear and Integer ops
//   ops_vector.cpp         VectorOps: activations, element-wise ops, normalisation, softmax, reductions
//   ops_layout.cpp         LayoutOps: reshape-like ops, Transpose, Concat, Split, Slice, Gather, Expand, Pad, Resize
//   control_flow.{h,cpp} ControlFlow: If, Loop and Scan inlined at import time (conditions and trip counts folded)
//   batch_axis.cpp       UseIndex: which axis of each graph input holds the batch, from how the input is used
//   importer.cpp         validation, dispatch through the table, the driver, Blockers (one message), load_onnx
//   symbolic.{h,cpp}     the batch as a symbol, checked arithmetic, shape rules
//   text.{h,cpp}         names and messages
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "sim/common/checked_math.h"
#include "sim/common/error.h"
#include "sim/graph/graph.h"
#include "sim/graph/onnx/control_flow.h"
#include "sim/graph/onnx/op_table.h"
#include "sim/graph/onnx/symbolic.h"
#include "sim/graph/onnx/text.h"
#include "sim/graph/onnx_importer.h"

namespace tessera::graph::onnx_import {

// A node the importer cannot map: reported together with all others.
struct Unsupported {
  std::string why;
};

enum class Layout { kNatural, kChannelsLast };

struct Value {
  SymShape shape;          // full ONNX shape, the batch as a symbol
  int32_t elem = 1;        // ONNX element type
  bool constant = true;    // weights, shape tensors: no per-sample data
  bool has_data = false;   // constant whose elements are known
  bool is_float = false;
  std::vector<Sym> ints;       // integer data (may carry the batch)
  std::vector<double> floats;  // float data
  // Activations
  int tensor = -1;  // IR tensor, in `layout`
  Layout layout = Layout::kNatural;
  int other_tensor = -1;  // the same value converted to the other layout (cached)
  int graph_input = -1;   // an ONNX graph input not yet materialised in the IR
  bool prefer_channels_last = false;  // graph input that feeds convolutions
  bool poisoned = false;  // produced by an unsupported node
  // Computed on the host (by a host op or downstream of one): no IR tensor, no known shape.
  bool on_host = false;
  std::string host_by;    // "'node' (Op)": the host op it comes from (for messages)
  // The ONNX element type of the integer codes this value holds or was dequantized from
  // (DequantizeLinear of an int8 weight, QuantizeLinear's output); 0: none.
  int32_t quant_elem = 0;
  std::string producer;   // node name (for messages)
};

// A constant's elements as floats (for functional mode); empty when not known.
std::vector<float> constant_values(const Value& v);

constexpr int64_t kMaxFoldInts = 1 << 16;
constexpr int64_t kMaxFoldFloats = 1 << 12;
// A Constant node's value is decoded up to this many elements (functional mode's scales
// and biases); beyond it only its shape is kept, so a large tensor costs no memory.
constexpr int64_t kMaxDecodedElements = int64_t{1} << 22;
constexpr int64_t kMaxDecodeBudget = int64_t{1} << 23;  // decoded constants of a model together (<= 128 MiB)
// Nodes that inlining control flow (If branches, unrolled Loop and Scan bodies) may add to
// a model, nested subgraphs included: a loop of 10^9 iterations is an error, not a hang.
constexpr int64_t kMaxInlinedNodes = int64_t{1} << 16;

// The window of a convolution or pooling node, one entry per spatial axis.
struct SpatialAttrs {
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads: begins then ends
  std::string auto_pad;
};

// ONNX element types (TensorProto_DataType).
// ONNX element types newer than the installed headers (libonnx 1.12): TensorProto.DataType
// values of onnx.proto since 1.14 (FLOAT8E4M3FN 17, FLOAT8E5M2 19) and 1.16 (INT4 22). Their
// data is not decoded (weights' values are never read); the codes set the dtypes.
inline constexpr int32_t kOnnxFloat8E4m3fn = 17;
inline constexpr int32_t kOnnxFloat8E5m2 = 19;
inline constexpr int32_t kOnnxInt4 = 22;
bool is_float_type(int32_t t);
// The IR type of integer codes of ONNX type t (int8, uint8, int16); nullopt for others.
std::optional<Dtype> code_dtype(int32_t t);
int64_t elem_size(int32_t t);  // bytes per element; 0 for types without a fixed size

// Every graph of a model (subgraphs too), indexed for following an input's uses (batch_axis.cpp).
struct UseIndex {
  explicit UseIndex(const onnx::GraphProto& main);
  // The axis of graph input `input` (of rank `rank`) that holds the batch, from the ops it
  // reaches (through Gather, Slice, Squeeze, Unsqueeze, Transpose, element-wise ops and
  // If branches): LSTM/GRU/RNN inputs and Gemm's transposed A say so (`strong`); MatMul,
  // Gemm, Conv and pools read their first axis as the batch. -1: no use says.
  int usage_batch_axis(const std::string& input, int rank, bool& strong) const;

  std::unordered_map<std::string, std::vector<const onnx::NodeProto*>> readers;  // value -> nodes reading it
  std::unordered_map<std::string, std::vector<std::string>> flows;  // an If branch's output -> the If's
  std::unordered_map<std::string, const onnx::TensorProto*> tensors;  // initializers, Constant values
  std::unordered_map<std::string, const onnx::NodeProto*> constants;  // Constant nodes
};

// n's attribute `name`, of any type; null when n has none.
const onnx::AttributeProto* attr(const onnx::NodeProto& n, const std::string& name);

// A node's name for messages: its own, else its first output's.
inline std::string node_name(const onnx::NodeProto& n) {
  return n.name().empty() ? (n.output_size() ? n.output(0) : "?") : n.name();
}

// The nodes that block an import, reported together in one message (importer.cpp).
class Blockers {
 public:
  // Main-graph nodes whose op the importer has no handler or folding for (whatever their
  // inputs): reported with unbound dimensions, before any node is imported.
  static Blockers without_handler(const onnx::GraphProto& main);
  void add(const onnx::NodeProto& n, const std::string& why) { nodes_.emplace_back(node_name(n), why); }
  bool empty() const { return nodes_.empty(); }
  // Every blocker in one message: unsupported nodes grouped by op and reason, with counts and
  // the first node names (`unbound`: dynamic dimensions left unbound, reported first).
  std::string message(const std::string& unbound) const;

 private:
  std::vector<std::pair<std::string, std::string>> nodes_;  // node, why
};

// Decoding tensors (tensor_data.cpp): initializers and Constant values, raw or typed, in the
// model file or in external data next to it. Keeps the model's decode budget.
class TensorReader {
 public:
  TensorReader(std::filesystem::path path, std::string file) : path_(std::move(path)), file_(std::move(file)) {}
  // t's elements into v (v.has_data) when small enough and within the budget; `need`: a
  // Constant node's value, decoded up to kMaxDecodedElements. `what` names t in messages.
  void read(const onnx::TensorProto& t, Value& v, bool need, const std::string& what);
  // Takes n elements from the budget (the large one for Constant nodes' large values);
  // false, taking nothing, when they do not fit: then only shapes are kept.
  bool within_budget(int64_t n, bool large) {
    int64_t& used = large ? decoded_large_elements_ : decoded_elements_;
    if (n > kMaxDecodeBudget - used) return false;
    used += n;
    return true;
  }

 private:
  [[noreturn]] void fail(const std::string& msg) const { throw InputError(file_ + ": " + msg); }
  std::filesystem::path external_file(const std::string& what, const std::string& location) const;

  std::filesystem::path path_;  // the model (external data lives in its directory)
  std::string file_;
  // Elements of constant data decoded or folded so far: many small constants (each under
  // the fold limits) must not add up to gigabytes. Past the budget only shapes are kept.
  // Constant nodes' large values (functional mode only) have a budget of their own, so
  // they cannot starve the small shape constants that folding needs.
  int64_t decoded_elements_ = 0, decoded_large_elements_ = 0;
};

// One model's import (load_onnx); its members are defined in the files listed above.
class Importer {
 public:
  Importer(std::filesystem::path path, const OnnxOptions& opts, OnnxImportInfo* info)
      : path_(std::move(path)), file_(path_.string()), opts_(opts), info_(info) {}

  Graph run();

 private:
  using Node = onnx::NodeProto;

  // ---- messages
  [[noreturn]] void fail(const std::string& msg) const { throw InputError(file_ + ": " + msg); }
  std::string where(const Node& n) const {
    return "node '" + utf8_safe(node_name(n)) + "' (" + utf8_safe(n.op_type()) + ")";
  }
  [[noreturn]] void fail_node(const Node& n, const std::string& msg) const { fail(where(n) + ": " + msg); }

  // ---- the driver
  friend class Folder;     // const_fold.cpp: constant folding, one family per row
  friend struct OnnxRows;  // op_table.cpp: the rows' handlers
  friend class InputBinder;  // model_reader.cpp: binding the graph inputs, in steps
  friend class ControlFlow;  // control_flow.cpp: If, Loop and Scan inlined
  friend class MatrixOps;    // ops.h: the op handlers, one class per family
  friend class QuantOps;
  friend class VectorOps;
  friend class LayoutOps;
  friend class NodeShapes;   // shape_inference.{h,cpp}: attributes and shapes of both paths
  // Dispatch; an unsupported node is recorded and poisons its outputs. Host work: ops an
  // accelerator of this kind leaves to the host (rows marked `host`) and every node that
  // reads a value the host computed.
  void import_node(const Node& n);
  // n runs on the host: the activations it reads become graph outputs (sent over PCIe), its
  // outputs are host values; recorded in Graph::host_ops and absorbed as "host: <why>".
  void host_node(const Node& n, const std::string& why);
  // The value n reads that the host computed, if any (its inputs and subgraph references).
  const Value* host_operand(const Node& n, std::string* name) const;

  // ---- model reading
  void read_model();
  // `as`: the name the value gets (a subgraph's initializer is renamed when it is inlined).
  void load_initializer(const onnx::TensorProto& t, const std::string& what, const std::string& as = "");
  void bind_inputs();  // InputBinder, then bind_input_values
  void bind_input_values();  // --input-value: the inputs' elements, checked against their shapes
  std::vector<const Node*> topo_order();

  // ---- values
  Value& val(const Node& n, int i);          // input i (must exist)
  bool has_input(const Node& n, int i) const { return i < n.input_size() && !n.input(i).empty(); }
  Value* opt_val(const Node& n, int i) { return has_input(n, i) ? &val(n, i) : nullptr; }
  Value& out(const Node& n, int i = 0) {
    if (i >= n.output_size()) fail_node(n, "has no output " + std::to_string(i) + " (corrupt file?)");
    return values_[n.output(i)];
  }
  int opset() const { return opset_; }

  // attributes (an attribute of another type than the op's is an error naming the node)
  const onnx::AttributeProto* typed_attr(const Node& n, const std::string& name,
                                         onnx::AttributeProto_AttributeType type) const;
  int64_t attr_i(const Node& n, const std::string& name, int64_t def) const;
  double attr_f(const Node& n, const std::string& name, double def) const;
  std::string attr_s(const Node& n, const std::string& name, const std::string& def) const;
  std::vector<int64_t> attr_ints(const Node& n, const std::string& name) const;
  bool has_attr(const Node& n, const std::string& name) const { return attr(n, name) != nullptr; }

  // constant data
  std::vector<int64_t> const_ints(const Node& n, int i, const std::string& what);  // plain ints (no batch)
  std::vector<Sym> const_syms(const Node& n, int i, const std::string& what);
  std::vector<double> const_floats(const Node& n, int i, const std::string& what);
  // opset-dependent: an attribute before `since`, an input from it on (absent: nullopt)
  std::optional<std::vector<int64_t>> ints_attr_or_input(const Node& n, const std::string& attr_name, int input,
                                                        int since);

  // ---- shapes
  int batch_axis(const SymShape& s, const Node* n) const;
  Shape per_sample(const SymShape& s) const;  // natural order, batch dropped
  bool can_channels_last(const SymShape& s) const;
  Shape ir_shape(const SymShape& s, Layout layout) const;
  std::vector<int64_t> full_dims(const SymShape& s) const;  // at the bound batch
  int64_t ir_axis(const Value& v, int64_t onnx_axis, const Node& n);  // ONNX axis -> IR axis of v's tensor

  // ---- IR building
  int tensor_in(Value& v, Layout want, const Node& n);
  int materialize_input(Value& v, Layout layout);
  // Per-sample data that is constant in the model (rows of an embedding table, a class
  // token expanded to the batch) arrives from the host as an input of the program.
  void host_input(Value& o, const std::string& name);
  int add_tensor(const std::string& name, Shape shape, Dtype dtype, int producer);
  int add_layer(const Node& n, Layer layer, const std::string& out_name, const Shape& expect, const std::string& suffix = "");
  void set_activation(Value& out, int tensor, Layout layout);
  void add_output(const Node& n, Value& o, const Layer& l, Layout layout);  // o = l's output, n's output 0
  void reshape_into(const Node& n, Value& o, int input, const std::string& out_name, const std::string& suffix = "");
  void pass_head(const Node& n, int tensor);  // an alias of n's input 0 in `tensor`: absorbed
  void absorb_into_producer(const Node& n, const Value& x, Value& o, const std::string& why);
  Shape layer_shape(const Node& n, Layer& l);  // infer_layer; a ShapeError names the node
  void alias(const Node& n, Value& in, Value& o);  // o gets in's data with o.shape: reshape, no data moves
  std::string layer_name(const Node& n, const std::string& suffix) const;
  bool fusable(const std::string& value) const;  // single consumer, not a graph output, head of a matrix layer
  Layer* producer_layer(const Value& v);
  Layout preferred_layout(const Value& v) const;
  bool feeds_spatial(const std::string& value, int depth = 0) const;
  void absorb(const Node& n, const std::string& why) {
    if (info_) info_->absorbed[node_name(n)] = why;
  }

  // ---- validation shared by every op
  void check_arity(const Node& n, const OnnxOp* row) const;  // input and output counts the op allows
  void check_outputs(const Node& n);         // every value the node produced: dims >= 0, size bounded

  // ---- ops
  void dispatch(const Node& n);  // through n's row: folded when every data input is constant, else its handler
  // ---- lowering one node onto others: a node `op` on `inputs` writing `output`, named
  // after n (its name + suffix), dispatched like a node of the model. An output other
  // than n's own is an intermediate with one consumer (the next step).
  using AttrSetter = std::function<void(Node&)>;
  void synthetic(const Node& n, const std::string& op, const std::vector<std::string>& inputs, const std::string& output,
                 const std::string& suffix, const AttrSetter& attrs = {});
  std::string synthetic_ints(const std::string& name, const std::vector<Sym>& values);  // a constant 1-D int64 value

  std::filesystem::path path_;
  std::string file_;
  const OnnxOptions& opts_;
  OnnxImportInfo* info_;
  onnx::ModelProto model_;
  int opset_ = 0;
  int64_t batch_ = 1;
  Graph g_;
  std::unordered_map<std::string, Value> values_;
  std::unordered_map<std::string, int> consumers_;
  std::unordered_set<std::string> graph_outputs_;
  std::unordered_set<std::string> tensor_names_;
  std::vector<std::string> tensor_head_;  // per IR tensor: the latest ONNX value it holds
  Blockers blockers_;
  std::vector<int> input_order_;  // per IR graph input: ONNX input index
  std::unordered_map<std::string, std::vector<int>> consumer_nodes_;  // value -> indices of the nodes reading it
  // Main-graph nodes with subgraphs (If, Loop, Scan): the outer values those read.
  std::unordered_map<int, std::vector<std::string>> main_subgraph_refs_;
  std::unordered_set<std::string> input_names_;     // graph inputs (not initializers)
  ControlFlow control_flow_{*this};
  TensorReader tensors_{path_, file_};
};

}  // namespace tessera::graph::onnx_import
