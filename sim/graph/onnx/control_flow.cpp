// Control flow, inlined at import time: an If whose condition folds (from shapes, from
// constants, from inputs bound with --input-value) becomes the nodes of its taken branch;
// a Loop whose trip count and condition fold, and a Scan (its trip count is a shape), are
// unrolled. The copied nodes go through the same import as the model's own, so branches
// and bodies may hold any op, nested control flow included, and read outer-scope values.
// A condition or count that depends on data known only at run time is a blocker naming
// the node and the graph inputs it depends on.
#include <algorithm>
#include <functional>
#include <limits>
#include <queue>
#include <set>

#include "sim/common/checked_math.h"
#include "sim/graph/onnx/control_flow.h"
#include "sim/graph/onnx/importer.h"

namespace tessera::graph::onnx_import {

namespace {

bool is_graph_attr(const onnx::AttributeProto& a) {
  return a.type() == onnx::AttributeProto_AttributeType_GRAPH || a.type() == onnx::AttributeProto_AttributeType_GRAPHS ||
         a.has_g() || a.graphs_size() > 0;
}

std::unordered_set<std::string> defined_names(const onnx::GraphProto& g) {
  std::unordered_set<std::string> d;
  for (const auto& v : g.input()) d.insert(v.name());
  for (const auto& t : g.initializer()) d.insert(t.name());
  for (const auto& n : g.node()) {
    for (const auto& o : n.output()) {
      if (!o.empty()) d.insert(o);
    }
  }
  return d;
}

// The names `g` reads from enclosing scopes, in order of first use (nested subgraphs too).
void free_names(const onnx::GraphProto& g, std::vector<std::string>& out, std::unordered_set<std::string>& seen) {
  const std::unordered_set<std::string> defined = defined_names(g);
  auto use = [&](const std::string& name) {
    if (!name.empty() && !defined.count(name) && seen.insert(name).second) out.push_back(name);
  };
  for (const auto& n : g.node()) {
    for (const auto& in : n.input()) use(in);
    for (const auto& a : n.attribute()) {
      if (!is_graph_attr(a)) continue;
      std::vector<std::string> inner;
      std::unordered_set<std::string> inner_seen;
      if (a.has_g()) free_names(a.g(), inner, inner_seen);
      for (const auto& sg : a.graphs()) free_names(sg, inner, inner_seen);
      for (const auto& name : inner) use(name);
    }
  }
  for (const auto& o : g.output()) use(o.name());
}

// Renames what `g` reads from enclosing scopes (its own names, and its subgraphs' reads
// of them, stay as they are).
using Lookup = std::function<std::string(const std::string&)>;
void rename_free(onnx::GraphProto& g, const Lookup& outer) {
  const std::unordered_set<std::string> defined = defined_names(g);
  const Lookup map = [&](const std::string& s) { return s.empty() || defined.count(s) ? s : outer(s); };
  for (auto& n : *g.mutable_node()) {
    for (auto& in : *n.mutable_input()) in = map(in);
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) rename_free(*a.mutable_g(), map);
      for (auto& sg : *a.mutable_graphs()) rename_free(sg, map);
    }
  }
  for (auto& o : *g.mutable_output()) o.set_name(map(o.name()));
}

// Nodes of a graph and of every subgraph in it.
int64_t graph_nodes(const onnx::GraphProto& g) {
  int64_t total = g.node_size();
  for (const auto& n : g.node()) {
    for (const auto& a : n.attribute()) {
      if (a.has_g()) total += graph_nodes(a.g());
      for (const auto& sg : a.graphs()) total += graph_nodes(sg);
    }
  }
  return total;
}

}  // namespace

std::vector<std::string> subgraph_refs(const onnx::NodeProto& n) {
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  for (const auto& a : n.attribute()) {
    if (!is_graph_attr(a)) continue;
    if (a.has_g()) free_names(a.g(), out, seen);
    for (const auto& sg : a.graphs()) free_names(sg, out, seen);
  }
  return out;
}

std::vector<std::string> node_refs(const onnx::NodeProto& n) {
  std::vector<std::string> out;
  for (const auto& in : n.input()) {
    if (!in.empty()) out.push_back(in);
  }
  for (auto& r : subgraph_refs(n)) out.push_back(std::move(r));
  return out;
}

const onnx::GraphProto& ControlFlow::graph_attr(const Node& n, const std::string& name) const {
  const auto* a = m_.typed_attr(n, name, onnx::AttributeProto_AttributeType_GRAPH);
  if (!a || !a->has_g()) m_.fail_node(n, "needs the attribute '" + name + "' (a graph), which is missing");
  return a->g();
}

std::string ControlFlow::fresh_name(const std::string& base) {
  if (reserved_names_.empty()) {  // the model's own names, once: a copy never takes one of them
    const auto& g = m_.model_.graph();
    for (const auto& v : g.input()) reserved_names_.insert(v.name());
    for (const auto& t : g.initializer()) reserved_names_.insert(t.name());
    for (const auto& n : g.node()) reserved_names_.insert(n.output().begin(), n.output().end());
  }
  std::string name = base;
  for (int k = 1; reserved_names_.count(name) || m_.values_.count(name); ++k) name = base + "#" + std::to_string(k);
  reserved_names_.insert(name);
  return name;
}

std::string ControlFlow::int_constant(const std::string& base, const std::vector<int64_t>& v, bool scalar) {
  const std::string name = fresh_name(base);
  Value c;
  c.elem = onnx::TensorProto_DataType_INT64;
  c.has_data = true;
  if (!scalar) c.shape = {{static_cast<int64_t>(v.size()), 0}};
  for (int64_t x : v) c.ints.push_back({x, 0});
  m_.values_[name] = std::move(c);
  return name;
}

const onnx::NodeProto& ControlFlow::synth(const std::string& op, const std::vector<std::string>& ins, const std::string& out,
                                       const std::string& name) {
  Node& s = synthetic_.emplace_back();
  s.set_op_type(op);
  s.set_name(name);
  for (const auto& i : ins) s.add_input(i);
  s.add_output(out);
  ++inlined_nodes_;
  inlined_producer_[out] = &s;
  return s;
}

void ControlFlow::count_reads(const std::vector<const Node*>& nodes) {
  for (const Node* n : nodes) {
    for (const auto& r : node_refs(*n)) ++m_.consumers_[r];
  }
}

// ---------------------------------------------------------------- conditions and counts

// The graph inputs `value` is computed from, walking back through the nodes imported so
// far: "the value of input 'sr' (bind it with --input-value sr=V)", "the data of input
// 'x'", "the shape of input 'x'" (through Shape/Size: its batch).
std::string ControlFlow::undecided(const std::string& value) const {
  std::vector<std::pair<std::string, bool>> todo = {{value, false}};  // name, reached through a Shape
  std::set<std::pair<std::string, bool>> seen(todo.begin(), todo.end());
  std::vector<std::string> by_value, by_data, by_shape;
  std::unordered_map<std::string, const Node*> producer;  // the model's own nodes (inlined ones: inlined_producer_)
  for (const auto& n : m_.model_.graph().node()) {
    for (const auto& o : n.output()) producer.emplace(o, &n);
  }
  constexpr size_t kMaxWalk = 1 << 14;
  for (size_t k = 0; k < todo.size() && k < kMaxWalk; ++k) {
    const auto [name, shape] = todo[k];
    if (m_.input_names_.count(name)) {
      auto it = m_.values_.find(name);
      const bool activation = it != m_.values_.end() && !it->second.constant;
      auto& list = shape ? by_shape : activation ? by_data : by_value;
      if (std::find(list.begin(), list.end(), name) == list.end()) list.push_back(name);
      continue;
    }
    const Node* np = nullptr;
    if (auto p = inlined_producer_.find(name); p != inlined_producer_.end()) np = p->second;
    else if (auto q = producer.find(name); q != producer.end()) np = q->second;
    if (!np) continue;
    const Node& n = *np;
    const bool through_shape = shape || n.op_type() == "Shape" || n.op_type() == "Size";
    for (const auto& r : node_refs(n)) {
      if (seen.insert({r, through_shape}).second) todo.emplace_back(r, through_shape);
    }
  }
  std::vector<std::string> why;
  for (const auto& in : by_value) {
    why.push_back("the value of input '" + utf8_safe(in) + "' (bind it with --input-value " + utf8_safe(in) + "=V)");
  }
  for (const auto& in : by_data) why.push_back("the data of input '" + utf8_safe(in) + "' (known only at run time)");
  for (const auto& in : by_shape) {
    if (std::find(by_value.begin(), by_value.end(), in) == by_value.end() &&
        std::find(by_data.begin(), by_data.end(), in) == by_data.end()) {
      why.push_back("the batch size (the shape of input '" + utf8_safe(in) + "')");
    }
  }
  if (why.empty()) return "it could not be folded";
  return "it depends on " + join(why, " and ");
}

// A one-element condition or count, known at import time (a bool is 0 or 1).
std::optional<int64_t> ControlFlow::known_scalar(const Node& n, const std::string& value, const std::string& what) {
  auto it = m_.values_.find(value);
  if (it == m_.values_.end()) m_.fail_node(n, what + " '" + utf8_safe(value) + "' is not defined");
  const Value& v = it->second;
  if (!v.constant || !v.has_data) return std::nullopt;
  const size_t elements = v.is_float ? v.floats.size() : v.ints.size();
  if (elements != 1) m_.fail_node(n, what + " '" + utf8_safe(value) + "' must have one element, it has " + std::to_string(elements));
  if (v.is_float) {
    if (v.floats[0] != v.floats[0]) return std::nullopt;  // NaN
    const auto i = checked_to_int64(v.floats[0]);
    if (!i) return std::nullopt;
    return v.floats[0] != 0 && *i == 0 ? 1 : *i;  // 0.5 as a condition is true
  }
  if (v.ints[0].p) return std::nullopt;  // depends on the batch
  return v.ints[0].v;
}

// ---------------------------------------------------------------- inlining a subgraph

std::vector<const onnx::NodeProto*> ControlFlow::inline_graph(const Node& owner, const onnx::GraphProto& body,
                                                           const std::string& prefix, const std::vector<std::string>& bind,
                                                           const std::unordered_map<std::string, std::string>& targets,
                                                           std::unordered_map<std::string, std::string>& renamed) {
  renamed.clear();
  if (static_cast<size_t>(body.input_size()) != bind.size()) {
    m_.fail_node(owner, "its subgraph '" + utf8_safe(body.name()) + "' has " + std::to_string(body.input_size()) +
                         " input(s), " + std::to_string(bind.size()) + " expected");
  }
  auto define = [&](const std::string& name, const std::string& as) {
    if (!renamed.emplace(name, as).second) {
      m_.fail_node(owner, "its subgraph '" + utf8_safe(body.name()) + "' defines '" + utf8_safe(name) +
                           "' twice (each value must have one producer)");
    }
  };
  for (int i = 0; i < body.input_size(); ++i) define(body.input(i).name(), bind.at(static_cast<size_t>(i)));
  for (const auto& t : body.initializer()) {
    const std::string as = fresh_name(prefix + t.name());
    define(t.name(), as);
    m_.load_initializer(t, "initializer '" + utf8_safe(t.name()) + "' of " + m_.where(owner), as);
  }
  for (const auto& n : body.node()) {
    for (const auto& o : n.output()) {
      if (o.empty()) continue;
      auto t = targets.find(o);
      define(o, t != targets.end() ? t->second : fresh_name(prefix + o));
    }
  }
  const Lookup lookup = [&](const std::string& s) {
    auto it = renamed.find(s);
    return it == renamed.end() ? s : it->second;
  };
  // Topological order inside the body (exporters write it sorted; a stable sort keeps that).
  const int count = body.node_size();
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < count; ++i) {
    for (const auto& o : body.node(i).output()) {
      if (!o.empty()) producer[o] = i;
    }
  }
  std::vector<std::vector<int>> users(static_cast<size_t>(count));
  std::vector<int> pending(static_cast<size_t>(count), 0);
  for (int i = 0; i < count; ++i) {
    for (const auto& r : node_refs(body.node(i))) {
      auto p = producer.find(r);
      if (p == producer.end()) continue;
      users[static_cast<size_t>(p->second)].push_back(i);
      ++pending[static_cast<size_t>(i)];
    }
  }
  std::vector<int> order;
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;  // lowest index first
  for (int i = 0; i < count; ++i) {
    if (pending[static_cast<size_t>(i)] == 0) ready.push(i);
  }
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int u : users[static_cast<size_t>(i)]) {
      if (--pending[static_cast<size_t>(u)] == 0) ready.push(u);
    }
  }
  if (static_cast<int>(order.size()) != count) m_.fail_node(owner, "its subgraph '" + utf8_safe(body.name()) + "' has a cycle");

  std::vector<const Node*> out;
  for (int i : order) {
    const Node& src = body.node(i);
    Node& s = synthetic_.emplace_back(src);
    ++inlined_nodes_;
    if (!src.name().empty()) s.set_name(prefix + src.name());
    for (auto& in : *s.mutable_input()) in = in.empty() ? in : lookup(in);
    for (auto& o : *s.mutable_output()) {
      if (o.empty()) continue;
      o = lookup(o);
      inlined_producer_[o] = &s;
    }
    for (auto& a : *s.mutable_attribute()) {
      if (a.has_g()) rename_free(*a.mutable_g(), lookup);
      for (auto& sg : *a.mutable_graphs()) rename_free(sg, lookup);
    }
    out.push_back(&s);
  }
  return out;
}

// ---------------------------------------------------------------- If

void ControlFlow::op_if(const Node& n) {
  if (n.input_size() != 1 || n.input(0).empty()) {
    m_.fail_node(n, "needs 1 input (the condition), has " + std::to_string(n.input_size()));
  }
  const onnx::GraphProto& then_g = graph_attr(n, "then_branch");
  const onnx::GraphProto& else_g = graph_attr(n, "else_branch");
  const auto cond = known_scalar(n, n.input(0), "the condition");
  if (!cond) {
    throw Unsupported{"its condition '" + utf8_safe(n.input(0)) + "' is not known at import time: " + undecided(n.input(0))};
  }
  const bool taken = *cond != 0;
  const onnx::GraphProto& branch = taken ? then_g : else_g;
  const std::string which = taken ? "then_branch" : "else_branch";
  if (branch.output_size() != n.output_size()) {
    m_.fail_node(n, "its " + which + " has " + std::to_string(branch.output_size()) + " output(s), the If has " +
                     std::to_string(n.output_size()));
  }
  // The branch's own nodes now read the outer values the If read for both branches.
  for (const auto& r : subgraph_refs(n)) --m_.consumers_[r];
  const std::unordered_set<std::string> produced = [&] {
    std::unordered_set<std::string> p;
    for (const auto& bn : branch.node()) p.insert(bn.output().begin(), bn.output().end());
    return p;
  }();
  // A branch output written by a branch node is written straight into the If's output.
  std::unordered_map<std::string, std::string> targets;
  for (int k = 0; k < n.output_size(); ++k) {
    const std::string& o = branch.output(k).name();
    if (!n.output(k).empty() && produced.count(o) && !targets.count(o)) targets.emplace(o, n.output(k));
  }
  std::unordered_map<std::string, std::string> renamed;
  const std::string prefix = node_name(n) + "/" + which + "/";
  std::vector<const Node*> nodes = inline_graph(n, branch, prefix, {}, targets, renamed);
  for (int k = 0; k < n.output_size(); ++k) {
    const std::string& o = branch.output(k).name();
    if (n.output(k).empty() || (targets.count(o) && targets.at(o) == n.output(k))) continue;
    auto it = renamed.find(o);  // an outer value, a branch initializer, or an output listed twice
    nodes.push_back(&synth("Identity", {it == renamed.end() ? o : it->second}, n.output(k),
                           prefix + "output" + std::to_string(k)));
  }
  count_reads(nodes);
  m_.absorb(n, "inlined (" + which + ")");
  for (const Node* s : nodes) m_.import_node(*s);
}

// ---------------------------------------------------------------- Loop and Scan

// `iterations` more iterations of `body_nodes` nodes each (nested subgraphs counted) must
// fit the nodes a model may inline; `done` iterations are unrolled already.
void ControlFlow::check_unroll(const Node& n, int64_t iterations, int64_t done, std::optional<int64_t> trip_count,
                            int64_t body_nodes) const {
  const auto total = checked_mul(iterations, std::max<int64_t>(body_nodes, 1));
  if (total && *total <= kMaxInlinedNodes - inlined_nodes_) return;
  const std::string each = " of " + std::to_string(body_nodes) + " node(s) each";
  const std::string limit = " (at most " + std::to_string(kMaxInlinedNodes) + " nodes are inlined per model)";
  if (trip_count && done == 0) {
    const auto all = checked_mul(*trip_count, std::max<int64_t>(body_nodes, 1));
    throw Unsupported{"unrolling its " + std::to_string(*trip_count) + " iterations" + each + " takes " +
                      (all ? std::to_string(*all) : std::string("more than 2^63")) + " nodes" + limit};
  }
  throw Unsupported{"it still runs after " + std::to_string(done) + " unrolled iterations" + each +
                    (trip_count ? " (trip count " + std::to_string(*trip_count) + ")" : std::string()) + limit};
}

// Unsqueeze each part on `axis` and concatenate them there: a Loop's or Scan's stacked output.
void ControlFlow::stack_scan_outputs(const Node& n, const std::vector<std::string>& parts, int64_t axis, const std::string& out) {
  std::vector<const Node*> nodes;
  std::vector<std::string> pieces;
  const std::string base = node_name(n) + "/" + out + "/";
  const std::string axes = m_.opset_ >= 13 ? int_constant(base + "axes", {axis}, false) : "";
  for (size_t k = 0; k < parts.size(); ++k) {
    const std::string piece = parts.size() == 1 ? out : fresh_name(base + std::to_string(k));
    std::vector<std::string> ins = {parts[k]};
    if (!axes.empty()) ins.push_back(axes);
    const Node& u = synth("Unsqueeze", ins, piece, base + "unsqueeze" + std::to_string(k));
    if (axes.empty()) {
      auto* a = synthetic_.back().add_attribute();
      a->set_name("axes");
      a->set_type(onnx::AttributeProto_AttributeType_INTS);
      a->add_ints(axis);
    }
    nodes.push_back(&u);
    pieces.push_back(piece);
  }
  if (parts.size() > 1) {
    synth("Concat", pieces, out, base + "concat");
    auto* a = synthetic_.back().add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto_AttributeType_INT);
    a->set_i(axis);
    nodes.push_back(&synthetic_.back());
  }
  count_reads(nodes);
  for (const Node* s : nodes) m_.import_node(*s);
}

void ControlFlow::op_loop(const Node& n) {
  const onnx::GraphProto& body = graph_attr(n, "body");
  if (n.input_size() < 2) m_.fail_node(n, "needs at least 2 inputs (M and cond, either may be empty), has " + std::to_string(n.input_size()));
  const int carried_count = n.input_size() - 2;
  if (body.input_size() != carried_count + 2) {
    m_.fail_node(n, "its body has " + std::to_string(body.input_size()) + " input(s), the Loop carries " +
                     std::to_string(carried_count) + " value(s) (the body takes the iteration, the condition and those)");
  }
  if (body.output_size() < carried_count + 1) {
    m_.fail_node(n, "its body has " + std::to_string(body.output_size()) + " output(s), at least " +
                     std::to_string(carried_count + 1) + " expected (the condition and the carried values)");
  }
  const int scan_count = body.output_size() - 1 - carried_count;
  if (n.output_size() > carried_count + scan_count) {
    m_.fail_node(n, "has " + std::to_string(n.output_size()) + " outputs, its body gives " +
                     std::to_string(carried_count + scan_count));
  }
  for (int i = 0; i < carried_count; ++i) {
    if (n.input(2 + i).empty()) m_.fail_node(n, "loop-carried input " + std::to_string(i) + " is empty");
  }
  std::optional<int64_t> trips;
  if (m_.has_input(n, 0)) {
    trips = known_scalar(n, n.input(0), "the trip count");
    if (!trips) {
      throw Unsupported{"its trip count '" + utf8_safe(n.input(0)) + "' is not known at import time: " + undecided(n.input(0))};
    }
    trips = std::max<int64_t>(*trips, 0);
  }
  const bool has_cond = m_.has_input(n, 1);
  std::string cond = has_cond ? n.input(1) : int_constant(node_name(n) + "/cond", {1}, true);
  if (has_cond) {
    const auto c = known_scalar(n, cond, "the condition");
    if (!c) throw Unsupported{"its condition '" + utf8_safe(cond) + "' is not known at import time: " + undecided(cond)};
  }
  if (!trips && !has_cond) throw Unsupported{"it has neither a trip count nor a condition (it would run forever)"};
  const int64_t body_nodes = graph_nodes(body);
  if (trips && !has_cond) check_unroll(n, *trips, 0, trips, body_nodes);  // a condition may stop it sooner

  for (const auto& r : subgraph_refs(n)) --m_.consumers_[r];
  std::vector<std::string> carried(n.input().begin() + 2, n.input().end());
  std::vector<std::vector<std::string>> scans(static_cast<size_t>(scan_count));
  int64_t k = 0;
  for (;; ++k) {
    if (trips && k >= *trips) break;
    if (has_cond && known_scalar(n, cond, "the condition").value_or(0) == 0) break;
    check_unroll(n, 1, k, trips, body_nodes);
    const std::string prefix = node_name(n) + "/" + std::to_string(k) + "/";
    std::vector<std::string> bind = {int_constant(prefix + body.input(0).name(), {k}, true), cond};
    bind.insert(bind.end(), carried.begin(), carried.end());
    std::unordered_map<std::string, std::string> renamed;
    const std::vector<const Node*> nodes = inline_graph(n, body, prefix, bind, {}, renamed);
    auto lookup = [&](const std::string& s) {
      auto it = renamed.find(s);
      return it == renamed.end() ? s : it->second;
    };
    count_reads(nodes);
    // What reads this iteration's results: the next iteration or the Loop's outputs
    // (counted now, so that nothing is fused into a value that is read again).
    for (int i = 0; i < body.output_size(); ++i) ++m_.consumers_[lookup(body.output(i).name())];
    for (const Node* s : nodes) m_.import_node(*s);
    cond = lookup(body.output(0).name());
    bool poisoned = false;
    for (int i = 0; i < carried_count; ++i) carried[static_cast<size_t>(i)] = lookup(body.output(1 + i).name());
    for (int j = 0; j < scan_count; ++j) scans[static_cast<size_t>(j)].push_back(lookup(body.output(1 + carried_count + j).name()));
    for (int i = 0; i < body.output_size(); ++i) {
      auto it = m_.values_.find(lookup(body.output(i).name()));
      if (it == m_.values_.end()) m_.fail_node(n, "its body's output '" + utf8_safe(body.output(i).name()) + "' is not computed");
      poisoned = poisoned || it->second.poisoned;
    }
    if (poisoned) {
      for (const auto& o : n.output()) {
        if (!o.empty()) m_.values_[o].poisoned = true;  // an unsupported node in the body (reported)
      }
      return;
    }
    if (has_cond && !known_scalar(n, cond, "the condition")) {
      throw Unsupported{"its condition after iteration " + std::to_string(k) + " ('" + utf8_safe(cond) +
                        "') is not known at import time: " + undecided(cond)};
    }
  }
  // Loop stacks its scan outputs along a new first axis, in iteration order.
  finish_unrolled(n, k, carried, std::move(scans), std::vector<int64_t>(static_cast<size_t>(scan_count), 0),
                  std::vector<int64_t>(static_cast<size_t>(scan_count), 0));
}

void ControlFlow::finish_unrolled(const Node& n, int64_t iterations, const std::vector<std::string>& carried,
                               std::vector<std::vector<std::string>> scans, const std::vector<int64_t>& axes,
                               const std::vector<int64_t>& reversed) {
  m_.absorb(n, "unrolled (" + std::to_string(iterations) + " iteration" + (iterations == 1 ? "" : "s") + ")");
  const int states = static_cast<int>(carried.size());
  std::vector<const Node*> finals;
  for (int i = 0; i < states && i < n.output_size(); ++i) {
    if (n.output(i).empty()) continue;
    finals.push_back(&synth("Identity", {carried[static_cast<size_t>(i)]}, n.output(i), node_name(n) + "/output" + std::to_string(i)));
  }
  count_reads(finals);
  for (const Node* s : finals) m_.import_node(*s);
  for (size_t j = 0; j < scans.size() && states + static_cast<int>(j) < n.output_size(); ++j) {
    const std::string& out = n.output(states + static_cast<int>(j));
    if (out.empty()) continue;
    if (iterations == 0) throw Unsupported{"it runs 0 iterations, so its scan output '" + utf8_safe(out) + "' would be empty"};
    if (reversed[j]) std::reverse(scans[j].begin(), scans[j].end());
    stack_scan_outputs(n, scans[j], axes[j], out);
  }
}

void ControlFlow::op_scan(const Node& n) {
  if (m_.opset_ < 9) throw Unsupported{"Scan of opset 8 (a batch axis and sequence_lens) is not supported; opset 9 and later are"};
  const onnx::GraphProto& body = graph_attr(n, "body");
  const int64_t scan_inputs = m_.attr_i(n, "num_scan_inputs", -1);
  if (scan_inputs < 1 || scan_inputs > n.input_size()) {
    m_.fail_node(n, "num_scan_inputs must be in [1, " + std::to_string(n.input_size()) + "] (its inputs), got " + std::to_string(scan_inputs));
  }
  const int m = static_cast<int>(scan_inputs);
  const int states = n.input_size() - m;
  if (body.input_size() != states + m) {
    m_.fail_node(n, "its body has " + std::to_string(body.input_size()) + " input(s), the Scan gives " + std::to_string(states + m));
  }
  if (body.output_size() < states) m_.fail_node(n, "its body has fewer outputs than the Scan has states");
  const int scan_outputs = body.output_size() - states;
  if (n.output_size() > states + scan_outputs) {
    m_.fail_node(n, "has " + std::to_string(n.output_size()) + " outputs, its body gives " + std::to_string(states + scan_outputs));
  }
  auto per = [&](const std::string& name, int count) {
    std::vector<int64_t> v = m_.attr_ints(n, name);
    if (v.empty()) v.assign(static_cast<size_t>(count), 0);
    if (static_cast<int>(v.size()) != count) {
      m_.fail_node(n, name + " has " + std::to_string(v.size()) + " entries for " + std::to_string(count));
    }
    return v;
  };
  const std::vector<int64_t> in_axes = per("scan_input_axes", m), in_dirs = per("scan_input_directions", m);
  const std::vector<int64_t> out_axes = per("scan_output_axes", scan_outputs), out_dirs = per("scan_output_directions", scan_outputs);
  int64_t trips = -1;
  std::vector<int64_t> axes;
  for (int j = 0; j < m; ++j) {
    const Value& x = m_.val(n, states + j);
    const int64_t a = norm_axis(in_axes[static_cast<size_t>(j)], x.shape.size(), "scan input axis");
    const Sym d = x.shape[static_cast<size_t>(a)];
    if (d.p) throw Unsupported{"it scans input '" + utf8_safe(n.input(states + j)) + "' along the batch dimension"};
    if (trips >= 0 && d.v != trips) {
      m_.fail_node(n, "its scan inputs differ in length (" + std::to_string(trips) + " and " + std::to_string(d.v) + ")");
    }
    trips = d.v;
    axes.push_back(a);
  }
  const int64_t body_nodes = graph_nodes(body) + m;
  check_unroll(n, trips, 0, trips, body_nodes);

  for (const auto& r : subgraph_refs(n)) --m_.consumers_[r];
  std::vector<std::string> carried(n.input().begin(), n.input().begin() + states);
  std::vector<std::vector<std::string>> scans(static_cast<size_t>(scan_outputs));
  for (int64_t t = 0; t < trips; ++t) {
    check_unroll(n, 1, t, trips, body_nodes);
    const std::string prefix = node_name(n) + "/" + std::to_string(t) + "/";
    std::vector<const Node*> nodes;
    std::vector<std::string> bind = carried;
    for (int j = 0; j < m; ++j) {
      const int64_t at = in_dirs[static_cast<size_t>(j)] ? trips - 1 - t : t;
      const std::string index = int_constant(prefix + "index" + std::to_string(j), {at}, true);
      const std::string elem = fresh_name(prefix + body.input(states + j).name());
      nodes.push_back(&synth("Gather", {n.input(states + j), index}, elem, prefix + "scan_input" + std::to_string(j)));
      auto* a = synthetic_.back().add_attribute();
      a->set_name("axis");
      a->set_type(onnx::AttributeProto_AttributeType_INT);
      a->set_i(axes[static_cast<size_t>(j)]);
      bind.push_back(elem);
    }
    std::unordered_map<std::string, std::string> renamed;
    for (const Node* s : inline_graph(n, body, prefix, bind, {}, renamed)) nodes.push_back(s);
    auto lookup = [&](const std::string& s) {
      auto it = renamed.find(s);
      return it == renamed.end() ? s : it->second;
    };
    count_reads(nodes);
    for (int i = 0; i < body.output_size(); ++i) ++m_.consumers_[lookup(body.output(i).name())];
    for (const Node* s : nodes) m_.import_node(*s);
    bool poisoned = false;
    for (int i = 0; i < body.output_size(); ++i) {
      const std::string v = lookup(body.output(i).name());
      auto it = m_.values_.find(v);
      if (it == m_.values_.end()) m_.fail_node(n, "its body's output '" + utf8_safe(body.output(i).name()) + "' is not computed");
      poisoned = poisoned || it->second.poisoned;
      if (i < states) carried[static_cast<size_t>(i)] = v;
      else scans[static_cast<size_t>(i - states)].push_back(v);
    }
    if (poisoned) {
      for (const auto& o : n.output()) {
        if (!o.empty()) m_.values_[o].poisoned = true;
      }
      return;
    }
  }
  finish_unrolled(n, trips, carried, std::move(scans), out_axes, out_dirs);
}

}  // namespace tessera::graph::onnx_import
