// Normalisation (vector unit): batch_norm (per-channel scale and shift, when it cannot
// be folded into a conv), layer_norm over the axes from `axis` on, softmax along `axis`.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "sim/common/yaml_reader.h"
#include "sim/graph/ops/op_util.h"
#include "sim/graph/ops/registry.h"

namespace tessera::graph {
namespace {

using namespace ops;

constexpr float kLayerNormEpsilon = 1e-5f;  // ONNX LayerNormalization's default

int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = std::min(begin, s.size()); i < std::min(end, s.size()); ++i) p *= s[i];
  return p;
}

void parse_axis(const YamlNode& node, const Graph&, Layer& layer) { layer.axis = node.int_or("axis", -1, -16, 15); }

Shape infer_same(const Graph& g, Layer& L) {
  need_inputs(L, 1, 1);
  return input(g, L, 0).shape;
}

Shape infer_along_axis(const Graph& g, Layer& L) {
  need_inputs(L, 1, 1);
  const Tensor& x = input(g, L, 0);
  L.axis = normalize_axis(L.axis, x.shape.size(), std::string(op_name(L.op)) + " axis");
  return x.shape;
}

// Statistics pass(es), then normalise.
int64_t three_ops(const Graph&, const Layer&) { return 3; }

bool along_last_axis(const Layer& l, size_t rank) {
  const int64_t axis = l.axis < 0 ? l.axis + static_cast<int64_t>(rank) : l.axis;
  return axis == static_cast<int64_t>(rank) - 1;
}

bool always(const Layer&, size_t) { return true; }

// Max-subtracted exponentials over their sum along `axis` (normalised by infer).
Fp32Kernel softmax_fp32(const Graph& g, const Layer& l) {
  const Shape& xs = g.tensors[static_cast<size_t>(l.inputs.at(0))].shape;
  const auto axis = static_cast<size_t>(l.axis);
  const int64_t outer = product(xs, 0, axis), dim = xs.at(axis), inner = product(xs, axis + 1, xs.size());
  const int64_t e = shape_elements(g.tensors[static_cast<size_t>(l.output)].shape);
  return [=](const std::vector<const float*>& in, int64_t n, float* out) {
    std::vector<float> ex(static_cast<size_t>(dim));
    for (int64_t s = 0; s < n; ++s)
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < inner; ++j) {
          const int64_t base = s * e + o * dim * inner + j;
          float mx = -std::numeric_limits<float>::infinity();
          for (int64_t d = 0; d < dim; ++d) mx = std::max(mx, in[0][base + d * inner]);
          float sum = 0;
          for (int64_t d = 0; d < dim; ++d) sum += ex[d] = std::exp(in[0][base + d * inner] - mx);
          for (int64_t d = 0; d < dim; ++d) out[base + d * inner] = ex[d] / sum;
        }
  };
}

// (x - mean) / sqrt(var + 1e-5) over the axes from `axis` on, biased variance, no
// gamma/beta (the IR carries none).
Fp32Kernel layer_norm_fp32(const Graph& g, const Layer& l) {
  const Shape& xs = g.tensors[static_cast<size_t>(l.inputs.at(0))].shape;
  const int64_t inner = product(xs, static_cast<size_t>(l.axis), xs.size());
  const int64_t e = shape_elements(g.tensors[static_cast<size_t>(l.output)].shape);
  return [=](const std::vector<const float*>& in, int64_t n, float* out) {
    for (int64_t r = 0; r < n * e / inner; ++r) {
      const float* x = in[0] + r * inner;
      float sum = 0;
      for (int64_t i = 0; i < inner; ++i) sum += x[i];
      const float mean = sum / static_cast<float>(inner);
      float sq = 0;
      for (int64_t i = 0; i < inner; ++i) sq += (x[i] - mean) * (x[i] - mean);
      const float inv = 1.0f / std::sqrt(sq / static_cast<float>(inner) + kLayerNormEpsilon);
      for (int64_t i = 0; i < inner; ++i) out[r * inner + i] = (x[i] - mean) * inv;
    }
  };
}

}  // namespace

void add_normalize_ops(OpRegistry& r) {
  r.add({.kind = OpKind::kBatchNorm,
         .name = "batch_norm",
         .energy_class = EnergyClass::kMultiplyAdd32,  // a scale and a shift
         .infer = infer_same,
         .row_local = always});
  r.add({.kind = OpKind::kLayerNorm,
         .name = "layer_norm",
         .energy_class = EnergyClass::kFp32MultiplyAdd,  // its reciprocal square root
         .yaml_keys = {"axis"},
         .parse_yaml = parse_axis,
         .infer = infer_along_axis,
         .work_per_output = three_ops,
         .row_local = along_last_axis,
         .fp32 = layer_norm_fp32});
  r.add({.kind = OpKind::kSoftmax,
         .name = "softmax",
         .energy_class = EnergyClass::kFp32MultiplyAdd,  // its exp
         .yaml_keys = {"axis"},
         .parse_yaml = parse_axis,
         .infer = infer_along_axis,
         .work_per_output = three_ops,
         .row_local = along_last_axis,
         .vector_class = VectorClass::kTranscendental,  // an exp per element
         .fp32 = softmax_fp32});
}

}  // namespace tessera::graph
