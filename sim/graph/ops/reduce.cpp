// Reductions (vector unit): reduce_mean/sum/max over `axes` (all when empty),
// global_avgpool and global_maxpool over H and W (functional mode runs them with its
// integer paths: sums of codes, one requantization); along one axis: argmax/argmin,
// topk, and the running sum cumsum (fp32 references here).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "sim/common/yaml_reader.h"
#include "sim/graph/ops/op_util.h"
#include "sim/graph/ops/registry.h"

namespace tessera::graph {
namespace {

using namespace ops;

void parse_global(const YamlNode& node, const Graph& g, Layer& layer) {
  yaml_need_rank(node, layer, input(g, layer, 0), 3, "[H, W, C]");
  layer.keepdims = node.bool_or("keepdims", false);
}

void parse_reduce(const YamlNode& node, const Graph&, Layer& layer) {
  if (auto a = node.get("axes")) layer.axes = a->as_int_list(-16, 15);
  layer.keepdims = node.bool_or("keepdims", true);
}

Shape infer_global(const Graph& g, Layer& L) {
  need_inputs(L, 1, 1);
  const Tensor& x = input(g, L, 0);
  need_rank(L, x, 2, 3, "[H, W, C]");
  if (!L.keepdims) return {x.shape.back()};
  Shape out(x.shape.size(), 1);
  out.back() = x.shape.back();
  return out;
}

Shape infer_reduce(const Graph& g, Layer& L) {
  need_inputs(L, 1, 1);
  const Tensor& x = input(g, L, 0);
  const std::string opname(op_name(L.op));
  std::vector<bool> reduced(x.shape.size(), L.axes.empty());
  for (int64_t& a : L.axes) {
    a = normalize_axis(a, x.shape.size(), opname + " axis");
    reduced[static_cast<size_t>(a)] = true;
  }
  std::sort(L.axes.begin(), L.axes.end());
  L.axes.erase(std::unique(L.axes.begin(), L.axes.end()), L.axes.end());
  Shape out;
  for (size_t i = 0; i < x.shape.size(); ++i) {
    if (!reduced[i]) out.push_back(x.shape[i]);
    else if (L.keepdims) out.push_back(1);
  }
  if (out.empty()) out.push_back(1);
  return out;
}

// Every input element once.
int64_t reduce_work(const Graph& g, const Layer& l) {
  const int64_t out_per_sample = shape_elements(g.tensors[static_cast<size_t>(l.output)].shape);
  const int64_t in_per_sample = shape_elements(input(g, l, 0).shape);
  return std::max<int64_t>(1, in_per_sample / out_per_sample);
}

bool over_last_axis_only(const Layer& l, size_t rank) {
  return l.axes.size() == 1 && l.axes[0] == static_cast<int64_t>(rank) - 1;
}

// ---- along one axis: argmax, argmin, topk, cumsum

int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < s.size(); ++i) p *= s[i];
  return p;
}

void parse_arg(const YamlNode& node, const Graph&, Layer& layer) {
  layer.axis = node.int_or("axis", -1, -16, 15);
  layer.keepdims = node.bool_or("keepdims", true);
  layer.select_last = node.bool_or("select_last", false);
}

void parse_topk(const YamlNode& node, const Graph&, Layer& layer) {
  layer.k = node.at("k").as_int(1, 1 << 24);
  layer.axis = node.int_or("axis", -1, -16, 15);
  layer.largest = node.bool_or("largest", true);
  layer.indices = node.bool_or("indices", false);
}

void parse_cumsum(const YamlNode& node, const Graph&, Layer& layer) {
  layer.axis = node.int_or("axis", -1, -16, 15);
  layer.exclusive = node.bool_or("exclusive", false);
  layer.reverse = node.bool_or("reverse", false);
}

Shape infer_arg(const Graph& g, Layer& L) {
  need_inputs(L, 1, 1);
  const Tensor& x = input(g, L, 0);
  L.axis = normalize_axis(L.axis, x.shape.size(), std::string(op_name(L.op)) + " axis");
  Shape out;
  for (size_t i = 0; i < x.shape.size(); ++i) {
    if (static_cast<int64_t>(i) != L.axis) out.push_back(x.shape[i]);
    else if (L.keepdims) out.push_back(1);
  }
  if (out.empty()) out.push_back(1);
  return out;
}

Shape infer_topk(const Graph& g, Layer& L) {
  need_inputs(L, 1, 1);
  const Tensor& x = input(g, L, 0);
  L.axis = normalize_axis(L.axis, x.shape.size(), "topk axis");
  const int64_t dim = x.shape[static_cast<size_t>(L.axis)];
  if (L.k < 1 || L.k > dim) {
    throw ShapeError("topk k = " + std::to_string(L.k) + " must be in [1, " + std::to_string(dim) + "] for axis " +
                     std::to_string(L.axis) + " of '" + x.name + "' " + shape_text(x.shape));
  }
  Shape out = x.shape;
  out[static_cast<size_t>(L.axis)] = L.k;
  return out;
}

Shape infer_cumsum(const Graph& g, Layer& L) {
  need_inputs(L, 1, 1);
  const Tensor& x = input(g, L, 0);
  L.axis = normalize_axis(L.axis, x.shape.size(), "cumsum axis");
  return x.shape;
}

// topk: k passes over the axis of n elements, or a bitonic sort (n log n (log n + 1) / 2
// compare-exchanges) when that is fewer; per output element.
int64_t topk_work(const Graph& g, const Layer& l) {
  const int64_t n = input(g, l, 0).shape.at(static_cast<size_t>(l.axis));
  int64_t lg = 0;
  while ((int64_t{1} << lg) < n) ++lg;
  const int64_t passes = std::min<int64_t>(l.k, std::max<int64_t>(1, lg * (lg + 1) / 2));
  return std::max<int64_t>(1, (passes * n + l.k - 1) / l.k);
}

bool along_last_axis(const Layer& l, size_t rank) {
  const int64_t axis = l.axis < 0 ? l.axis + static_cast<int64_t>(rank) : l.axis;
  return axis == static_cast<int64_t>(rank) - 1;
}

// The position of the largest (argmax) or smallest (argmin) element along `axis`, as a
// number; the first of equal ones unless select_last.
Fp32Kernel arg_fp32(const Graph& g, const Layer& l) {
  const Shape& xs = input(g, l, 0).shape;
  const auto axis = static_cast<size_t>(l.axis);
  const int64_t outer = product(xs, 0, axis), dim = xs.at(axis), inner = product(xs, axis + 1, xs.size());
  const bool max = l.op == OpKind::kArgMax, last = l.select_last;
  return [=](const std::vector<const float*>& in, int64_t n, float* out) {
    for (int64_t s = 0; s < n; ++s)
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < inner; ++j) {
          const float* x = in[0] + s * outer * dim * inner + o * dim * inner + j;
          int64_t best = 0;
          for (int64_t d = 1; d < dim; ++d) {
            const float v = x[d * inner], b = x[best * inner];
            if (max ? (v > b || (last && v == b)) : (v < b || (last && v == b))) best = d;
          }
          out[s * outer * inner + o * inner + j] = static_cast<float>(best);
        }
  };
}

// The k largest (or smallest) along `axis` in order, equal values by position (ONNX
// TopK); their values, or their positions.
Fp32Kernel topk_fp32(const Graph& g, const Layer& l) {
  const Shape& xs = input(g, l, 0).shape;
  const auto axis = static_cast<size_t>(l.axis);
  const int64_t outer = product(xs, 0, axis), dim = xs.at(axis), inner = product(xs, axis + 1, xs.size());
  const int64_t k = l.k;
  const bool largest = l.largest, indices = l.indices;
  return [=](const std::vector<const float*>& in, int64_t n, float* out) {
    std::vector<int64_t> order(static_cast<size_t>(dim));
    for (int64_t s = 0; s < n; ++s)
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < inner; ++j) {
          const float* x = in[0] + s * outer * dim * inner + o * dim * inner + j;
          std::iota(order.begin(), order.end(), 0);
          std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
            const float va = x[a * inner], vb = x[b * inner];
            if (va != vb) return largest ? va > vb : va < vb;
            return a < b;
          });
          float* y = out + s * outer * k * inner + o * k * inner + j;
          for (int64_t d = 0; d < k; ++d) {
            const int64_t at = order[static_cast<size_t>(d)];
            y[d * inner] = indices ? static_cast<float>(at) : x[at * inner];
          }
        }
  };
}

// Running sums along `axis`: inclusive, or (exclusive) of the elements before each;
// from the end when `reverse`.
Fp32Kernel cumsum_fp32(const Graph& g, const Layer& l) {
  const Shape& xs = input(g, l, 0).shape;
  const auto axis = static_cast<size_t>(l.axis);
  const int64_t outer = product(xs, 0, axis), dim = xs.at(axis), inner = product(xs, axis + 1, xs.size());
  const bool exclusive = l.exclusive, reverse = l.reverse;
  return [=](const std::vector<const float*>& in, int64_t n, float* out) {
    for (int64_t s = 0; s < n; ++s)
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < inner; ++j) {
          const int64_t base = s * outer * dim * inner + o * dim * inner + j;
          float acc = 0;
          for (int64_t t = 0; t < dim; ++t) {
            const int64_t d = reverse ? dim - 1 - t : t;
            const float v = in[0][base + d * inner];
            if (!exclusive) acc += v;
            out[base + d * inner] = acc;
            if (exclusive) acc += v;
          }
        }
  };
}

OpDef arg(OpKind kind, std::string_view name) {
  return {.kind = kind,
          .name = name,
          .energy_class = EnergyClass::kAdd32,  // compares
          .yaml_keys = {"axis", "keepdims", "select_last"},
          .parse_yaml = parse_arg,
          .infer = infer_arg,
          .work_per_output = reduce_work,
          .row_local = along_last_axis,
          .reduction = true,
          .fp32 = arg_fp32};
}

OpDef reduce(OpKind kind, std::string_view name, EnergyClass energy) {
  return {.kind = kind,
          .name = name,
          .energy_class = energy,
          .yaml_keys = {"axes", "keepdims"},
          .parse_yaml = parse_reduce,
          .infer = infer_reduce,
          .work_per_output = reduce_work,
          .row_local = over_last_axis_only,
          .reduction = true,
          .functional = FunctionalKernel::kReduce};
}

OpDef global_pool(OpKind kind, std::string_view name, EnergyClass energy, FunctionalKernel functional) {
  return {.kind = kind,
          .name = name,
          .energy_class = energy,
          .yaml_keys = {"keepdims"},
          .parse_yaml = parse_global,
          .infer = infer_global,
          .work_per_output = reduce_work,
          .reduction = true,
          .functional = functional};
}

}  // namespace

void add_reduce_ops(OpRegistry& r) {
  r.add(reduce(OpKind::kReduceMean, "reduce_mean", EnergyClass::kMultiplyAdd32));  // the sum scaled by 1/count
  r.add(reduce(OpKind::kReduceSum, "reduce_sum", EnergyClass::kAdd32));
  r.add(reduce(OpKind::kReduceMax, "reduce_max", EnergyClass::kAdd32));
  r.add(global_pool(OpKind::kGlobalAvgPool, "global_avgpool", EnergyClass::kMultiplyAdd32,
                    FunctionalKernel::kGlobalAvgPool));
  OpDef global_max =
      global_pool(OpKind::kGlobalMaxPool, "global_maxpool", EnergyClass::kAdd32, FunctionalKernel::kReduce);
  global_max.copies_codes = true;
  r.add(global_max);
  r.add(arg(OpKind::kArgMax, "argmax"));
  r.add(arg(OpKind::kArgMin, "argmin"));
  r.add({.kind = OpKind::kTopK,
         .name = "topk",
         .energy_class = EnergyClass::kAdd32,  // compares
         .yaml_keys = {"k", "axis", "largest", "indices"},
         .parse_yaml = parse_topk,
         .infer = infer_topk,
         .work_per_output = topk_work,
         .row_local = along_last_axis,
         .reduction = true,
         .vector_class = VectorClass::kCrossLane,  // a sort / a scan along the lanes
         .fp32 = topk_fp32});
  r.add({.kind = OpKind::kCumSum,
         .name = "cumsum",
         .energy_class = EnergyClass::kAdd32,
         .yaml_keys = {"axis", "exclusive", "reverse"},
         .parse_yaml = parse_cumsum,
         .infer = infer_cumsum,
         .row_local = along_last_axis,
         .vector_class = VectorClass::kCrossLane,  // a sort / a scan along the lanes
         .fp32 = cumsum_fp32});
}

}  // namespace tessera::graph
