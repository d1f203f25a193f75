#include "sim/graph/graph.h"

#include <map>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"

namespace tessera::graph {

int64_t shape_elements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_text(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

std::string_view op_name(OpKind op) {
  switch (op) {
    case OpKind::kFc: return "fc";
    case OpKind::kConv2d: return "conv2d";
    case OpKind::kMaxPool: return "maxpool";
    case OpKind::kAvgPool: return "avgpool";
    case OpKind::kGlobalAvgPool: return "global_avgpool";
    case OpKind::kFlatten: return "flatten";
    case OpKind::kConcat: return "concat";
    case OpKind::kAdd: return "add";
    case OpKind::kMul: return "mul";
    case OpKind::kSigmoid: return "sigmoid";
    case OpKind::kTanh: return "tanh";
    case OpKind::kRelu: return "relu";
  }
  return "?";
}

bool is_matrix_op(OpKind op) { return op == OpKind::kFc || op == OpKind::kConv2d; }
bool is_layout_op(OpKind op) { return op == OpKind::kFlatten; }

std::string_view activation_name(Activation a) {
  switch (a) {
    case Activation::kNone: return "none";
    case Activation::kRelu: return "relu";
    case Activation::kSigmoid: return "sigmoid";
    case Activation::kTanh: return "tanh";
  }
  return "?";
}

int64_t Graph::total_weights() const {
  int64_t n = 0;
  for (const auto& l : layers) n += l.weight_count();
  return n;
}

int64_t Graph::total_macs_per_sample() const {
  int64_t n = 0;
  for (const auto& l : layers) n += l.macs_per_sample();
  return n;
}

int Graph::find_tensor(const std::string& name) const {
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

namespace {

const std::map<std::string, OpKind>& op_table() {
  static const std::map<std::string, OpKind> table = {
      {"fc", OpKind::kFc},           {"conv2d", OpKind::kConv2d},
      {"maxpool", OpKind::kMaxPool}, {"avgpool", OpKind::kAvgPool},
      {"global_avgpool", OpKind::kGlobalAvgPool},
      {"flatten", OpKind::kFlatten}, {"concat", OpKind::kConcat},
      {"add", OpKind::kAdd},         {"mul", OpKind::kMul},
      {"sigmoid", OpKind::kSigmoid}, {"tanh", OpKind::kTanh},
      {"relu", OpKind::kRelu}};
  return table;
}

std::pair<int64_t, int64_t> pair_of(const YamlNode& node) {
  auto v = node.as_int_list(1, 1 << 20);
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() == 2) return {v[0], v[1]};
  node.fail("expected one integer or a list of two");
}

Dtype dtype_of(const YamlNode& node) {
  auto d = parse_dtype(node.as_choice({"int8", "int16"}));
  return *d;
}

// Output size along one axis and the padding before/after for `padding`.
struct AxisPlan {
  int64_t out = 0, pad_before = 0, pad_after = 0;
};

AxisPlan plan_axis(const YamlNode& layer, const std::string& padding_mode, int64_t explicit_pad,
                   int64_t in, int64_t kernel, int64_t stride) {
  AxisPlan p;
  if (padding_mode == "same") {
    p.out = (in + stride - 1) / stride;
    const int64_t total = std::max<int64_t>((p.out - 1) * stride + kernel - in, 0);
    p.pad_before = total / 2;
    p.pad_after = total - p.pad_before;
  } else {
    const int64_t pad = padding_mode == "valid" ? 0 : explicit_pad;
    if (in + 2 * pad < kernel) {
      layer.fail("window of " + std::to_string(kernel) + " does not fit an input of " + std::to_string(in) +
                 " with padding " + std::to_string(pad));
    }
    p.out = (in + 2 * pad - kernel) / stride + 1;
    p.pad_before = p.pad_after = pad;
  }
  return p;
}

}  // namespace

Graph parse_graph_yaml(const YamlNode& root) {
  root.expect_keys({"name", "description", "batch", "dtype", "inputs", "layers", "outputs"});
  Graph g;
  g.source = root.file();
  g.name = root.at("name").as_string();
  g.description = root.string_or("description", "");
  g.default_batch = root.int_or("batch", 1, 1, 1 << 24);
  const Dtype default_dtype = root.get("dtype") ? dtype_of(root.at("dtype")) : Dtype::kInt8;

  auto add_tensor = [&](const YamlNode& where, const std::string& name, Shape shape, Dtype dtype, int producer) {
    if (g.find_tensor(name) >= 0) where.fail("name '" + name + "' is already used by an earlier input or layer");
    g.tensors.push_back(Tensor{name, std::move(shape), dtype, producer});
    return static_cast<int>(g.tensors.size() - 1);
  };

  const auto inputs = root.at("inputs").elements();
  if (inputs.empty()) root.at("inputs").fail("a graph needs at least one input");
  for (const auto& in : inputs) {
    in.expect_keys({"name", "shape", "dtype"});
    Shape shape = in.at("shape").as_int_list(1, 1 << 24);
    if (shape.size() != 1 && shape.size() != 3) {
      in.at("shape").fail("per-sample shape must be [features] or [H, W, C], got " + shape_text(shape));
    }
    const Dtype dt = in.get("dtype") ? dtype_of(in.at("dtype")) : default_dtype;
    g.inputs.push_back(add_tensor(in, in.at("name").as_string(), shape, dt, -1));
  }

  const auto layers = root.at("layers").elements();
  if (layers.empty()) root.at("layers").fail("a graph needs at least one layer");
  int previous = g.inputs.front();
  for (const auto& node : layers) {
    if (!node.is_map()) node.fail("expected a layer mapping with keys name and op");
    const std::string name = node.at("name").as_string();
    std::vector<std::string> op_names;
    for (const auto& [k, v] : op_table()) op_names.push_back(k);
    const std::string op_text = node.at("op").as_string();
    auto it = op_table().find(op_text);
    if (it == op_table().end()) {
      std::string allowed;
      for (const auto& k : op_names) allowed += (allowed.empty() ? "" : ", ") + k;
      node.at("op").fail("layer '" + name + "': unsupported op '" + op_text + "'; supported: " + allowed);
    }
    Layer layer;
    layer.name = name;
    layer.op = it->second;
    const OpKind op = layer.op;

    std::vector<std::string> allowed = {"name", "op", "input", "inputs", "dtype"};
    if (is_matrix_op(op)) {
      allowed.insert(allowed.end(), {"activation", "weight_dtype"});
      allowed.push_back(op == OpKind::kFc ? "units" : "filters");
    }
    if (op == OpKind::kConv2d || op == OpKind::kMaxPool || op == OpKind::kAvgPool) {
      allowed.insert(allowed.end(), {"kernel", "stride", "padding"});
    }
    node.expect_keys(allowed);

    // Resolve inputs by name; default: the previous layer's output.
    auto resolve = [&](const YamlNode& ref) {
      const std::string ref_name = ref.as_string();
      const int id = g.find_tensor(ref_name);
      if (id < 0) ref.fail("layer '" + name + "': unknown input '" + ref_name + "' (inputs must name a graph input or an earlier layer)");
      return id;
    };
    if (node.has("input") && node.has("inputs")) node.fail("layer '" + name + "': give either input or inputs, not both");
    if (auto in = node.get("input")) layer.inputs.push_back(resolve(*in));
    if (auto ins = node.get("inputs")) {
      for (const auto& e : ins->elements()) layer.inputs.push_back(resolve(e));
    }
    if (layer.inputs.empty()) layer.inputs.push_back(previous);

    const bool binary = op == OpKind::kAdd || op == OpKind::kMul;
    const size_t want = binary ? 2 : (op == OpKind::kConcat ? 0 : 1);
    if (op == OpKind::kConcat ? layer.inputs.size() < 2 : layer.inputs.size() != want) {
      node.fail("layer '" + name + "': op " + op_text + " takes " +
                (op == OpKind::kConcat ? std::string("two or more inputs") : std::to_string(want) + " input(s)") +
                ", got " + std::to_string(layer.inputs.size()));
    }
    const Tensor& x = g.tensors[layer.inputs[0]];
    const Dtype out_dtype = node.get("dtype") ? dtype_of(node.at("dtype")) : x.dtype;
    Shape out;
    auto need_rank = [&](const Tensor& t, size_t rank, const char* hint) {
      if (t.shape.size() != rank) {
        node.fail("layer '" + name + "': op " + op_text + " needs a " + hint + " input, but '" + t.name + "' is " +
                  shape_text(t.shape));
      }
    };

    switch (op) {
      case OpKind::kFc: {
        need_rank(x, 1, "vector [features] (add a flatten or global_avgpool layer first)");
        layer.out_features = node.at("units").as_int(1, 1 << 24);
        layer.gemm_m_per_sample = 1;
        layer.gemm_k = x.shape[0];
        layer.gemm_n = layer.out_features;
        out = {layer.out_features};
        break;
      }
      case OpKind::kConv2d:
      case OpKind::kMaxPool:
      case OpKind::kAvgPool: {
        need_rank(x, 3, "[H, W, C]");
        auto [kh, kw] = pair_of(node.at("kernel"));
        auto stride = node.get("stride") ? pair_of(node.at("stride")) : (op == OpKind::kConv2d ? std::pair<int64_t, int64_t>{1, 1}
                                                                                                 : std::pair<int64_t, int64_t>{kh, kw});
        std::string mode = "valid";
        int64_t pad_h = 0, pad_w = 0;
        if (auto p = node.get("padding")) {
          if (p->is_scalar() && (p->as_string() == "same" || p->as_string() == "valid")) {
            mode = p->as_string();
          } else {
            mode = "explicit";
            auto v = p->as_int_list(0, 1 << 16);
            if (v.size() > 2) p->fail("padding must be same, valid, N or [ph, pw]");
            pad_h = v[0];
            pad_w = v.size() == 2 ? v[1] : v[0];
          }
        }
        const AxisPlan ah = plan_axis(node, mode, pad_h, x.shape[0], kh, stride.first);
        const AxisPlan aw = plan_axis(node, mode, pad_w, x.shape[1], kw, stride.second);
        layer.kernel_h = kh;
        layer.kernel_w = kw;
        layer.stride_h = stride.first;
        layer.stride_w = stride.second;
        layer.pad_top = ah.pad_before;
        layer.pad_bottom = ah.pad_after;
        layer.pad_left = aw.pad_before;
        layer.pad_right = aw.pad_after;
        if (op == OpKind::kConv2d) {
          layer.out_features = node.at("filters").as_int(1, 1 << 24);
          layer.gemm_m_per_sample = ah.out * aw.out;
          layer.gemm_k = kh * kw * x.shape[2];
          layer.gemm_n = layer.out_features;
          out = {ah.out, aw.out, layer.out_features};
        } else {
          out = {ah.out, aw.out, x.shape[2]};
        }
        break;
      }
      case OpKind::kGlobalAvgPool:
        need_rank(x, 3, "[H, W, C]");
        out = {x.shape[2]};
        break;
      case OpKind::kFlatten:
        out = {shape_elements(x.shape)};
        break;
      case OpKind::kConcat: {
        out = x.shape;
        out.back() = 0;
        for (int id : layer.inputs) {
          const Tensor& t = g.tensors[id];
          Shape a = t.shape, b = x.shape;
          a.back() = b.back() = 0;
          if (a != b) {
            node.fail("layer '" + name + "': concat inputs must agree on all but the last axis; '" + x.name + "' is " +
                      shape_text(x.shape) + ", '" + t.name + "' is " + shape_text(t.shape));
          }
          out.back() += t.shape.back();
        }
        break;
      }
      case OpKind::kAdd:
      case OpKind::kMul: {
        const Tensor& y = g.tensors[layer.inputs[1]];
        if (x.shape != y.shape) {
          node.fail("layer '" + name + "': " + op_text + " needs inputs of equal shape; '" + x.name + "' is " +
                    shape_text(x.shape) + ", '" + y.name + "' is " + shape_text(y.shape));
        }
        out = x.shape;
        break;
      }
      case OpKind::kSigmoid:
      case OpKind::kTanh:
      case OpKind::kRelu:
        out = x.shape;
        break;
    }
    if (is_matrix_op(op)) {
      if (auto a = node.get("activation")) {
        const std::string act = a->as_choice({"none", "relu", "sigmoid", "tanh"});
        layer.activation = act == "relu" ? Activation::kRelu
                           : act == "sigmoid" ? Activation::kSigmoid
                           : act == "tanh" ? Activation::kTanh
                                           : Activation::kNone;
      }
      if (auto w = node.get("weight_dtype")) layer.weight_dtype = dtype_of(*w);
    }
    const int layer_index = static_cast<int>(g.layers.size());
    layer.output = add_tensor(node, name, out, out_dtype, layer_index);
    previous = layer.output;
    g.layers.push_back(std::move(layer));
  }

  if (auto outs = root.get("outputs")) {
    for (const auto& o : outs->elements()) {
      const int id = g.find_tensor(o.as_string());
      if (id < 0 || g.tensors[id].producer < 0) o.fail("unknown output '" + o.as_string() + "' (must name a layer)");
      g.outputs.push_back(id);
    }
  } else {
    g.outputs.push_back(previous);
  }
  return g;
}

Graph load_graph_yaml(const std::filesystem::path& path) {
  return parse_graph_yaml(YamlNode::load_file(path));
}

}  // namespace tessera::graph
