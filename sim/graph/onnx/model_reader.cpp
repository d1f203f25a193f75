// Reading the model: the protobuf and its opset, where external data may live, the graph
// inputs and the shapes they are bound to, and the order the nodes are imported in.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "sim/common/checked_math.h"
#include "sim/common/error.h"
#include "sim/graph/onnx/importer.h"

namespace tessera::graph::onnx_import {

void Importer::read_model() {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path_, ec)) fail("cannot open the ONNX model: no such file");
  std::ifstream f(path_, std::ios::binary);
  if (!f) fail("cannot open the ONNX model for reading");
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.empty()) fail("the ONNX model is empty (0 bytes)");
  if (!model_.ParseFromString(bytes)) {
    fail("not a valid ONNX model: the protobuf does not parse (truncated or corrupt file, " +
         std::to_string(bytes.size()) + " bytes)");
  }
  if (!model_.has_graph() || model_.graph().node_size() == 0) {
    fail("not a valid ONNX model: it has no graph nodes (truncated or corrupt file?)");
  }
  bool have_opset = false;
  for (const auto& o : model_.opset_import()) {
    if (!(o.domain().empty() || o.domain() == "ai.onnx")) continue;
    // Checked as int64: a huge version must not pass after truncation to int.
    const int64_t v = o.version();
    if (v < 1) fail("opset " + std::to_string(v) + " of the default domain is not a valid opset version (>= 1)");
    if (v > 21) fail("opset " + std::to_string(v) + " is newer than this importer knows (up to 21)");
    opset_ = static_cast<int>(v);
    have_opset = true;
  }
  if (!have_opset) fail("not a valid ONNX model: it declares no opset for the default domain (truncated or corrupt file?)");
}

// Binding the graph inputs (Importer::bind_inputs), in steps: read them, check the
// options that name them, bind the named dimensions, choose each batch axis, then build
// each input's value; dimensions no step binds are reported all at once.
class InputBinder {
 public:
  explicit InputBinder(Importer& m) : m_(m), opts_(m.opts_) {}
  void run() {
    read_inputs();
    check_option_names();
    bind_named_dims();
    choose_batch_axes();
    for (In& r : ins_) bind(r);
    report_unbound();
  }

 private:
  struct In {
    int idx = 0;
    const onnx::ValueInfoProto* info = nullptr;
    int rank = -1;
    int batch_axis = -1;
    int evidence = 0;                 // how batch_axis was found (kDefault, ...)
    std::vector<int64_t> fixed;       // > 0 where the model fixes the dim
    std::vector<std::string> params;  // dim_param names
  };
  enum Evidence { kDefault = 0, kNamed, kUse, kStrongUse, kGiven };

  void read_inputs();
  void check_option_names() const;
  void bind_named_dims();
  void choose_batch_axes();
  void bind(In& r);  // the input's dimensions and its value
  void report_unbound();
  [[noreturn]] void fail(const std::string& msg) const { m_.fail(msg); }

  Importer& m_;
  const OnnxOptions& opts_;
  std::vector<In> ins_;
  std::set<std::string> input_names_, param_names_;
  std::map<std::string, int64_t> param_value_;
  std::map<std::string, std::vector<std::string>> unbound_named_;  // param -> "input dim d"
  std::vector<std::string> unbound_;
  std::string batch_from_;
  bool have_batch_ = false;
};

void Importer::bind_inputs() {
  InputBinder(*this).run();
  bind_input_values();
}

void InputBinder::read_inputs() {
  std::unordered_set<std::string> inits;
  for (const auto& t : m_.model_.graph().initializer()) inits.insert(t.name());
  const auto& ginputs = m_.model_.graph().input();
  for (int idx = 0; idx < ginputs.size(); ++idx) {
    const auto& in = ginputs[idx];
    if (inits.count(in.name())) continue;  // an initializer listed as an input (older exporters)
    if (!in.type().has_tensor_type()) fail("graph input '" + in.name() + "' is not a tensor (sequences and maps are not supported)");
    const auto& tt = in.type().tensor_type();
    In r;
    r.idx = idx;
    r.info = &in;
    r.rank = tt.has_shape() ? tt.shape().dim_size() : -1;
    if (r.rank > kMaxRank) {
      fail("input '" + utf8_safe(in.name()) + "' has rank " + std::to_string(r.rank) + " (at most " + std::to_string(kMaxRank) + ")");
    }
    for (int d = 0; d < r.rank; ++d) {
      const auto& dim = tt.shape().dim(d);
      if (dim.has_dim_value() && (dim.dim_value() < 0 || dim.dim_value() > kMaxBoundDim)) {
        fail("input '" + utf8_safe(in.name()) + "' dimension " + std::to_string(d) + " is " + std::to_string(dim.dim_value()) +
             " in the model (allowed: 1 to " + std::to_string(kMaxBoundDim) + ", the --batch cap, per dimension)");
      }
      // 0 means an empty tensor (not a dynamic dimension): -2 marks it, reported below unless bound.
      r.fixed.push_back(dim.has_dim_value() ? (dim.dim_value() > 0 ? dim.dim_value() : -2) : -1);
      r.params.push_back(dim.has_dim_param() ? dim.dim_param() : "");
      if (!r.params.back().empty()) param_names_.insert(r.params.back());
    }
    input_names_.insert(in.name());
    m_.input_names_.insert(in.name());
    ins_.push_back(std::move(r));
  }
}

void InputBinder::check_option_names() const {
  for (const auto& [name, values] : opts_.input_values) {
    if (!input_names_.count(name)) {
      std::vector<std::string> names(input_names_.begin(), input_names_.end());
      fail("--input-value names '" + name + "', which is not a graph input (" + join(names) + ")");
    }
  }
  for (const auto& [name, axis] : opts_.batch_axes) {
    if (!input_names_.count(name)) {
      std::vector<std::string> names(input_names_.begin(), input_names_.end());
      fail("--batch-axis names '" + name + "', which is not a graph input (" + join(names) + ")");
    }
    if (opts_.input_values.count(name) || opts_.constant_inputs.count(name)) {
      fail("--batch-axis " + name + "=" + std::to_string(axis) + ": input '" + name +
           "' is bound by value (--input-value), so it has no batch");
    }
  }
}

void InputBinder::bind_named_dims() {
  // Named dimensions: bound directly (--input-shape sequence=128) or through any input
  // that has them (--input-shape input_ids=1,128 binds 'sequence' for every input).
  for (const auto& [name, dims] : opts_.input_shapes) {
    if (input_names_.count(name)) continue;
    if (!param_names_.count(name)) {
      std::vector<std::string> names(input_names_.begin(), input_names_.end());
      std::vector<std::string> params(param_names_.begin(), param_names_.end());
      fail("--input-shape names '" + name + "', which is neither a graph input (" + join(names) + ")" +
           (params.empty() ? std::string() : " nor a named dimension (" + join(params) + ")"));
    }
    if (dims.size() != 1) fail("--input-shape " + name + " names a dimension: give one value, e.g. " + name + "=128");
    if (dims[0] < 1 || dims[0] > kMaxBoundDim) {
      fail("--input-shape " + name + "=" + std::to_string(dims[0]) + ": a dimension must be in [1, " + std::to_string(kMaxBoundDim) +
           "] (the --batch cap)");
    }
    param_value_[name] = dims[0];
  }
  for (const In& r : ins_) {
    auto bound = opts_.input_shapes.find(r.info->name());
    if (bound == opts_.input_shapes.end() || r.rank < 0) continue;
    for (int d = 0; d < r.rank && d < static_cast<int>(bound->second.size()); ++d) {
      const std::string& p = r.params[static_cast<size_t>(d)];
      if (p.empty()) continue;
      auto [it, fresh] = param_value_.emplace(p, bound->second[static_cast<size_t>(d)]);
      if (!fresh && it->second != bound->second[static_cast<size_t>(d)]) {
        fail("--input-shape " + r.info->name() + " binds dimension '" + p + "' to " +
             std::to_string(bound->second[static_cast<size_t>(d)]) + ", but it is already bound to " + std::to_string(it->second));
      }
    }
  }
}

void InputBinder::choose_batch_axes() {
  // Each input's batch axis: --batch-axis, else what its uses say (an LSTM's state, a
  // Gemm's transposed A; MatMul, Gemm and Conv read their first axis as the batch), else
  // the dimension named like the batch of the other inputs, else the first axis.
  const UseIndex uses(m_.model_.graph());
  for (In& r : ins_) {
    const std::string& name = r.info->name();
    auto bound = opts_.input_shapes.find(name);
    const int rk = r.rank >= 0 ? r.rank : bound != opts_.input_shapes.end() ? static_cast<int>(bound->second.size()) : -1;
    if (rk <= 0 || opts_.constant_inputs.count(name) || opts_.input_values.count(name)) continue;  // no batch
    if (auto given = opts_.batch_axes.find(name); given != opts_.batch_axes.end()) {
      if (given->second < -rk || given->second >= rk) {
        fail("--batch-axis " + name + "=" + std::to_string(given->second) + ": input '" + utf8_safe(name) + "' has rank " +
             std::to_string(rk) + " (allowed axes: " + std::to_string(-rk) + " to " + std::to_string(rk - 1) + ")");
      }
      r.batch_axis = static_cast<int>(given->second < 0 ? given->second + rk : given->second);
      r.evidence = kGiven;
      continue;
    }
    bool strong = false;
    const int used = uses.usage_batch_axis(name, rk, strong);
    r.batch_axis = used >= 0 ? std::min(rk - 1, used) : 0;
    r.evidence = used < 0 ? kDefault : strong ? kStrongUse : kUse;
  }
  std::set<std::string> batch_params;  // the batch's named dimension(s)
  for (bool any : {false, true}) {
    for (const In& r : ins_) {
      const auto a = static_cast<size_t>(r.batch_axis);
      if (r.batch_axis < 0 || a >= r.params.size() || r.params[a].empty()) continue;
      if (any ? r.evidence == kDefault : r.evidence > kNamed) batch_params.insert(r.params[a]);
    }
    if (!batch_params.empty()) break;  // evidence from uses first; else every input's first axis
  }
  for (In& r : ins_) {
    if (r.evidence != kDefault || r.batch_axis < 0) continue;
    int named = -1, matches = 0;
    for (size_t d = 0; d < r.params.size(); ++d) {
      if (!r.params[d].empty() && batch_params.count(r.params[d])) named = static_cast<int>(d), ++matches;
    }
    if (matches == 1) r.batch_axis = named, r.evidence = kNamed;
  }
}

void InputBinder::bind(In& r) {
  const std::string& name = r.info->name();
  const bool as_constant = opts_.constant_inputs.count(name) > 0;
  auto bound = opts_.input_shapes.find(name);
  if (r.rank < 0 && bound == opts_.input_shapes.end()) {
    unbound_.push_back("input '" + name + "' has no shape in the model (give all of it: --input-shape " + name + "=d0,d1,...)");
    return;
  }
  const int rk = r.rank >= 0 ? r.rank : static_cast<int>(bound->second.size());
  if (r.rank < 0) {
    r.fixed.assign(static_cast<size_t>(rk), -1);
    r.params.assign(static_cast<size_t>(rk), "");
  }
  if (bound != opts_.input_shapes.end() && static_cast<int>(bound->second.size()) != rk) {
    fail("--input-shape " + name + " gives " + std::to_string(bound->second.size()) + " dimensions, the model's input has " +
         std::to_string(rk));
  }
  const bool by_value = opts_.input_values.count(name) > 0;
  const int ba = rk == 0 || as_constant || by_value ? -1 : std::min(rk - 1, std::max(r.batch_axis, 0));
  if (m_.info_) m_.info_->batch_axes[name] = ba;
  std::vector<int64_t> dims(static_cast<size_t>(rk), -1);
  for (int d = 0; d < rk; ++d) {
    const int64_t fixed = r.fixed[static_cast<size_t>(d)];
    const std::string& param = r.params[static_cast<size_t>(d)];
    int64_t& out = dims[static_cast<size_t>(d)];
    if (bound != opts_.input_shapes.end()) {
      const int64_t want = bound->second[static_cast<size_t>(d)];
      if (want < 1 || want > kMaxBoundDim) {
        fail("--input-shape " + name + ": dimension " + std::to_string(d) + " is " + std::to_string(want) + ", must be in [1, " +
             std::to_string(kMaxBoundDim) + "] (the --batch cap)");
      }
      if (fixed > 0 && fixed != want && d != ba) {
        fail("--input-shape " + name + ": dimension " + std::to_string(d) + " is fixed to " + std::to_string(fixed) +
             " in the model, not " + std::to_string(want));
      }
      out = want;
    } else if (!param.empty() && param_value_.count(param)) {
      out = param_value_[param];
    } else if (fixed > 0) {
      out = fixed;
    } else if (fixed == -2 && d != ba) {
      fail("input '" + utf8_safe(name) + "' dimension " + std::to_string(d) +
           " is 0 in the model: empty tensors are not supported (if the dimension is dynamic, bind it with --input-shape " +
           utf8_safe(name) + "=d0,d1,...)");
    } else if (d == ba) {
      out = 1;  // a dynamic batch defaults to 1 (--batch sets the run's batch)
    } else if (!param.empty()) {
      unbound_named_[param].push_back("'" + name + "' dim " + std::to_string(d));
    } else {
      unbound_.push_back("input '" + name + "' dimension " + std::to_string(d) + " (unnamed)");
    }
  }
  int64_t elements = 1;
  for (int64_t d : dims) {
    if (d > 0 && !checked_mul(elements, d)) elements = kMaxTensorElements + 1;
    else if (d > 0) elements *= d;
  }
  if (elements > kMaxTensorElements) {
    fail("input '" + utf8_safe(name) + "' " + shape_text(dims) + " has more than 2^50 elements (at most " +
         std::to_string(kMaxTensorElements) + ")");
  }
  Value v;
  v.elem = r.info->type().tensor_type().elem_type();
  v.is_float = is_float_type(v.elem);
  if (ba < 0) {
    v.constant = true;
    for (int64_t d : dims) v.shape.push_back({std::max<int64_t>(d, 1), 0});
  } else {
    v.constant = false;
    v.graph_input = r.idx;
    v.prefer_channels_last = rk >= 3 && ba == 0 && m_.feeds_spatial(name);
    for (int d = 0; d < rk; ++d) v.shape.push_back(d == ba ? Sym{1, 1} : Sym{std::max<int64_t>(dims[static_cast<size_t>(d)], 1), 0});
    const int64_t b = dims[static_cast<size_t>(ba)];
    if (b > 0) {
      if (have_batch_ && b != m_.batch_) {
        fail("graph inputs disagree on the batch: '" + batch_from_ + "' has " + std::to_string(m_.batch_) + ", '" + name +
             "' has " + std::to_string(b) + " on axis " + std::to_string(ba) +
             " (each input's batch axis is inferred from its use; set it with --batch-axis NAME=AXIS)");
      }
      m_.batch_ = b, have_batch_ = true, batch_from_ = name;
    }
  }
  m_.values_[name] = std::move(v);
}

void InputBinder::report_unbound() {
  for (const auto& [param, where] : unbound_named_) {
    unbound_.push_back("'" + param + "' (" + join(where) + ")");
  }
  if (!unbound_.empty()) {
    // Reported with the nodes no binding would make importable (all blockers at once).
    m_.blockers_ = Blockers::without_handler(m_.model_.graph());
    fail(m_.blockers_.message("dynamic dimension(s) left unbound: " + join(unbound_, "; ") +
                            ". Bind them with --input-shape INPUT=d0,d1,... (the first dimension is the batch) or "
                            "--input-shape DIM=value for a named dimension"));
  }
}

// --input-value NAME=v0,v1,...: the input becomes a constant with these elements (its
// shape as bound), so that shape arithmetic, If conditions and Loop counts fold.
void Importer::bind_input_values() {
  for (const auto& [name, given] : opts_.input_values) {
    Value& v = values_.at(name);
    const std::vector<int64_t> dims = full_dims(v.shape);
    const int64_t n = count(dims);
    const std::string flag = "--input-value " + name;
    if (n != static_cast<int64_t>(given.size())) {
      fail(flag + ": input '" + utf8_safe(name) + "' " + shape_text(dims) + " has " + std::to_string(n) + " element(s), " +
           std::to_string(given.size()) + " value(s) given");
    }
    v.constant = true;
    v.graph_input = -1;
    v.has_data = true;
    v.ints.clear(), v.floats.clear();
    for (double d : given) {
      if (v.is_float) {
        v.floats.push_back(d);
        continue;
      }
      const auto i = checked_to_int64(d);
      const char* type_name = onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(v.elem)).c_str();
      if (std::floor(d) == d && (!i || std::fabs(d) > 9007199254740992.0)) {
        // A whole number that does not fit (or is not held exactly): not "not an integer" (issue 34 item 7).
        fail(flag + ": input '" + utf8_safe(name) + "' holds integers (" + type_name + "), and " + number_text(d) +
             (i ? " is beyond 2^53, where a value given on the command line is not held exactly"
                : " does not fit 64 bits (allowed: -9223372036854775808 to 9223372036854775807; a value beyond 2^53 is not "
                  "held exactly)"));
      }
      if (!i || static_cast<double>(*i) != d) {
        fail(flag + ": input '" + utf8_safe(name) + "' holds integers (" +
             onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(v.elem)) + "), " + number_text(d) +
             " is not one");
      }
      v.ints.push_back({*i, 0});
    }
  }
}

std::vector<const onnx::NodeProto*> Importer::topo_order() {
  const auto& nodes = model_.graph().node();
  // Every value has one writer (ONNX graphs are single-assignment): a second node, or a
  // node writing an initializer or graph input, would silently replace it.
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < nodes.size(); ++i) {
    for (const auto& o : nodes[i].output()) {
      if (o.empty()) continue;
      auto [it, fresh] = producer.emplace(o, i);
      if (!fresh) {
        fail("value '" + utf8_safe(o) + "' is written by two nodes: " + where(nodes[it->second]) + " and " + where(nodes[i]) +
             " (each value must have one producer)");
      }
      if (values_.count(o)) fail(where(nodes[i]) + ": writes '" + utf8_safe(o) + "', which is already an initializer or graph input");
    }
  }
  std::vector<int> state(static_cast<size_t>(nodes.size()), 0);  // 0 new, 1 visiting, 2 done
  std::vector<const Node*> order;
  order.reserve(static_cast<size_t>(nodes.size()));
  // Depth-first with an explicit stack (node, next input): a long chain listed in reverse
  // order must not recurse once per node.
  std::vector<std::pair<int, int>> stack;
  auto visit = [&](int root) {
    if (state[static_cast<size_t>(root)] == 2) return;
    state[static_cast<size_t>(root)] = 1;
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
      auto& [i, next] = stack.back();
      const Node& nd = nodes[i];
      // Its inputs, then the outer values its subgraphs read (If, Loop, Scan).
      const auto sub = main_subgraph_refs_.find(i);
      const int refs = nd.input_size() + (sub == main_subgraph_refs_.end() ? 0 : static_cast<int>(sub->second.size()));
      if (next == refs) {
        state[static_cast<size_t>(i)] = 2;
        order.push_back(&nd);
        stack.pop_back();
        continue;
      }
      const int k = next++;
      const std::string& in = k < nd.input_size() ? nd.input(k) : sub->second[static_cast<size_t>(k - nd.input_size())];
      if (in.empty() || values_.count(in)) continue;
      auto p = producer.find(in);
      if (p == producer.end()) {
        fail(where(nd) + ": input '" + utf8_safe(in) +
             "' is not produced by any node, initializer or graph input (truncated or corrupt file?)");
      }
      const int j = p->second;
      if (state[static_cast<size_t>(j)] == 2) continue;
      if (state[static_cast<size_t>(j)] == 1) fail(where(nodes[j]) + ": the graph has a cycle");
      state[static_cast<size_t>(j)] = 1;
      stack.emplace_back(j, 0);  // invalidates i/next: the loop re-reads the top
    }
  };
  // Over the roots in file order: keeps the original order for sorted graphs.
  for (int i = 0; i < nodes.size(); ++i) visit(i);
  return order;
}

// An image-like graph input: it reaches a conv/pool (directly or through element-wise
// ops), so it is stored channels last from the start.
bool Importer::feeds_spatial(const std::string& value, int depth) const {
  // Breadth first over the consumer lists, each value once: linear in the graph, however
  // wide (a recursive scan of every node per consumer was exponential in the fan-out).
  const auto& nodes = model_.graph().node();
  std::vector<std::string> level = {value};
  std::unordered_set<std::string> seen = {value};
  for (; depth <= 4 && !level.empty(); ++depth) {
    std::vector<std::string> next;
    for (const auto& v : level) {
      auto c = consumer_nodes_.find(v);
      if (c == consumer_nodes_.end()) continue;
      for (int i : c->second) {
        const auto& n = nodes[i];
        const OnnxOp* row = find_onnx_op(n.op_type());
        if (!row) continue;
        if (row->has(kSpatial)) return true;
        if (row->has(kSpatialThrough) && n.output_size() > 0 && seen.insert(n.output(0)).second) next.push_back(n.output(0));
      }
    }
    level = std::move(next);
  }
  return false;
}

}  // namespace tessera::graph::onnx_import

namespace tessera::graph {

namespace {

// NAME=REST, the text of one --FLAG binding: the name and the text after '='.
std::pair<std::string, std::string> split_binding(const std::string& text, const std::string& flag,
                                                  const std::string& expected) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    throw InputError(flag + " '" + text + "': expected " + expected);
  }
  return {text.substr(0, eq), text.substr(eq + 1)};
}

// The comma-separated items of `list`, an empty one where two commas meet or the list ends
// in a comma (so that the caller refuses it by name).
std::vector<std::string> comma_items(const std::string& list) {
  std::vector<std::string> items;
  size_t begin = 0;
  for (;;) {
    const size_t comma = list.find(',', begin);
    items.push_back(list.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin));
    if (comma == std::string::npos) return items;
    begin = comma + 1;
  }
}

// `item` as an integer with nothing after it (std::stoll: leading spaces are skipped); false
// when it is not one.
bool whole_integer(const std::string& item, long long& v) {
  size_t used = 0;
  try {
    v = std::stoll(item, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used != 0 && used == item.size();
}

}  // namespace

std::pair<std::string, std::vector<int64_t>> parse_input_shape(const std::string& text) {
  auto [name, list] = split_binding(text, "--input-shape", "NAME=d0,d1,... (e.g. input=1,3,224,224)");
  std::pair<std::string, std::vector<int64_t>> out{std::move(name), {}};
  for (const std::string& item : comma_items(list)) {
    long long v = 0;
    if (!whole_integer(item, v) || v < 1) {
      throw InputError("--input-shape '" + text + "': dimension '" + item + "' is not a positive integer");
    }
    out.second.push_back(v);
  }
  return out;
}

std::pair<std::string, std::vector<double>> parse_input_value(const std::string& text) {
  auto [name, list] = split_binding(text, "--input-value", "NAME=VALUE or NAME=v0,v1,... (e.g. sr=16000)");
  std::pair<std::string, std::vector<double>> out{std::move(name), {}};
  for (const std::string& item : comma_items(list)) {
    const char* begin = item.c_str();
    char* end = nullptr;
    errno = 0;
    const double v = item == "true" ? 1.0 : item == "false" ? 0.0 : std::strtod(begin, &end);
    const bool word = item == "true" || item == "false";
    if (!word && (item.empty() || end != begin + item.size() || std::isspace(static_cast<unsigned char>(item[0])))) {
      throw InputError("--input-value '" + text + "': value '" + item + "' is not a number");
    }
    if (!std::isfinite(v)) throw InputError("--input-value '" + text + "': value '" + item + "' is not a finite number");
    out.second.push_back(v);
  }
  return out;
}

std::pair<std::string, int64_t> parse_batch_axis(const std::string& text) {
  const auto [name, item] = split_binding(text, "--batch-axis", "NAME=AXIS (e.g. state=1)");
  long long v = 0;
  if (!whole_integer(item, v) || std::isspace(static_cast<unsigned char>(item[0]))) {
    throw InputError("--batch-axis '" + text + "': axis '" + item + "' is not an integer");
  }
  if (v < -onnx_import::kMaxRank || v >= onnx_import::kMaxRank) {
    throw InputError("--batch-axis '" + text + "': axis " + item + " is out of range (an axis of a tensor of rank at most " +
                     std::to_string(onnx_import::kMaxRank) + ")");
  }
  return {name, v};
}

}  // namespace tessera::graph
