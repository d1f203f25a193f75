#pragma once
// Private to the ONNX importer: the attributes and shapes of a node that the constant path
// (const_fold.cpp) and the activation path (ops_layout.cpp, ops_vector.cpp) both read, read
// and checked once (shape_inference.cpp). Holds nothing of its own: `NodeShapes(m).expand_shape(n, s)`.
#include "sim/graph/onnx/importer.h"

namespace tessera::graph::onnx_import {

class NodeShapes {
 public:
  explicit NodeShapes(Importer& m) : m_(m) {}
  // Reshape, Flatten, Squeeze, Unsqueeze. `keep_batch`: squeezing an axis that holds the
  // batch is unsupported (an activation keeps its batch) rather than a shape error.
  SymShape reshape_like_shape(const onnx::NodeProto& n, const SymShape& in, bool keep_batch);
  SymShape expand_shape(const onnx::NodeProto& n, const SymShape& in);  // Expand: in broadcast to input 1
  struct SliceSpec {
    std::vector<int64_t> starts, ends, axes, steps;  // one entry per sliced axis, checked
  };
  SliceSpec read_slice(const onnx::NodeProto& n, size_t rank);
  std::vector<int64_t> reduce_axes(const onnx::NodeProto& n);  // as given: empty means every axis
  std::vector<int64_t> transpose_perm(const onnx::NodeProto& n, size_t rank);  // checked
  int64_t gather_index(const onnx::NodeProto& n, int64_t k, int64_t dim) const;  // in [0, dim)

 private:
  using Node = onnx::NodeProto;
  SymShape infer_reshape(const Node& n, const SymShape& in);

  Importer& m_;
};

}  // namespace tessera::graph::onnx_import
