// The driver: per-op validation (arity, required attributes, output bounds), dispatch
// through the handler table, unsupported-node aggregation, outputs and dead-layer pruning.
#include <algorithm>
#include <limits>

#include "sim/common/checked_math.h"
#include "sim/common/error.h"
#include "sim/graph/onnx/importer.h"

namespace tessera::graph::onnx_import {

// How many inputs each op the importer handles takes (ONNX's operator schemas, across
// the opsets it reads): one table, checked before any handler reads input(i), so a node
// with too few or too many inputs is an error naming it and the allowed counts.
void Importer::check_arity(const Node& n) const {
  struct Arity {
    int min_in, max_in;
  };
  constexpr int kAny = std::numeric_limits<int>::max();
  static const std::unordered_map<std::string, Arity> table = {
      {"Constant", {0, 0}}, {"ConstantOfShape", {1, 1}}, {"Range", {3, 3}}, {"Shape", {1, 1}}, {"Size", {1, 1}},
      {"Conv", {2, 3}}, {"ConvTranspose", {2, 3}}, {"Gemm", {2, 3}}, {"MatMul", {2, 2}}, {"LSTM", {3, 8}}, {"GRU", {3, 6}},
      {"BatchNormalization", {5, 5}}, {"LayerNormalization", {2, 3}}, {"Clip", {1, 3}}, {"FastGelu", {1, 2}},
      {"Add", {2, 2}}, {"Sub", {2, 2}}, {"Mul", {2, 2}}, {"Div", {2, 2}}, {"Pow", {2, 2}}, {"Mod", {2, 2}},
      {"Equal", {2, 2}}, {"Less", {2, 2}}, {"Greater", {2, 2}}, {"LessOrEqual", {2, 2}}, {"GreaterOrEqual", {2, 2}},
      {"And", {2, 2}}, {"Or", {2, 2}}, {"Max", {1, kAny}}, {"Min", {1, kAny}}, {"Where", {3, 3}},
      {"ReduceMean", {1, 2}}, {"ReduceSum", {1, 2}}, {"ReduceMax", {1, 2}}, {"ReduceMin", {1, 2}}, {"ReduceProd", {1, 2}},
      {"Reshape", {2, 2}}, {"Squeeze", {1, 2}}, {"Unsqueeze", {1, 2}}, {"CastLike", {2, 2}}, {"Dropout", {1, 3}},
      {"QuantizeLinear", {2, 3}}, {"DequantizeLinear", {2, 3}}, {"Concat", {1, kAny}}, {"Split", {1, 2}},
      {"Gather", {2, 2}}, {"Expand", {2, 2}}, {"Resize", {1, 4}}, {"Upsample", {1, 2}}, {"Tile", {2, 2}},
      {"CumSum", {2, 2}}, {"Einsum", {1, kAny}}, {"QLinearConv", {8, 9}}, {"QLinearMatMul", {8, 8}},
      {"ConvInteger", {2, 4}}, {"MatMulInteger", {2, 4}}};
  // Every other op the importer handles or folds takes exactly one input.
  static const std::unordered_set<std::string> unary = {
      "Relu", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "HardSwish", "Gelu", "Erf", "Sqrt", "Exp", "Log", "Neg",
      "Reciprocal", "Abs", "Floor", "Ceil", "Round", "Not", "Sign", "Softmax", "LogSoftmax", "MaxPool", "AveragePool",
      "GlobalAveragePool", "GlobalMaxPool", "Flatten", "Identity", "Cast", "Transpose", "ArgMax", "ArgMin", "DynamicQuantizeLinear"};
  Arity a{-1, -1};
  if (n.op_type() == "Slice") a = opset_ < 10 ? Arity{1, 1} : Arity{3, 5};  // starts/ends: attributes, then inputs
  else if (n.op_type() == "Pad") a = opset_ < 11 ? Arity{1, 1} : Arity{2, 4};
  else if (n.op_type() == "TopK") a = opset_ < 10 ? Arity{1, 1} : Arity{2, 2};  // k: an attribute, then an input
  else if (auto it = table.find(n.op_type()); it != table.end()) a = it->second;
  else if (unary.count(n.op_type())) a = {1, 1};
  if (n.output_size() < 1) fail_node(n, "has no outputs (every op has at least one; corrupt file?)");
  for (int i = 0; i < n.attribute_size(); ++i) {
    for (int j = 0; j < i; ++j) {
      if (n.attribute(i).name() == n.attribute(j).name()) {
        fail_node(n, "attribute '" + utf8_safe(n.attribute(i).name()) + "' is given twice");
      }
    }
  }
  if (a.min_in < 0) return;  // not an op of the importer's: reported as unsupported
  // Attributes the op's schema requires (a default would silently change its meaning).
  static const std::unordered_map<std::string, std::vector<std::string>> required = {
      {"Cast", {"to"}}, {"Concat", {"axis"}}, {"MaxPool", {"kernel_shape"}}, {"AveragePool", {"kernel_shape"}}};
  if (auto r = required.find(n.op_type()); r != required.end()) {
    for (const auto& name : r->second) {
      if (!attr(n, name)) fail_node(n, "needs the attribute '" + name + "', which is missing");
    }
  }
  if (opset_ < 10 && n.op_type() == "Slice" && (!attr(n, "starts") || !attr(n, "ends"))) {
    fail_node(n, "needs the attributes 'starts' and 'ends' (opset " + std::to_string(opset_) + ")");
  }
  const int k = n.input_size();
  if (k >= a.min_in && k <= a.max_in) return;
  const std::string allowed = a.min_in == a.max_in ? std::to_string(a.min_in)
                              : a.max_in == kAny   ? "at least " + std::to_string(a.min_in)
                                                   : std::to_string(a.min_in) + " to " + std::to_string(a.max_in);
  fail_node(n, "needs " + allowed + " inputs" + (opset_ ? " (opset " + std::to_string(opset_) + ")" : std::string()) + ", has " +
                   std::to_string(k));
}

// Every value a node produced: no negative dimension, at most 2^50 elements at the bound
// batch (so later products and allocations stay in range). Throws ShapeError.
void Importer::check_outputs(const Node& n) {
  for (const auto& name : n.output()) {
    if (name.empty()) continue;
    auto it = values_.find(name);
    if (it == values_.end() || it->second.poisoned) continue;
    const SymShape& s = it->second.shape;
    if (s.size() > static_cast<size_t>(kMaxRank)) {
      throw ShapeError("output '" + utf8_safe(name) + "' would have rank " + std::to_string(s.size()) + " (at most " +
                       std::to_string(kMaxRank) + ")");
    }
    int64_t elements = 1;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i].v < 0) {
        throw ShapeError("output '" + utf8_safe(name) + "' would have shape " + sym_shape_text(s) + ": dimension " +
                         std::to_string(i) + " is negative");
      }
      const auto e = checked_mul(elements, eval(s[i], batch_));
      if (!e || *e > kMaxTensorElements) {
        throw ShapeError("output '" + utf8_safe(name) + "' would have shape " + sym_shape_text(s) +
                         ": more than 2^50 elements (at most " + std::to_string(kMaxTensorElements) + ")");
      }
      elements = *e;
    }
  }
}

void Importer::dispatch(const Node& n) {
  const std::string& op = n.op_type();
  const std::string& dom = n.domain();
  const bool ms = dom == "com.microsoft";
  if (!dom.empty() && dom != "ai.onnx" && !(ms && (op == "Gelu" || op == "FastGelu"))) {
    throw Unsupported{"op of domain '" + dom + "'"};
  }
  if (op == "If") return op_if(n);
  if (op == "Loop") return op_loop(n);
  if (op == "Scan") return op_scan(n);
  check_arity(n);
  if (op == "Shape" || op == "Size" || all_constant(n)) return fold_or_shape(n);

  const auto& table = handler_table();
  auto it = table.find(op);
  if (it == table.end()) throw Unsupported{""};
  it->second(*this, n);
}

// ONNX ops whose work an accelerator of this kind leaves to the host: outputs whose size
// depends on the data (NonMaxSuppression, NonZero, Unique), gathers by index lists the
// vector unit has no addressing for, strings and sequences.
bool Importer::host_op_type(const std::string& op) {
  static const std::unordered_set<std::string> ops = {
      "NonMaxSuppression", "NonZero", "Unique", "GatherND", "GatherElements", "ScatterND", "ScatterElements",
      "StringNormalizer", "StringConcat", "StringSplit", "RegexFullMatch", "TfIdfVectorizer", "SequenceAt",
      "SequenceConstruct", "SequenceEmpty", "SequenceErase", "SequenceInsert", "SequenceLength", "SequenceMap",
      "SplitToSequence", "ConcatFromSequence"};
  return ops.count(op) > 0;
}

const Value* Importer::host_operand(const Node& n, std::string* name) const {
  for (const auto& in : node_refs(n)) {
    if (in.empty()) continue;
    auto it = values_.find(in);
    if (it != values_.end() && it->second.on_host) {
      if (name) *name = in;
      return &it->second;
    }
  }
  return nullptr;
}

void Importer::host_node(const Node& n, const std::string& why) {
  HostOp h;
  h.name = utf8_safe(node_name(n));
  h.op = utf8_safe(n.op_type());
  for (const auto& in : node_refs(n)) {
    if (in.empty()) continue;
    auto it = values_.find(in);
    if (it == values_.end()) continue;
    Value& v = it->second;
    if (v.on_host || v.constant) continue;
    if (v.tensor < 0 && v.graph_input >= 0) continue;  // a graph input: the host has it already
    const int t = tensor_in(v, Layout::kNatural, n);  // the host reads ONNX's natural order
    if (std::find(h.reads.begin(), h.reads.end(), t) == h.reads.end()) h.reads.push_back(t);
  }
  for (const auto& o : n.output()) {
    if (o.empty()) continue;
    Value& v = values_[o];
    v = Value{};
    v.constant = false;
    v.on_host = true;
    v.host_by = "'" + h.name + "' (" + h.op + ")";
    v.producer = node_name(n);
  }
  g_.host_ops.push_back(std::move(h));
  absorb(n, "host: " + why);
}

void Importer::import_node(const Node& n) {
  bool poisoned = false;
  for (const auto& in : n.input()) {
    if (in.empty()) continue;
    auto it = values_.find(in);
    if (it != values_.end() && it->second.poisoned) poisoned = true;
  }
  if (!poisoned) {
    try {
      // Downstream of host work: the host goes on, but a matrix op there would leave the
      // accelerator's MACs uncounted, so it is a blocker.
      std::string read;
      if (const Value* h = host_operand(n, &read)) {
        static const std::unordered_set<std::string> matrix = {
            "Conv", "ConvTranspose", "Gemm", "MatMul", "LSTM", "GRU", "RNN", "Einsum", "QLinearConv", "QLinearMatMul",
            "ConvInteger", "MatMulInteger"};
        if (matrix.count(n.op_type())) {
          throw Unsupported{"reads '" + utf8_safe(read) + "', computed on the host by " + h->host_by +
                            ": a matrix op after host work"};
        }
        host_node(n, "reads '" + utf8_safe(read) + "' from " + h->host_by);
        return;
      }
      if (host_op_type(n.op_type()) && n.domain().empty()) {
        host_node(n, n.op_type());
        return;
      }
      dispatch(n);
      check_outputs(n);
    } catch (const Unsupported& u) {
      unsupported_.emplace_back(node_name(n), n.op_type() + (u.why.empty() ? std::string() : ": " + u.why));
      poisoned = true;
    } catch (const ShapeError& e) {
      fail_node(n, e.what());
    }
  }
  if (poisoned) {
    for (const auto& o : n.output()) {
      if (!o.empty()) values_[o].poisoned = true;
    }
  }
}

// "K node(s) cannot be imported: " then one entry per reason, in the order first met: a
// single node as 'name' (Op: why), several as 'a', 'b', 'c' and 9 more (12 nodes: Op: why).
std::string Importer::blocker_message(const std::string& unbound) const {
  std::vector<std::string> order;
  std::unordered_map<std::string, std::vector<std::string>> by_reason;
  for (const auto& [node, why] : unsupported_) {
    auto& names = by_reason[why];
    if (names.empty()) order.push_back(why);
    names.push_back(node);
  }
  std::vector<std::string> items;
  for (const auto& why : order) {
    const auto& names = by_reason.at(why);
    if (names.size() == 1) {
      items.push_back("'" + utf8_safe(names[0]) + "' (" + utf8_safe(why) + ")");
      continue;
    }
    constexpr size_t kNamed = 3;
    std::vector<std::string> shown;
    for (size_t i = 0; i < names.size() && i < kNamed; ++i) shown.push_back("'" + utf8_safe(names[i]) + "'");
    std::string item = join(shown);
    if (names.size() > kNamed) item += " and " + std::to_string(names.size() - kNamed) + " more";
    items.push_back(item + " (" + std::to_string(names.size()) + " nodes: " + utf8_safe(why) + ")");
  }
  std::string msg = unbound;
  if (!unsupported_.empty()) {
    msg += (msg.empty() ? "" : ". Also, ") + std::to_string(unsupported_.size()) + " node(s) cannot be imported: " +
           join(items, "; ") + ". Supported ops: " + join(supported_op_types()) +
           ", and constant folding of shape computations";
  }
  return msg;
}

// Main-graph nodes whose op the importer has no handler or folding for (whatever their
// inputs): reported with unbound dimensions, before any node is imported.
std::vector<std::pair<std::string, std::string>> Importer::nodes_without_handler() const {
  std::vector<std::pair<std::string, std::string>> out;
  const auto& table = handler_table();
  for (const auto& n : model_.graph().node()) {
    const std::string& op = n.op_type();
    const std::string& dom = n.domain();
    const bool ms = dom == "com.microsoft" && (op == "Gelu" || op == "FastGelu");
    if (!dom.empty() && dom != "ai.onnx" && !ms) {
      out.emplace_back(node_name(n), op + ": op of domain '" + dom + "'");
    } else if (!table.count(op) && !foldable_op(op) && op != "If" && op != "Loop" && op != "Scan" && !host_op_type(op)) {
      out.emplace_back(node_name(n), op);
    }
  }
  return out;
}

// The ONNX op types with a handler: dispatch() and the unsupported-node message (and
// onnx_supported_ops()) read this one table, so the message cannot drift from it.
const std::map<std::string, Importer::Handler>& Importer::handler_table() {
  static const std::map<std::string, Handler> table = {
      {"Conv", [](Importer& m, const Node& n) { m.op_conv(n, false); }},
      {"ConvTranspose", [](Importer& m, const Node& n) { m.op_conv(n, true); }},
      {"Gemm", [](Importer& m, const Node& n) { m.op_gemm(n); }},
      {"MatMul", [](Importer& m, const Node& n) { m.op_matmul(n); }},
      {"LSTM", [](Importer& m, const Node& n) { m.op_recurrent(n, true); }},
      {"GRU", [](Importer& m, const Node& n) { m.op_recurrent(n, false); }},
      {"BatchNormalization", [](Importer& m, const Node& n) { m.op_batchnorm(n); }},
      {"Relu", [](Importer& m, const Node& n) { m.op_activation(n); }},
      {"Sigmoid", [](Importer& m, const Node& n) { m.op_activation(n); }},
      {"Tanh", [](Importer& m, const Node& n) { m.op_activation(n); }},
      {"Clip", [](Importer& m, const Node& n) { m.op_activation(n); }},
      {"LeakyRelu", [](Importer& m, const Node& n) { m.op_unary(n, OpKind::kLeakyRelu); }},
      {"HardSigmoid", [](Importer& m, const Node& n) { m.op_unary(n, OpKind::kHardSigmoid); }},
      {"HardSwish", [](Importer& m, const Node& n) { m.op_unary(n, OpKind::kHardSwish); }},
      {"Gelu", [](Importer& m, const Node& n) { m.op_unary(n, OpKind::kGelu); }},
      {"FastGelu", [](Importer& m, const Node& n) { m.op_unary(n, OpKind::kGelu); }},
      {"Erf", [](Importer& m, const Node& n) { m.op_unary(n, OpKind::kErf); }},
      {"Sqrt", [](Importer& m, const Node& n) { m.op_unary(n, OpKind::kSqrt); }},
      {"Exp", [](Importer& m, const Node& n) { m.op_unary(n, OpKind::kExp); }},
      {"Log", [](Importer& m, const Node& n) { m.op_unary(n, OpKind::kLog); }},
      {"Abs", [](Importer& m, const Node& n) { m.op_unary(n, OpKind::kAbs); }},
      {"Sign", [](Importer& m, const Node& n) { m.op_unary(n, OpKind::kSign); }},
      {"Floor", [](Importer& m, const Node& n) { m.op_unary(n, OpKind::kFloor); }},
      {"Ceil", [](Importer& m, const Node& n) { m.op_unary(n, OpKind::kCeil); }},
      {"Round", [](Importer& m, const Node& n) { m.op_unary(n, OpKind::kRound); }},
      {"Not", [](Importer& m, const Node& n) { m.op_unary(n, OpKind::kNot); }},
      {"Softplus", [](Importer& m, const Node& n) { m.op_unary(n, OpKind::kSoftplus); }},
      {"Neg", [](Importer& m, const Node& n) { m.op_with_scalar(n, OpKind::kMul, -1.0f, false); }},  // x * -1
      {"Reciprocal", [](Importer& m, const Node& n) { m.op_with_scalar(n, OpKind::kDiv, 1.0f, true); }},  // 1 / x
      {"Add", [](Importer& m, const Node& n) { m.op_binary(n, OpKind::kAdd); }},
      {"Sub", [](Importer& m, const Node& n) { m.op_binary(n, OpKind::kSub); }},
      {"Mul", [](Importer& m, const Node& n) { m.op_binary(n, OpKind::kMul); }},
      {"Div", [](Importer& m, const Node& n) { m.op_binary(n, OpKind::kDiv); }},
      {"Pow", [](Importer& m, const Node& n) { m.op_binary(n, OpKind::kPow); }},
      {"Max", [](Importer& m, const Node& n) { m.op_variadic(n, OpKind::kMax); }},
      {"Min", [](Importer& m, const Node& n) { m.op_variadic(n, OpKind::kMin); }},
      {"Where", [](Importer& m, const Node& n) { m.op_binary(n, OpKind::kWhere); }},
      {"Greater", [](Importer& m, const Node& n) { m.op_binary(n, OpKind::kGreater); }},
      {"GreaterOrEqual", [](Importer& m, const Node& n) { m.op_binary(n, OpKind::kGreaterEqual); }},
      {"Less", [](Importer& m, const Node& n) { m.op_binary(n, OpKind::kLess); }},
      {"LessOrEqual", [](Importer& m, const Node& n) { m.op_binary(n, OpKind::kLessEqual); }},
      {"Equal", [](Importer& m, const Node& n) { m.op_binary(n, OpKind::kEqual); }},
      {"And", [](Importer& m, const Node& n) { m.op_binary(n, OpKind::kAnd); }},
      {"Or", [](Importer& m, const Node& n) { m.op_binary(n, OpKind::kOr); }},
      {"Mod", [](Importer& m, const Node& n) { m.op_binary(n, m.attr_i(n, "fmod", 0) ? OpKind::kFmod : OpKind::kMod); }},
      {"CumSum", [](Importer& m, const Node& n) { m.op_cumsum(n); }},
      {"TopK", [](Importer& m, const Node& n) { m.op_topk(n); }},
      {"ArgMax", [](Importer& m, const Node& n) { m.op_arg(n, OpKind::kArgMax); }},
      {"ArgMin", [](Importer& m, const Node& n) { m.op_arg(n, OpKind::kArgMin); }},
      {"Einsum", [](Importer& m, const Node& n) { m.op_einsum(n); }},
      {"Range", [](Importer&, const Node&) {
         throw Unsupported{"start, limit or delta computed from the activations (a data-dependent shape)"};
       }},
      {"Softmax", [](Importer& m, const Node& n) { m.op_softmax(n); }},
      {"LogSoftmax", [](Importer& m, const Node& n) { m.op_softmax(n); }},
      {"LayerNormalization", [](Importer& m, const Node& n) { m.op_layernorm(n); }},
      {"ReduceMean", [](Importer& m, const Node& n) { m.op_reduce(n, OpKind::kReduceMean); }},
      {"ReduceSum", [](Importer& m, const Node& n) { m.op_reduce(n, OpKind::kReduceSum); }},
      {"ReduceMax", [](Importer& m, const Node& n) { m.op_reduce(n, OpKind::kReduceMax); }},
      {"MaxPool", [](Importer& m, const Node& n) { m.op_pool(n, OpKind::kMaxPool); }},
      {"AveragePool", [](Importer& m, const Node& n) { m.op_pool(n, OpKind::kAvgPool); }},
      {"GlobalAveragePool", [](Importer& m, const Node& n) { m.op_global_pool(n, OpKind::kGlobalAvgPool); }},
      {"GlobalMaxPool", [](Importer& m, const Node& n) { m.op_global_pool(n, OpKind::kGlobalMaxPool); }},
      {"Reshape", [](Importer& m, const Node& n) { m.op_reshape_like(n); }},
      {"Flatten", [](Importer& m, const Node& n) { m.op_reshape_like(n); }},
      {"Squeeze", [](Importer& m, const Node& n) { m.op_reshape_like(n); }},
      {"Unsqueeze", [](Importer& m, const Node& n) { m.op_reshape_like(n); }},
      {"Identity", [](Importer& m, const Node& n) { m.op_reshape_like(n); }},
      {"Cast", [](Importer& m, const Node& n) { m.op_reshape_like(n); }},
      {"CastLike", [](Importer& m, const Node& n) { m.op_reshape_like(n); }},
      {"Dropout", [](Importer& m, const Node& n) { m.op_reshape_like(n); }},
      {"QuantizeLinear", [](Importer& m, const Node& n) { m.op_quantize(n); }},
      {"DequantizeLinear", [](Importer& m, const Node& n) { m.op_dequantize(n); }},
      {"DynamicQuantizeLinear", [](Importer& m, const Node& n) { m.op_dynamic_quantize(n); }},
      {"QLinearConv", [](Importer& m, const Node& n) { m.op_qlinear(n); }},
      {"QLinearMatMul", [](Importer& m, const Node& n) { m.op_qlinear(n); }},
      {"ConvInteger", [](Importer& m, const Node& n) { m.op_integer(n); }},
      {"MatMulInteger", [](Importer& m, const Node& n) { m.op_integer(n); }},
      {"Transpose", [](Importer& m, const Node& n) { m.op_transpose(n); }},
      {"Concat", [](Importer& m, const Node& n) { m.op_concat(n); }},
      {"Split", [](Importer& m, const Node& n) { m.op_split(n); }},
      {"Slice", [](Importer& m, const Node& n) { m.op_slice(n); }},
      {"Gather", [](Importer& m, const Node& n) { m.op_gather(n); }},
      {"Expand", [](Importer& m, const Node& n) { m.op_expand(n); }},
      {"Tile", [](Importer& m, const Node& n) { m.op_tile(n); }},
      {"Pad", [](Importer& m, const Node& n) { m.op_pad(n); }},
      {"Resize", [](Importer& m, const Node& n) { m.op_resize(n); }},
      {"Upsample", [](Importer& m, const Node& n) { m.op_resize(n); }},
  };
  return table;
}

Graph Importer::run() {
  read_model();
  const auto& graph = model_.graph();
  g_.source = file_;
  g_.name = utf8_safe(graph.name().empty() ? path_.stem().string() : graph.name());
  std::string producer = utf8_safe(model_.producer_name());
  if (!model_.producer_version().empty()) producer += " " + utf8_safe(model_.producer_version());
  g_.description = "ONNX opset " + std::to_string(opset_) + (producer.empty() ? std::string() : ", from " + producer) +
                   (graph.doc_string().empty() ? std::string() : ": " + utf8_safe(graph.doc_string()));
  // What each node reads: its inputs and, for If/Loop/Scan, the outer values its subgraphs read.
  for (int i = 0; i < graph.node_size(); ++i) {
    auto count = [&](const std::string& in) {
      ++consumers_[in];
      auto& c = consumer_nodes_[in];
      if (c.empty() || c.back() != i) c.push_back(i);
    };
    for (const auto& in : graph.node(i).input()) {
      if (!in.empty()) count(in);
    }
    std::vector<std::string> refs = subgraph_refs(graph.node(i));
    for (const auto& in : refs) count(in);
    if (!refs.empty()) main_subgraph_refs_.emplace(i, std::move(refs));
  }
  for (const auto& o : graph.output()) graph_outputs_.insert(o.name());
  for (const auto& t : graph.initializer()) load_initializer(t, "initializer '" + t.name() + "'");
  bind_inputs();
  for (const auto& name : opts_.constant_inputs) {
    auto it = values_.find(name);
    if (it == values_.end()) fail("constant input '" + name + "' is not a graph input");
  }
  g_.default_batch = batch_;

  for (const Node* np : topo_order()) import_node(*np);
  if (!unsupported_.empty()) fail(blocker_message(""));

  // Outputs: activations only (a constant output needs no accelerator, the host computes
  // its own), and what host work reads from the accelerator.
  for (const auto& o : graph.output()) {
    auto it = values_.find(o.name());
    if (it == values_.end() || it->second.constant || it->second.poisoned || it->second.on_host) continue;
    Value& v = it->second;
    if (v.tensor < 0 && v.graph_input >= 0) continue;  // an input passed straight through
    if (std::find(g_.outputs.begin(), g_.outputs.end(), v.tensor) == g_.outputs.end()) g_.outputs.push_back(v.tensor);
  }
  for (const auto& h : g_.host_ops) {
    for (int t : h.reads) {
      if (std::find(g_.outputs.begin(), g_.outputs.end(), t) == g_.outputs.end()) g_.outputs.push_back(t);
    }
  }
  if (g_.outputs.empty()) fail("the model has no output computed from its inputs (nothing for the accelerator to run)");

  // Dead layers (e.g. unused conversions): drop them and renumber.
  std::vector<bool> used(g_.tensors.size(), false), live(g_.layers.size(), false);
  for (int t : g_.outputs) used[static_cast<size_t>(t)] = true;
  for (size_t i = g_.layers.size(); i-- > 0;) {
    if (!used[static_cast<size_t>(g_.layers[i].output)]) continue;
    live[i] = true;
    for (int t : g_.layers[i].inputs) used[static_cast<size_t>(t)] = true;
  }
  std::vector<int> remap(g_.tensors.size(), -1);
  Graph out;
  out.name = g_.name, out.description = g_.description, out.source = g_.source, out.default_batch = g_.default_batch;
  std::vector<std::pair<int, int>> inputs;  // ONNX order, new tensor id
  for (size_t k = 0; k < g_.inputs.size(); ++k) {
    const int t = g_.inputs[k];
    if (!used[static_cast<size_t>(t)]) continue;
    remap[static_cast<size_t>(t)] = static_cast<int>(out.tensors.size());
    out.tensors.push_back(g_.tensors[static_cast<size_t>(t)]);
    inputs.emplace_back(input_order_[k], remap[static_cast<size_t>(t)]);
  }
  std::sort(inputs.begin(), inputs.end());
  for (const auto& [order, t] : inputs) out.inputs.push_back(t);
  for (size_t i = 0; i < g_.layers.size(); ++i) {
    if (!live[i]) continue;
    Layer l = g_.layers[i];
    for (int& t : l.inputs) t = remap[static_cast<size_t>(t)];
    const int o = l.output;
    remap[static_cast<size_t>(o)] = static_cast<int>(out.tensors.size());
    Tensor t = g_.tensors[static_cast<size_t>(o)];
    t.producer = static_cast<int>(out.layers.size());
    out.tensors.push_back(std::move(t));
    l.output = remap[static_cast<size_t>(o)];
    out.layers.push_back(std::move(l));
  }
  for (int t : g_.outputs) out.outputs.push_back(remap[static_cast<size_t>(t)]);
  out.host_ops = g_.host_ops;
  for (auto& h : out.host_ops) {
    for (int& t : h.reads) t = remap[static_cast<size_t>(t)];
  }
  if (out.layers.empty()) fail("the model has no layer for the accelerator to run");

  if (info_) {
    info_->opset = opset_;
    info_->batch = batch_;
    info_->producer = producer;
    for (const auto& [name, v] : values_) {
      if (!v.poisoned && !v.on_host) info_->value_shapes[name] = full_dims(v.shape);
    }
  }
  return out;
}


std::vector<std::string> Importer::supported_op_types() {
  std::vector<std::string> ops;
  for (const auto& [op, handler] : handler_table()) ops.push_back(op);
  return ops;
}

}  // namespace tessera::graph::onnx_import

namespace tessera::graph {

using onnx_import::Importer;

Graph load_onnx(const std::filesystem::path& path, const OnnxOptions& options, OnnxImportInfo* info) {
  return Importer(path, options, info).run();
}

std::vector<std::string> onnx_supported_ops() { return Importer::supported_op_types(); }

bool is_onnx_path(const std::filesystem::path& path) { return onnx_import::lower(path.extension().string()) == ".onnx"; }

}  // namespace tessera::graph
