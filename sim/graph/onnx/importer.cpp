// The driver: per-op validation (arity, required attributes, output bounds), dispatch
// through the handler table, unsupported-node aggregation, outputs and dead-layer pruning.
#include <algorithm>
#include <limits>

#include "sim/common/checked_math.h"
#include "sim/common/error.h"
#include "sim/graph/onnx/const_fold.h"
#include "sim/graph/onnx/importer.h"
#include "sim/graph/onnx/op_table.h"

namespace tessera::graph::onnx_import {

// Input counts, required attributes (from the node's row: op_table.cpp), checked before
// any handler reads input(i), so a node with too few or too many inputs is an error naming
// it and the allowed counts.
void Importer::check_arity(const Node& n, const OnnxOp* row) const {
  if (n.output_size() < 1) fail_node(n, "has no outputs (every op has at least one; corrupt file?)");
  for (int i = 0; i < n.attribute_size(); ++i) {
    for (int j = 0; j < i; ++j) {
      if (n.attribute(i).name() == n.attribute(j).name()) {
        fail_node(n, "attribute '" + utf8_safe(n.attribute(i).name()) + "' is given twice");
      }
    }
  }
  if (!row || row->arity.min < 0) return;  // not an op of the importer's: reported as unsupported
  const bool legacy = opset_ < row->legacy_until;
  const OnnxArity a = legacy ? row->legacy_arity : row->arity;
  for (const auto& name : row->required) {
    if (!attr(n, std::string(name))) fail_node(n, "needs the attribute '" + std::string(name) + "', which is missing");
  }
  if (legacy && !row->legacy_required.empty()) {
    for (const auto& name : row->legacy_required) {
      if (attr(n, std::string(name))) continue;
      std::vector<std::string> names;
      for (const auto& r : row->legacy_required) names.push_back("'" + std::string(r) + "'");
      fail_node(n, "needs the attributes " + join(names, " and ") + " (opset " + std::to_string(opset_) + ")");
    }
  }
  const int k = n.input_size();
  if (k >= a.min && k <= a.max) return;
  const std::string allowed = a.min == a.max              ? std::to_string(a.min)
                              : a.max == OnnxArity::kAny ? "at least " + std::to_string(a.min)
                                                         : std::to_string(a.min) + " to " + std::to_string(a.max);
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

// An op of a domain the row does not read (Gelu and FastGelu are also com.microsoft's).
static bool foreign_domain(const std::string& dom, const OnnxOp* row) {
  return !dom.empty() && dom != "ai.onnx" && !(dom == "com.microsoft" && row && row->microsoft);
}

void Importer::dispatch(const Node& n) {
  const OnnxOp* row = find_onnx_op(n.op_type());
  if (foreign_domain(n.domain(), row)) throw Unsupported{"op of domain '" + n.domain() + "'"};
  if (row && row->subgraphs) return row->handle(*this, n, *row);
  check_arity(n, row);
  bool constant = true;  // every data input
  for (int i = 0; i < n.input_size() && constant; ++i) {
    if (!n.input(i).empty() && !val(n, i).constant) constant = false;
  }
  if ((row && row->folds_always) || constant) return Folder(*this, n, row).run();
  if (!row || !row->handle) throw Unsupported{""};
  row->handle(*this, n, *row);
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
        const OnnxOp* row = find_onnx_op(n.op_type());
        if (row && row->has(kMacs)) {
          throw Unsupported{"reads '" + utf8_safe(read) + "', computed on the host by " + h->host_by +
                            ": a matrix op after host work"};
        }
        host_node(n, "reads '" + utf8_safe(read) + "' from " + h->host_by);
        return;
      }
      if (const OnnxOp* row = find_onnx_op(n.op_type()); row && row->host && n.domain().empty()) {
        host_node(n, n.op_type());
        return;
      }
      dispatch(n);
      check_outputs(n);
    } catch (const Unsupported& u) {
      blockers_.add(n, n.op_type() + (u.why.empty() ? std::string() : ": " + u.why));
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
std::string Blockers::message(const std::string& unbound) const {
  std::vector<std::string> order;
  std::unordered_map<std::string, std::vector<std::string>> by_reason;
  for (const auto& [node, why] : nodes_) {
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
  if (!nodes_.empty()) {
    msg += (msg.empty() ? "" : ". Also, ") + std::to_string(nodes_.size()) + " node(s) cannot be imported: " +
           join(items, "; ") + ". Supported ops: " + join(supported_op_types()) +
           ", and constant folding of shape computations";
  }
  return msg;
}

// Main-graph nodes whose op the importer has no handler or folding for (whatever their
// inputs): reported with unbound dimensions, before any node is imported.
Blockers Blockers::without_handler(const onnx::GraphProto& main) {
  Blockers out;
  for (const auto& n : main.node()) {
    const std::string& op = n.op_type();
    const OnnxOp* row = find_onnx_op(op);
    if (foreign_domain(n.domain(), row)) {
      out.add(n, op + ": op of domain '" + n.domain() + "'");
    } else if (!row || !(row->handled() || row->host)) {
      out.add(n, op);
    }
  }
  return out;
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
  if (!blockers_.empty()) fail(blockers_.message(""));

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


}  // namespace tessera::graph::onnx_import

namespace tessera::graph {

using onnx_import::Importer;

Graph load_onnx(const std::filesystem::path& path, const OnnxOptions& options, OnnxImportInfo* info) {
  return Importer(path, options, info).run();
}

std::vector<std::string> onnx_supported_ops() { return onnx_import::supported_op_types(); }

bool is_onnx_path(const std::filesystem::path& path) { return onnx_import::lower(path.extension().string()) == ".onnx"; }

}  // namespace tessera::graph
