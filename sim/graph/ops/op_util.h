#pragma once
// Helpers shared by the op family files (not part of the registry's interface).
#include <cstdint>
#include <string>
#include <utility>

#include "sim/common/dtype.h"
#include "sim/graph/graph.h"

namespace tessera {
class YamlNode;
}

namespace tessera::graph::ops {

// ---- shape rules (throw ShapeError)
inline const Tensor& input(const Graph& g, const Layer& l, size_t i) {
  return g.tensors[static_cast<size_t>(l.inputs[i])];
}
void need_inputs(const Layer& l, size_t lo, size_t hi);
void need_rank(const Layer& l, const Tensor& t, size_t lo, size_t hi, const std::string& hint);
int64_t normalize_axis(int64_t axis, size_t rank, const std::string& what);
int64_t checked_mul(int64_t a, int64_t b);
// Output size of a sliding window along one axis.
int64_t window_out(int64_t in, int64_t pad_before, int64_t pad_after, int64_t kernel, int64_t stride,
                   int64_t dilation, bool ceil_mode);
// conv2d, conv_transpose2d, maxpool, avgpool (window.cpp).
Shape infer_window(const Graph& g, Layer& l);

// ---- YAML attributes (fail through the node: file, line, layer)
std::pair<int64_t, int64_t> pair_of(const YamlNode& node);
// A tensor's dtype: any operand dtype but the weights-only int4. weight_dtype_of: any operand dtype.
Dtype dtype_of(const YamlNode& node);
Dtype weight_dtype_of(const YamlNode& node);
// "layer 'x': op y needs a <hint> input, but 't' is [..]" unless t has `rank` axes.
void yaml_need_rank(const YamlNode& node, const Layer& l, const Tensor& t, size_t rank, const char* hint);
// conv2d, conv_transpose2d, maxpool, avgpool: kernel, stride, padding, dilation, ceil_mode,
// and filters/groups/output_padding for the convolutions (window.cpp).
void parse_window_yaml(const YamlNode& node, const Graph& g, Layer& l);
// fc, conv2d, conv_transpose2d, matmul: the fused activation and the weight dtype.
void parse_matrix_extras(const YamlNode& node, Layer& l);

}  // namespace tessera::graph::ops
