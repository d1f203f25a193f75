// Sliding-window ops on [H, W, C] (or [W, C]): maxpool and avgpool, and the window shape
// and YAML rules they share with conv2d and conv_transpose2d (matrix.cpp).
#include <algorithm>
#include <string>

#include "sim/common/yaml_reader.h"
#include "sim/graph/ops/op_util.h"
#include "sim/graph/ops/registry.h"

namespace tessera::graph {
namespace ops {

Shape infer_window(const Graph& g, Layer& L) {
  const std::string opname(op_name(L.op));
  need_inputs(L, 1, 1);
  const Tensor& x = input(g, L, 0);
  need_rank(L, x, 2, 3, "[H, W, C] (or [W, C])");
  const bool two_d = x.shape.size() == 3;
  const int64_t H = two_d ? x.shape[0] : 1, W = x.shape[two_d ? 1 : 0], C = x.shape.back();
  if (!two_d && (L.kernel_h != 1 || L.pad_top || L.pad_bottom)) throw ShapeError("a [W, C] input needs kernel height 1");
  const bool matrix = L.op == OpKind::kConv2d || L.op == OpKind::kConvTranspose2d;
  if (matrix) {
    if (L.out_features < 1) throw ShapeError("op " + opname + " needs filters >= 1");
    if (L.groups < 1 || C % L.groups != 0 || L.out_features % L.groups != 0) {
      throw ShapeError("groups " + std::to_string(L.groups) + " must divide the input channels (" +
                       std::to_string(C) + ") and the filters (" + std::to_string(L.out_features) + ")");
    }
  }
  int64_t oh = 0, ow = 0;
  if (L.op == OpKind::kConvTranspose2d) {
    oh = (H - 1) * L.stride_h - L.pad_top - L.pad_bottom + L.dilation_h * (L.kernel_h - 1) + L.output_pad_h + 1;
    ow = (W - 1) * L.stride_w - L.pad_left - L.pad_right + L.dilation_w * (L.kernel_w - 1) + L.output_pad_w + 1;
    if (oh < 1 || ow < 1) throw ShapeError("transposed convolution output would be empty");
  } else {
    oh = window_out(H, L.pad_top, L.pad_bottom, L.kernel_h, L.stride_h, L.dilation_h, L.ceil_mode);
    ow = window_out(W, L.pad_left, L.pad_right, L.kernel_w, L.stride_w, L.dilation_w, L.ceil_mode);
  }
  const int64_t oc = matrix ? L.out_features : C;
  if (L.op == OpKind::kConv2d) {
    L.gemm_m_per_sample = checked_mul(oh, ow);
    L.gemm_k = checked_mul(checked_mul(L.kernel_h, L.kernel_w), C / L.groups);
    L.gemm_n = L.out_features / L.groups;
    L.gemm_groups = L.groups;
  } else if (L.op == OpKind::kConvTranspose2d) {
    // Each input pixel times (kernel x filters); the products overlap-add into the output.
    L.gemm_m_per_sample = checked_mul(H, W);
    L.gemm_k = C / L.groups;
    L.gemm_n = checked_mul(checked_mul(L.kernel_h, L.kernel_w), L.out_features / L.groups);
    L.gemm_groups = L.groups;
  }
  return two_d ? Shape{oh, ow, oc} : Shape{ow, oc};
}

namespace {

// Output size along one axis and the padding before/after for `padding`.
struct AxisPlan {
  int64_t out = 0, pad_before = 0, pad_after = 0;
};

AxisPlan plan_axis(const YamlNode& layer, const std::string& padding_mode, int64_t explicit_before,
                   int64_t explicit_after, int64_t in, int64_t kernel, int64_t stride, bool transposed) {
  AxisPlan p;
  if (padding_mode == "same") {
    if (transposed) {
      // Output = input x stride; the padding removes the overhang.
      p.out = in * stride;
      const int64_t total = std::max<int64_t>((in - 1) * stride + kernel - p.out, 0);
      p.pad_before = total / 2;
      p.pad_after = total - p.pad_before;
      return p;
    }
    p.out = (in + stride - 1) / stride;
    const int64_t total = std::max<int64_t>((p.out - 1) * stride + kernel - in, 0);
    p.pad_before = total / 2;
    p.pad_after = total - p.pad_before;
  } else {
    const int64_t before = padding_mode == "valid" ? 0 : explicit_before;
    const int64_t after = padding_mode == "valid" ? 0 : explicit_after;
    if (!transposed && in + before + after < kernel) {
      layer.fail("window of " + std::to_string(kernel) + " does not fit an input of " + std::to_string(in) +
                 " with padding " + std::to_string(before));
    }
    p.pad_before = before;
    p.pad_after = after;
  }
  return p;
}

}  // namespace

void parse_window_yaml(const YamlNode& node, const Graph& g, Layer& layer) {
  const OpKind op = layer.op;
  const Tensor& x = input(g, layer, 0);
  yaml_need_rank(node, layer, x, 3, "[H, W, C]");
  const bool transposed = op == OpKind::kConvTranspose2d;
  const bool matrix = op == OpKind::kConv2d || transposed;
  auto [kh, kw] = pair_of(node.at("kernel"));
  auto stride = node.get("stride") ? pair_of(node.at("stride"))
                                   : (matrix ? std::pair<int64_t, int64_t>{1, 1} : std::pair<int64_t, int64_t>{kh, kw});
  auto dil = node.get("dilation") ? pair_of(node.at("dilation")) : std::pair<int64_t, int64_t>{1, 1};
  std::string mode = "valid";
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  if (auto p = node.get("padding")) {
    if (p->is_scalar() && (p->as_string() == "same" || p->as_string() == "valid")) {
      mode = p->as_string();
    } else {
      mode = "explicit";
      auto v = p->as_int_list(0, 1 << 16);
      if (v.size() == 3 || v.size() > 4) p->fail("padding must be same, valid, N, [ph, pw] or [top, left, bottom, right]");
      if (v.size() == 4) {
        pt = v[0], pl = v[1], pb = v[2], pr = v[3];
      } else {
        pt = pb = v[0];
        pl = pr = v.size() == 2 ? v[1] : v[0];
      }
    }
  }
  const int64_t span_h = dil.first * (kh - 1) + 1, span_w = dil.second * (kw - 1) + 1;
  const AxisPlan ah = plan_axis(node, mode, pt, pb, x.shape[0], span_h, stride.first, transposed);
  const AxisPlan aw = plan_axis(node, mode, pl, pr, x.shape[1], span_w, stride.second, transposed);
  layer.kernel_h = kh;
  layer.kernel_w = kw;
  layer.stride_h = stride.first;
  layer.stride_w = stride.second;
  layer.dilation_h = dil.first;
  layer.dilation_w = dil.second;
  layer.pad_top = ah.pad_before;
  layer.pad_bottom = ah.pad_after;
  layer.pad_left = aw.pad_before;
  layer.pad_right = aw.pad_after;
  layer.ceil_mode = node.bool_or("ceil_mode", false);
  if (matrix) {
    layer.out_features = node.at("filters").as_int(1, 1 << 24);
    layer.groups = node.int_or("groups", 1, 1, 1 << 24);
  }
  if (transposed && node.get("output_padding")) {
    auto [oh, ow] = pair_of(node.at("output_padding"));
    layer.output_pad_h = oh, layer.output_pad_w = ow;
  }
}

}  // namespace ops

namespace {

// A pooling window reads kh x kw inputs per output.
int64_t pool_work(const Graph&, const Layer& l) { return l.kernel_h * l.kernel_w; }

}  // namespace

void add_window_ops(OpRegistry& r) {
  r.add({.kind = OpKind::kMaxPool,
         .name = "maxpool",
         .energy_class = EnergyClass::kAdd32,  // compares
         .yaml_keys = {"kernel", "stride", "padding", "dilation", "ceil_mode"},
         .parse_yaml = ops::parse_window_yaml,
         .infer = ops::infer_window,
         .work_per_output = pool_work,
         .windowed = true,
         .copies_codes = true,  // the max of codes is a code
         .functional = FunctionalKernel::kPool});
  r.add({.kind = OpKind::kAvgPool,
         .name = "avgpool",
         .energy_class = EnergyClass::kMultiplyAdd32,  // the sum scaled by 1/count
         .yaml_keys = {"kernel", "stride", "padding", "ceil_mode"},
         .parse_yaml = ops::parse_window_yaml,
         .infer = ops::infer_window,
         .work_per_output = pool_work,
         .windowed = true,
         .functional = FunctionalKernel::kPool});
}

}  // namespace tessera::graph
