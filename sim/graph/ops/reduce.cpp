// Reductions (vector unit): reduce_mean/sum/max over `axes` (all when empty),
// global_avgpool and global_maxpool over H and W. Functional mode runs them with its
// integer paths (sums of codes, one requantization).
#include <algorithm>
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

OpDef reduce(OpKind kind, std::string_view name) {
  return {.kind = kind,
          .name = name,
          .yaml_keys = {"axes", "keepdims"},
          .parse_yaml = parse_reduce,
          .infer = infer_reduce,
          .work_per_output = reduce_work,
          .row_local = over_last_axis_only,
          .reduction = true};
}

OpDef global_pool(OpKind kind, std::string_view name) {
  return {.kind = kind,
          .name = name,
          .yaml_keys = {"keepdims"},
          .parse_yaml = parse_global,
          .infer = infer_global,
          .work_per_output = reduce_work,
          .reduction = true};
}

}  // namespace

void add_reduce_ops(OpRegistry& r) {
  r.add(reduce(OpKind::kReduceMean, "reduce_mean"));
  r.add(reduce(OpKind::kReduceSum, "reduce_sum"));
  r.add(reduce(OpKind::kReduceMax, "reduce_max"));
  r.add(global_pool(OpKind::kGlobalAvgPool, "global_avgpool"));
  r.add(global_pool(OpKind::kGlobalMaxPool, "global_maxpool"));
}

}  // namespace tessera::graph
