// Layout and data-movement ops: flatten and reshape (aliases: no data moves), concat,
// transpose, slice, expand, tile, pad, resize (vector unit: data moves).
#include <algorithm>
#include <numeric>
#include <string>

#include "sim/common/yaml_reader.h"
#include "sim/graph/ops/op_util.h"
#include "sim/graph/ops/registry.h"

namespace tessera::graph {
namespace {

using namespace ops;

// ---- YAML attributes

void parse_axis(const YamlNode& node, const Graph&, Layer& layer) { layer.axis = node.int_or("axis", -1, -16, 15); }

void parse_shape(const YamlNode& node, const Graph&, Layer& layer) {
  layer.target_shape = node.at("shape").as_int_list(-1, 1 << 24);
}

void parse_transpose(const YamlNode& node, const Graph&, Layer& layer) {
  layer.perm = node.at("perm").as_int_list(0, 15);
}

void parse_slice(const YamlNode& node, const Graph&, Layer& layer) {
  layer.axis = node.at("axis").as_int(-16, 15);
  layer.slice_begin = node.int_or("begin", 0);
  layer.slice_end = node.int_or("end", INT64_MAX);
  layer.slice_step = node.int_or("step", 1);
}

void parse_tile(const YamlNode& node, const Graph&, Layer& layer) {
  layer.repeats = node.at("repeats").as_int_list(1, 1 << 24);
}

void parse_pad(const YamlNode& node, const Graph&, Layer& layer) {
  layer.pads = node.at("pads").as_int_list(0, 1 << 20);
  layer.mode = node.get("mode") ? node.at("mode").as_choice({"constant", "edge", "reflect"}) : std::string("constant");
}

void parse_resize(const YamlNode& node, const Graph& g, Layer& layer) {
  const Tensor& x = input(g, layer, 0);
  layer.mode = node.get("mode") ? node.at("mode").as_choice({"nearest", "linear", "cubic"}) : std::string("nearest");
  if (node.has("size") == node.has("scale")) node.fail("layer '" + layer.name + "': resize needs exactly one of size and scale");
  if (auto s = node.get("size")) {
    layer.target_shape = s->as_int_list(1, 1 << 24);
  } else {
    const auto scale = node.at("scale").as_int_list(1, 1 << 12);
    if (scale.size() != x.shape.size()) node.at("scale").fail("one integer scale per axis of " + shape_text(x.shape));
    for (size_t i = 0; i < scale.size(); ++i) layer.target_shape.push_back(x.shape[i] * scale[i]);
  }
}

// ---- shape rules

Shape infer_flatten(const Graph& g, Layer& L) {
  need_inputs(L, 1, 1);
  return {shape_elements(input(g, L, 0).shape)};
}

Shape infer_reshape(const Graph& g, Layer& L) {
  need_inputs(L, 1, 1);
  const Tensor& x = input(g, L, 0);
  Shape out = L.target_shape;
  int64_t known = 1, unknown = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (unknown >= 0) throw ShapeError("reshape target " + shape_text(out) + " has more than one -1");
      unknown = static_cast<int64_t>(i);
    } else if (out[i] < 1) {
      throw ShapeError("reshape target " + shape_text(out) + " has a dimension < 1");
    } else {
      known *= out[i];
    }
  }
  if (out.empty()) throw ShapeError("reshape needs a target shape");
  const int64_t n = shape_elements(x.shape);
  if (unknown >= 0) {
    if (n % known != 0) throw ShapeError("cannot reshape " + shape_text(x.shape) + " to " + shape_text(out));
    out[static_cast<size_t>(unknown)] = n / known;
  }
  if (shape_elements(out) != n) throw ShapeError("cannot reshape " + shape_text(x.shape) + " to " + shape_text(out));
  return out;
}

Shape infer_concat(const Graph& g, Layer& L) {
  if (L.inputs.size() < 2) throw ShapeError("op concat takes two or more inputs, got " + std::to_string(L.inputs.size()));
  const Tensor& x = input(g, L, 0);
  const int64_t axis = normalize_axis(L.axis, x.shape.size(), "concat axis");
  Shape out = x.shape;
  out[static_cast<size_t>(axis)] = 0;
  for (size_t i = 0; i < L.inputs.size(); ++i) {
    const Tensor& t = input(g, L, i);
    Shape a = t.shape, b = x.shape;
    if (a.size() == b.size()) a[static_cast<size_t>(axis)] = b[static_cast<size_t>(axis)] = 0;
    if (a != b) {
      const bool last = axis == static_cast<int64_t>(x.shape.size()) - 1;
      throw ShapeError(std::string("concat inputs must agree on all but ") +
                       (last ? "the last axis" : "axis " + std::to_string(axis)) + "; '" + x.name + "' is " +
                       shape_text(x.shape) + ", '" + t.name + "' is " + shape_text(t.shape));
    }
    out[static_cast<size_t>(axis)] += t.shape[static_cast<size_t>(axis)];
  }
  return out;
}

Shape infer_expand(const Graph& g, Layer& L) {
  need_inputs(L, 1, 1);
  try {
    return broadcast_shapes(input(g, L, 0).shape, L.target_shape);
  } catch (const ShapeError& e) {
    throw ShapeError(std::string("expand: ") + e.what());
  }
}

Shape infer_tile(const Graph& g, Layer& L) {
  need_inputs(L, 1, 1);
  const Tensor& x = input(g, L, 0);
  if (L.repeats.size() != x.shape.size()) {
    throw ShapeError("tile needs one repeat count per axis of '" + x.name + "' " + shape_text(x.shape) + ", got " +
                     shape_text(L.repeats));
  }
  Shape out = x.shape;
  for (size_t i = 0; i < out.size(); ++i) {
    if (L.repeats[i] < 1) throw ShapeError("tile repeats must be >= 1, got " + shape_text(L.repeats));
    out[i] = checked_mul(out[i], L.repeats[i]);
  }
  return out;
}

// Every output element copies the input element at its index modulo the input's extent.
Fp32Kernel tile_fp32(const Graph& g, const Layer& l) {
  const Shape& xs = input(g, l, 0).shape;
  const Shape& ys = g.tensors[static_cast<size_t>(l.output)].shape;
  std::vector<int64_t> src(static_cast<size_t>(shape_elements(ys)));
  std::vector<int64_t> idx(ys.size(), 0), stride(xs.size(), 1);
  for (size_t a = xs.size(); a-- > 1;) stride[a - 1] = stride[a] * xs[a];
  for (size_t i = 0; i < src.size(); ++i) {
    int64_t at = 0;
    for (size_t a = 0; a < ys.size(); ++a) at += (idx[a] % xs[a]) * stride[a];
    src[i] = at;
    for (size_t a = ys.size(); a-- > 0;) {
      if (++idx[a] < ys[a]) break;
      idx[a] = 0;
    }
  }
  const int64_t ex = shape_elements(xs), ey = static_cast<int64_t>(src.size());
  return [=](const std::vector<const float*>& in, int64_t n, float* out) {
    for (int64_t s = 0; s < n; ++s)
      for (int64_t i = 0; i < ey; ++i) out[s * ey + i] = in[0][s * ex + src[static_cast<size_t>(i)]];
  };
}

Shape infer_resize(const Graph& g, Layer& L) {
  need_inputs(L, 1, 1);
  const Tensor& x = input(g, L, 0);
  if (L.target_shape.size() != x.shape.size()) {
    throw ShapeError("resize target " + shape_text(L.target_shape) + " must have the rank of '" + x.name + "' " +
                     shape_text(x.shape));
  }
  for (int64_t d : L.target_shape) {
    if (d < 1) throw ShapeError("resize target " + shape_text(L.target_shape) + " has a dimension < 1");
  }
  return L.target_shape;
}

Shape infer_pad(const Graph& g, Layer& L) {
  need_inputs(L, 1, 1);
  const Tensor& x = input(g, L, 0);
  if (L.pads.size() != 2 * x.shape.size()) {
    throw ShapeError("pad needs " + std::to_string(2 * x.shape.size()) + " pads (begin and end of every axis) for '" +
                     x.name + "' " + shape_text(x.shape) + ", got " + std::to_string(L.pads.size()));
  }
  Shape out = x.shape;
  for (size_t i = 0; i < out.size(); ++i) out[i] += L.pads[i] + L.pads[i + out.size()];
  for (int64_t d : out) {
    if (d < 1) throw ShapeError("pad would make an empty tensor from " + shape_text(x.shape));
  }
  return out;
}

Shape infer_transpose(const Graph& g, Layer& L) {
  need_inputs(L, 1, 1);
  const Tensor& x = input(g, L, 0);
  if (L.perm.empty()) {
    for (size_t i = x.shape.size(); i-- > 0;) L.perm.push_back(static_cast<int64_t>(i));
  }
  std::vector<int64_t> sorted = L.perm;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(x.shape.size());
  std::iota(iota.begin(), iota.end(), 0);
  if (sorted != iota) {
    throw ShapeError("transpose perm must be a permutation of 0.." + std::to_string(x.shape.size() - 1) + " for '" +
                     x.name + "' " + shape_text(x.shape));
  }
  Shape out;
  for (int64_t p : L.perm) out.push_back(x.shape[static_cast<size_t>(p)]);
  return out;
}

Shape infer_slice(const Graph& g, Layer& L) {
  need_inputs(L, 1, 1);
  const Tensor& x = input(g, L, 0);
  L.axis = normalize_axis(L.axis, x.shape.size(), "slice axis");
  const int64_t dim = x.shape[static_cast<size_t>(L.axis)];
  if (L.slice_step == 0) throw ShapeError("slice step must not be 0");
  auto clampi = [](int64_t v, int64_t lo, int64_t hi) { return std::max(lo, std::min(hi, v)); };
  int64_t b = L.slice_begin < 0 ? L.slice_begin + dim : L.slice_begin;
  int64_t e = L.slice_end < 0 ? L.slice_end + dim : L.slice_end;
  int64_t n = 0;
  if (L.slice_step > 0) {
    b = clampi(b, 0, dim), e = clampi(e, 0, dim);
    n = e > b ? (e - b + L.slice_step - 1) / L.slice_step : 0;
  } else {
    b = clampi(b, -1, dim - 1), e = clampi(e, -1, dim - 1);
    n = b > e ? (b - e - L.slice_step - 1) / (-L.slice_step) : 0;
  }
  if (n < 1) throw ShapeError("slice [" + std::to_string(L.slice_begin) + ":" + std::to_string(L.slice_end) +
                              "] of axis " + std::to_string(L.axis) + " of '" + x.name + "' " + shape_text(x.shape) +
                              " is empty");
  Shape out = x.shape;
  out[static_cast<size_t>(L.axis)] = n;
  return out;
}

// ---- vector cost and row tiling

// Taps per output element: nearest 1; linear 2 per resized axis; cubic 4 per resized axis.
int64_t resize_work(const Graph& g, const Layer& l) {
  const auto& in_shape = input(g, l, 0).shape;
  int64_t taps = 1;
  for (size_t i = 0; i < in_shape.size(); ++i) {
    if (l.target_shape[i] != in_shape[i]) taps *= l.mode == "linear" ? 2 : l.mode == "cubic" ? 4 : 1;
  }
  return taps;
}

bool along_last_axis(const Layer& l, size_t rank) {
  const int64_t axis = l.axis < 0 ? l.axis + static_cast<int64_t>(rank) : l.axis;
  return axis == static_cast<int64_t>(rank) - 1;
}

}  // namespace

void add_layout_ops(OpRegistry& r) {
  r.add({.kind = OpKind::kFlatten,
         .name = "flatten",
         .energy_class = EnergyClass::kNoVectorWork,  // an alias: nothing moves
         .cls = OpClass::kAlias,
         .infer = infer_flatten,
         .copies_codes = true,
         .functional = FunctionalKernel::kCopy});
  r.add({.kind = OpKind::kReshape,
         .name = "reshape",
         .energy_class = EnergyClass::kNoVectorWork,  // an alias: nothing moves
         .cls = OpClass::kAlias,
         .yaml_keys = {"shape"},
         .parse_yaml = parse_shape,
         .infer = infer_reshape,
         .copies_codes = true,
         .functional = FunctionalKernel::kCopy});
  r.add({.kind = OpKind::kConcat,
         .name = "concat",
         .energy_class = EnergyClass::kAdd32,  // copies
         .inputs = {2, Arity::kMany},
         .yaml_keys = {"axis"},
         .parse_yaml = parse_axis,
         .infer = infer_concat,
         .row_local = along_last_axis,
         .copies_codes = true,
         .functional = FunctionalKernel::kConcat});
  r.add({.kind = OpKind::kTranspose,
         .name = "transpose",
         .energy_class = EnergyClass::kAdd32,  // copies
         .yaml_keys = {"perm"},
         .parse_yaml = parse_transpose,
         .infer = infer_transpose,
         .gathers_rows = true,
         .copies_codes = true,
         .vector_class = VectorClass::kCrossLane,
         .functional = FunctionalKernel::kGather});
  r.add({.kind = OpKind::kSlice,
         .name = "slice",
         .energy_class = EnergyClass::kAdd32,  // copies
         .yaml_keys = {"axis", "begin", "end", "step"},
         .parse_yaml = parse_slice,
         .infer = infer_slice,
         .row_local = along_last_axis,
         .copies_codes = true,
         .functional = FunctionalKernel::kGather});
  r.add({.kind = OpKind::kExpand,
         .name = "expand",
         .energy_class = EnergyClass::kAdd32,  // copies
         .yaml_keys = {"shape"},
         .parse_yaml = parse_shape,
         .infer = infer_expand,
         .copies_codes = true,
         .functional = FunctionalKernel::kGather});
  r.add({.kind = OpKind::kTile,
         .name = "tile",
         .energy_class = EnergyClass::kAdd32,  // copies
         .yaml_keys = {"repeats"},
         .parse_yaml = parse_tile,
         .infer = infer_tile,
         .copies_codes = true,
         .fp32 = tile_fp32});
  r.add({.kind = OpKind::kPad,
         .name = "pad",
         .energy_class = EnergyClass::kAdd32,  // copies
         .yaml_keys = {"pads", "mode"},
         .parse_yaml = parse_pad,
         .infer = infer_pad,
         .copies_codes = true});
  r.add({.kind = OpKind::kResize,
         .name = "resize",
         .energy_class = EnergyClass::kMultiplyAdd32,  // interpolation weights
         .yaml_keys = {"size", "scale", "mode"},
         .parse_yaml = parse_resize,
         .infer = infer_resize,
         .work_per_output = resize_work});
}

}  // namespace tessera::graph
