// Reading a node: its attributes (typed), its constant inputs, and how ONNX shapes and
// axes map onto the IR's per-sample shapes.
#include "sim/common/error.h"
#include "sim/graph/onnx/importer.h"

namespace tessera::graph::onnx_import {

// ---------------------------------------------------------------- attributes and constants

const onnx::AttributeProto* attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}
// An attribute read as `type`: one of another type (a STRING axis, a FLOAT perm) would
// otherwise read as 0 or empty and change the op's meaning. UNDEFINED (old writers) is read.
const onnx::AttributeProto* Importer::typed_attr(const Node& n, const std::string& name,
                                                 onnx::AttributeProto_AttributeType type) const {
  const auto* a = attr(n, name);
  if (a && a->type() != type && a->type() != onnx::AttributeProto_AttributeType_UNDEFINED) {
    fail_node(n, "attribute '" + utf8_safe(name) + "' must be of type " + onnx::AttributeProto_AttributeType_Name(type) + ", got " +
                     onnx::AttributeProto_AttributeType_Name(a->type()));
  }
  return a;
}
int64_t Importer::attr_i(const Node& n, const std::string& name, int64_t def) const {
  const auto* a = typed_attr(n, name, onnx::AttributeProto_AttributeType_INT);
  return a ? a->i() : def;
}
double Importer::attr_f(const Node& n, const std::string& name, double def) const {
  const auto* a = typed_attr(n, name, onnx::AttributeProto_AttributeType_FLOAT);
  return a ? a->f() : def;
}
std::string Importer::attr_s(const Node& n, const std::string& name, const std::string& def) const {
  const auto* a = typed_attr(n, name, onnx::AttributeProto_AttributeType_STRING);
  return a ? a->s() : def;
}
std::vector<int64_t> Importer::attr_ints(const Node& n, const std::string& name) const {
  const auto* a = typed_attr(n, name, onnx::AttributeProto_AttributeType_INTS);
  if (!a) return {};
  return {a->ints().begin(), a->ints().end()};
}

Value& Importer::val(const Node& n, int i) {
  // check_arity() names the op's input counts; this guards every other path (protobuf's
  // input(i) past the end is a fatal CHECK, not an exception).
  if (i >= n.input_size()) fail_node(n, "has " + std::to_string(n.input_size()) + " input(s), input " + std::to_string(i) + " is missing");
  auto it = values_.find(n.input(i));
  if (it == values_.end()) fail_node(n, "input '" + n.input(i) + "' is not defined");
  return it->second;
}

std::vector<Sym> Importer::const_syms(const Node& n, int i, const std::string& what) {
  Value& v = val(n, i);
  if (!v.constant) {
    throw Unsupported{what + " ('" + n.input(i) + "') must be a constant, but it is computed from the activations"};
  }
  if (!v.has_data) {
    throw Unsupported{what + " ('" + n.input(i) + "') must be known to infer shapes, but it could not be folded"};
  }
  if (v.is_float) {
    std::vector<Sym> out;
    for (double d : v.floats) out.push_back({to_int64(d, what + " value"), 0});
    return out;
  }
  return v.ints;
}

std::vector<int64_t> Importer::const_ints(const Node& n, int i, const std::string& what) {
  std::vector<int64_t> out;
  for (Sym s : const_syms(n, i, what)) {
    out.push_back(eval(s, batch_));
  }
  return out;
}

std::vector<double> Importer::const_floats(const Node& n, int i, const std::string& what) {
  Value& v = val(n, i);
  if (!v.constant || !v.has_data) throw Unsupported{what + " ('" + n.input(i) + "') must be a known constant"};
  if (v.is_float) return v.floats;
  std::vector<double> out;
  for (Sym s : v.ints) out.push_back(static_cast<double>(eval(s, batch_)));
  return out;
}

std::optional<std::vector<int64_t>> Importer::ints_attr_or_input(const Node& n, const std::string& attr_name, int input,
                                                                int since) {
  if (opset_ < since) {
    if (!has_attr(n, attr_name)) return std::nullopt;
    return attr_ints(n, attr_name);
  }
  if (!has_input(n, input)) {
    if (has_attr(n, attr_name)) return attr_ints(n, attr_name);  // tolerate the older form
    return std::nullopt;
  }
  return const_ints(n, input, attr_name);
}

// ---------------------------------------------------------------- shapes

int Importer::batch_axis(const SymShape& s, const Node* n) const {
  int axis = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i].p == 0) continue;
    if (s[i].p != 1 || axis >= 0) {
      const std::string msg = "shape " + sym_shape_text(s) + " mixes the batch into more than one dimension";
      if (n) throw Unsupported{msg};
      fail(msg);
    }
    axis = static_cast<int>(i);
  }
  return axis;
}

Shape Importer::per_sample(const SymShape& s) const {
  Shape out;
  const int ba = batch_axis(s, nullptr);
  for (size_t i = 0; i < s.size(); ++i) {
    if (static_cast<int>(i) == ba && s[i].v == 1) continue;
    out.push_back(s[i].v);
  }
  if (out.empty()) out.push_back(1);
  return out;
}

bool Importer::can_channels_last(const SymShape& s) const {
  return s.size() >= 3 && s[0] == Sym{1, 1} && batch_axis(s, nullptr) == 0;
}

Shape Importer::ir_shape(const SymShape& s, Layout layout) const {
  if (layout == Layout::kNatural || !can_channels_last(s)) return per_sample(s);
  Shape out;
  for (size_t i = 2; i < s.size(); ++i) out.push_back(s[i].v);
  out.push_back(s[1].v);
  return out;
}

std::vector<int64_t> Importer::full_dims(const SymShape& s) const {
  std::vector<int64_t> out;
  for (Sym d : s) out.push_back(eval(d, batch_));
  return out;
}

int64_t Importer::ir_axis(const Value& v, int64_t axis, const Node& n) {
  const auto r = static_cast<int64_t>(v.shape.size());
  if (axis < -r || axis >= r) fail_node(n, "axis " + std::to_string(axis) + " is out of range for " + sym_shape_text(v.shape));
  if (axis < 0) axis += r;
  const int ba = batch_axis(v.shape, &n);
  if (axis == ba && v.shape[static_cast<size_t>(ba)].v == 1) {
    throw Unsupported{"works along the batch dimension (axis " + std::to_string(axis) + " of " + sym_shape_text(v.shape) + ")"};
  }
  if (v.layout == Layout::kChannelsLast && can_channels_last(v.shape)) {
    if (axis == 1) return r - 2;  // channels are last: IR rank is r - 1
    return axis - 2;
  }
  // Natural: batch dropped (when it is a pure batch axis).
  const bool dropped = ba >= 0 && v.shape[static_cast<size_t>(ba)].v == 1;
  return dropped && axis > ba ? axis - 1 : axis;
}

}  // namespace tessera::graph::onnx_import
