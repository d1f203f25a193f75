#pragma once
// Private to the ONNX importer: control flow inlined at import time (control_flow.cpp). The
// Importer owns one ControlFlow for the model; it keeps what inlining adds to the model (the
// copied and synthesized nodes, the names they took, which node wrote each value) so that
// nested If, Loop and Scan nodes share one set of fresh names and one node budget.
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tessera::graph::onnx_import {

class Importer;

// Names n's subgraphs read from the enclosing scope (If branches, Loop and Scan bodies).
std::vector<std::string> subgraph_refs(const onnx::NodeProto& n);
std::vector<std::string> node_refs(const onnx::NodeProto& n);  // n's inputs, then subgraph_refs(n)

class ControlFlow {
 public:
  explicit ControlFlow(Importer& m) : m_(m) {}
  ControlFlow(const ControlFlow&) = delete;
  ControlFlow& operator=(const ControlFlow&) = delete;

  // The handlers of the If, Loop and Scan rows.
  void op_if(const onnx::NodeProto& n);
  void op_loop(const onnx::NodeProto& n);
  void op_scan(const onnx::NodeProto& n);

 private:
  using Node = onnx::NodeProto;

  const onnx::GraphProto& graph_attr(const Node& n, const std::string& name) const;  // required
  // A scalar condition or count known at import time; nullopt when it is not.
  std::optional<int64_t> known_scalar(const Node& n, const std::string& value, const std::string& what);
  // Why `value` is not known at import time: the graph inputs it is computed from.
  std::string undecided(const std::string& value) const;
  // Copies `body`'s nodes into this graph: body input i reads `bind[i]`, a value the body
  // defines becomes `targets[name]` or `prefix + name`, other names read the enclosing
  // scope. Returns the copies in order; `renamed` maps the body's names to the new ones.
  std::vector<const Node*> inline_graph(const Node& owner, const onnx::GraphProto& body, const std::string& prefix,
                                        const std::vector<std::string>& bind,
                                        const std::unordered_map<std::string, std::string>& targets,
                                        std::unordered_map<std::string, std::string>& renamed);
  const Node& synth(const std::string& op, const std::vector<std::string>& ins, const std::string& out, const std::string& name);
  std::string fresh_name(const std::string& base);  // unused by the model and by every value so far
  std::string int_constant(const std::string& base, const std::vector<int64_t>& v, bool scalar);
  void count_reads(const std::vector<const Node*>& nodes);   // the Importer's consumers_ of what the new nodes read
  void stack_scan_outputs(const Node& n, const std::vector<std::string>& parts, int64_t axis, const std::string& out);
  // The outputs of an unrolled Loop or Scan: its carried values (outputs 0..carried-1), then each scan
  // output stacked from its per-iteration parts along axes[j] (in iteration order, or reversed).
  void finish_unrolled(const Node& n, int64_t iterations, const std::vector<std::string>& carried,
                       std::vector<std::vector<std::string>> scans, const std::vector<int64_t>& axes,
                       const std::vector<int64_t>& reversed);
  void check_unroll(const Node& n, int64_t iterations, int64_t done, std::optional<int64_t> trip_count,
                    int64_t body_nodes) const;

  Importer& m_;
  std::unordered_set<std::string> reserved_names_;  // every value name the model uses (filled on the first inlining)
  std::unordered_map<std::string, const Node*> inlined_producer_;  // value -> the inlined node that wrote it
  std::deque<Node> synthetic_;  // nodes made by inlining control flow (stable addresses)
  int64_t inlined_nodes_ = 0;
};

}  // namespace tessera::graph::onnx_import
