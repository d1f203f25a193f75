#pragma once
// A tiny ONNX model writer for tests: graph inputs, outputs, nodes, initializers and
// attributes through the protobuf API, saved under the test's temp directory.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

#include "sim/common/error.h"
#include "sim/graph/onnx_importer.h"

namespace tessera::test_support {

namespace fs = std::filesystem;

using Dim = std::variant<int64_t, std::string>;

// A tiny ONNX model writer for tests.
struct Model {
  onnx::ModelProto m;
  onnx::GraphProto* g;
  explicit Model(int opset = 13) {
    m.set_ir_version(8);
    auto* o = m.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    g = m.mutable_graph();
    g->set_name("test");
  }
  void input(const std::string& name, std::vector<Dim> dims, int elem = onnx::TensorProto_DataType_FLOAT) {
    auto* v = g->add_input();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem);
    auto* s = t->mutable_shape();
    for (const auto& d : dims) {
      auto* dd = s->add_dim();
      if (std::holds_alternative<int64_t>(d)) dd->set_dim_value(std::get<int64_t>(d));
      else dd->set_dim_param(std::get<std::string>(d));
    }
  }
  void output(const std::string& name) {
    auto* v = g->add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto_DataType_FLOAT);
  }
  onnx::NodeProto* node(const std::string& op, std::vector<std::string> ins, std::vector<std::string> outs,
                        const std::string& name = "") {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto& i : ins) n->add_input(i);
    for (auto& o : outs) n->add_output(o);
    return n;
  }
  onnx::TensorProto* weight(const std::string& name, std::vector<int64_t> dims) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto_DataType_FLOAT);
    int64_t n = 1;
    for (int64_t d : dims) t->add_dims(d), n *= d;
    t->set_raw_data(std::string(static_cast<size_t>(n * 4), '\0'));
    return t;
  }
  onnx::TensorProto* ints(const std::string& name, std::vector<int64_t> values, bool scalar = false) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto_DataType_INT64);
    if (!scalar) t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
    return t;
  }
  onnx::TensorProto* floats(const std::string& name, std::vector<float> values) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto_DataType_FLOAT);
    if (values.size() != 1) t->add_dims(static_cast<int64_t>(values.size()));
    for (float v : values) t->add_float_data(v);
    return t;
  }
  fs::path save(const std::string& file) const {
    const fs::path p = fs::path(testing::TempDir()) / file;
    std::ofstream f(p, std::ios::binary);
    m.SerializeToOstream(&f);
    return p;
  }
};

inline void attr(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_INT);
  a->set_i(v);
}
inline void attr(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_INTS);
  for (int64_t x : v) a->add_ints(x);
}
inline void attr(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_STRING);
  a->set_s(v);
}
inline void attr(onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_FLOAT);
  a->set_f(v);
}

inline std::string error_of(const fs::path& p, const graph::OnnxOptions& o = {}) {
  try {
    graph::load_onnx(p, o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace tessera::test_support
