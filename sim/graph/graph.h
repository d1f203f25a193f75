#pragma once
// Graph IR: tensors with per-sample shapes and dtypes, and the layers between them.
// The batch dimension is implicit; the compiler multiplies it in.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/common/dtype.h"

namespace tessera {
class YamlNode;
}

namespace tessera::graph {

using Shape = std::vector<int64_t>;  // per sample: [features] or [H, W, C]

int64_t shape_elements(const Shape& shape);
std::string shape_text(const Shape& shape);  // "[56, 56, 64]"

enum class OpKind {
  kFc,
  kConv2d,
  kMaxPool,
  kAvgPool,
  kGlobalAvgPool,
  kFlatten,
  kConcat,
  kAdd,
  kMul,
  kSigmoid,
  kTanh,
  kRelu,
};
std::string_view op_name(OpKind op);
bool is_matrix_op(OpKind op);   // runs on the systolic array
bool is_layout_op(OpKind op);   // flatten: no data moves

enum class Activation { kNone, kRelu, kSigmoid, kTanh };
std::string_view activation_name(Activation a);

struct Tensor {
  std::string name;
  Shape shape;
  Dtype dtype = Dtype::kInt8;
  int producer = -1;  // layer index, -1 for graph inputs
};

struct Layer {
  std::string name;
  OpKind op = OpKind::kFc;
  std::vector<int> inputs;  // tensor ids
  int output = -1;          // tensor id
  Activation activation = Activation::kNone;
  Dtype weight_dtype = Dtype::kInt8;
  // fc: units; conv2d: filters
  int64_t out_features = 0;
  // conv2d / pooling window
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;

  // Matrix view of a matrix op for one sample: (M rows) x (K) times (K) x (N).
  int64_t gemm_m_per_sample = 0;
  int64_t gemm_k = 0;
  int64_t gemm_n = 0;

  int64_t weight_count() const { return gemm_k * gemm_n; }
  int64_t macs_per_sample() const { return gemm_m_per_sample * gemm_k * gemm_n; }
};

struct Graph {
  std::string name;
  std::string description;
  std::string source;  // file it came from
  int64_t default_batch = 1;
  std::vector<Tensor> tensors;
  std::vector<Layer> layers;  // topological order
  std::vector<int> inputs;    // tensor ids
  std::vector<int> outputs;   // tensor ids

  int64_t total_weights() const;
  int64_t total_macs_per_sample() const;
  int find_tensor(const std::string& name) const;  // -1 if absent
};

// YAML graph format (docs/workloads.md). Throws InputError naming file, line and layer.
Graph load_graph_yaml(const std::filesystem::path& path);
Graph parse_graph_yaml(const YamlNode& root);

}  // namespace tessera::graph
