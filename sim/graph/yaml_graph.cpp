// The YAML graph format (docs/workloads.md): name/op/inputs/dtype here; each op's
// attribute keys and their parsing come from its OpDef (sim/graph/ops/).
#include <string>
#include <unordered_map>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/graph/graph.h"
#include "sim/graph/ops/op_util.h"
#include "sim/graph/ops/registry.h"

namespace tessera::graph {

namespace {

std::vector<std::string> allowed_keys(const OpDef& def) {
  std::vector<std::string> allowed = {"name", "op", "input", "inputs", "dtype"};
  for (std::string_view k : def.yaml_keys) allowed.emplace_back(k);
  return allowed;
}

}  // namespace

Graph parse_graph_yaml(const YamlNode& root) {
  root.expect_keys({"name", "description", "batch", "dtype", "inputs", "layers", "outputs"});
  Graph g;
  g.source = root.file();
  g.name = root.at("name").as_string();
  g.description = root.string_or("description", "");
  g.default_batch = root.int_or("batch", 1, 1, 1 << 24);
  const Dtype default_dtype = root.get("dtype") ? ops::dtype_of(root.at("dtype")) : Dtype::kInt8;
  bool declares_dtypes = root.has("dtype");

  // Tensor ids by name: a linear search per reference made long chains quadratic (audit D6).
  std::unordered_map<std::string, int> ids;
  auto find = [&](const std::string& name) {
    const auto it = ids.find(name);
    return it == ids.end() ? -1 : it->second;
  };
  auto add_tensor = [&](const YamlNode& where, const std::string& name, Shape shape, Dtype dtype, int producer) {
    if (find(name) >= 0) where.fail("name '" + name + "' is already used by an earlier input or layer");
    g.tensors.push_back(Tensor{name, std::move(shape), dtype, producer});
    ids.emplace(name, static_cast<int>(g.tensors.size() - 1));
    return static_cast<int>(g.tensors.size() - 1);
  };

  const auto inputs = root.at("inputs").elements();
  if (inputs.empty()) root.at("inputs").fail("a graph needs at least one input");
  for (const auto& in : inputs) {
    in.expect_keys({"name", "shape", "dtype"});
    Shape shape = in.at("shape").as_int_list(1, 1 << 24);
    if (shape.empty() || shape.size() > 4) {
      in.at("shape").fail("per-sample shape must be [features], [rows, features], [H, W, C] or [D, H, W, C], got " +
                          shape_text(shape));
    }
    const Dtype dt = in.get("dtype") ? ops::dtype_of(in.at("dtype")) : default_dtype;
    declares_dtypes = declares_dtypes || in.has("dtype");
    g.inputs.push_back(add_tensor(in, in.at("name").as_string(), shape, dt, -1));
  }

  const auto layers = root.at("layers").elements();
  if (layers.empty()) root.at("layers").fail("a graph needs at least one layer");
  int previous = g.inputs.front();
  for (const auto& node : layers) {
    if (!node.is_map()) node.fail("expected a layer mapping with keys name and op");
    const std::string name = node.at("name").as_string();
    const std::string op_text = node.at("op").as_string();
    const OpDef* def = find_op(op_text);
    if (!def) node.at("op").fail("layer '" + name + "': unsupported op '" + op_text + "'; supported: " + supported_ops_text());
    Layer layer;
    layer.name = name;
    layer.op = def->kind;
    node.expect_keys(allowed_keys(*def));

    // Resolve inputs by name; default: the previous layer's output.
    auto resolve = [&](const YamlNode& ref) {
      const std::string ref_name = ref.as_string();
      const int id = find(ref_name);
      if (id < 0) ref.fail("layer '" + name + "': unknown input '" + ref_name + "' (inputs must name a graph input or an earlier layer)");
      return id;
    };
    if (node.has("input") && node.has("inputs")) node.fail("layer '" + name + "': give either input or inputs, not both");
    if (auto in = node.get("input")) layer.inputs.push_back(resolve(*in));
    if (auto ins = node.get("inputs")) {
      for (const auto& e : ins->elements()) layer.inputs.push_back(resolve(e));
    }
    if (layer.inputs.empty()) layer.inputs.push_back(previous);
    if (auto c = node.get("constant")) {  // only ops with a constant operand allow the key
      layer.has_const = true;
      layer.const_shape = c->as_int_list(1, 1 << 24);
    }

    // Arity of the YAML form (the shape rules check it too; this keeps the messages
    // short). A range other than "n" or "n or more" is left to the shape rule.
    const Arity arity = def->inputs;
    const size_t got = layer.inputs.size();
    if (arity.max == Arity::kMany) {
      if (got < static_cast<size_t>(arity.min)) {
        node.fail("layer '" + name + "': op " + op_text + " takes two or more inputs, got " + std::to_string(got));
      }
    } else if (arity.min == arity.max) {
      const size_t want = static_cast<size_t>(arity.min) - (layer.has_const ? 1 : 0);
      if (got != want) {
        node.fail("layer '" + name + "': op " + op_text + " takes " + std::to_string(want) + " input(s), got " +
                  std::to_string(got));
      }
    }
    const Tensor& x = g.tensors[layer.inputs[0]];
    const Dtype out_dtype = node.get("dtype") ? ops::dtype_of(node.at("dtype")) : x.dtype;
    // Weights are of the graph's dtype unless the layer says otherwise (weight_dtype).
    layer.weight_dtype = default_dtype;
    if (def->parse_yaml) def->parse_yaml(node, g, layer);
    declares_dtypes = declares_dtypes || node.has("dtype") || node.has("weight_dtype");
    Shape out;
    try {
      out = infer_layer(g, layer);
    } catch (const ShapeError& e) {
      node.fail("layer '" + name + "': " + e.what());
    }
    const int layer_index = static_cast<int>(g.layers.size());
    layer.output = add_tensor(node, name, out, out_dtype, layer_index);
    previous = layer.output;
    g.layers.push_back(std::move(layer));
  }

  if (auto outs = root.get("outputs")) {
    for (const auto& o : outs->elements()) {
      const int id = find(o.as_string());
      if (id < 0 || g.tensors[id].producer < 0) o.fail("unknown output '" + o.as_string() + "' (must name a layer)");
      g.outputs.push_back(id);
    }
  } else {
    g.outputs.push_back(previous);
  }
  if (declares_dtypes) g.declared_dtype = default_dtype;
  return g;
}

Graph load_graph_yaml(const std::filesystem::path& path) {
  return parse_graph_yaml(YamlNode::load_file(path));
}

}  // namespace tessera::graph
