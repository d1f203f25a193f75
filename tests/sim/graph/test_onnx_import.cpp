// The ONNX importer on small models built here with the protobuf API: errors (corrupt and
// truncated files, unsupported ops, unbound dimensions), opset forms, constant folding of
// shape sub-graphs, external data, fusion, layouts, and how the compiler lowers what the
// importer produces (depthwise mapping, attention matmuls, LSTM steps).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <variant>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/compiler/compiler.h"
#include "sim/config/arch_config.h"
#include "sim/graph/onnx_importer.h"
#include "tests/support/onnx_model.h"
#include "tests/support/tiny_arch.h"

using namespace tessera;
using namespace tessera::graph;
using namespace tessera::test_support;
namespace fs = std::filesystem;

namespace {

// x [N, 3, 8, 8] -> Conv 3x3 (4 filters) -> BN -> Relu -> GlobalAveragePool -> Flatten -> Gemm 10
Model small_cnn() {
  Model m;
  m.input("x", {std::string("N"), int64_t{3}, int64_t{8}, int64_t{8}});
  m.weight("w", {4, 3, 3, 3});
  auto* c = m.node("Conv", {"x", "w"}, {"c"}, "conv");
  attr(c, "pads", std::vector<int64_t>{1, 1, 1, 1});
  for (const char* s : {"s", "b", "mu", "var"}) m.weight(s, {4});
  m.node("BatchNormalization", {"c", "s", "b", "mu", "var"}, {"bn"}, "bn");
  m.node("Relu", {"bn"}, {"r"}, "relu");
  m.node("GlobalAveragePool", {"r"}, {"p"}, "gap");
  m.node("Flatten", {"p"}, {"f"}, "flatten");
  m.weight("fw", {10, 4});
  auto* gm = m.node("Gemm", {"f", "fw"}, {"y"}, "fc");
  attr(gm, "transB", int64_t{1});
  m.output("y");
  return m;
}

}  // namespace

// ---------------------------------------------------------------- errors

TEST(OnnxErrors, CorruptAndTruncatedFilesNameTheFile) {
  const Model m = small_cnn();
  const std::string bytes = m.m.SerializeAsString();
  for (double cut : {0.1, 0.33, 0.5, 0.77, 0.95}) {
    const fs::path p = fs::path(testing::TempDir()) / "truncated.onnx";
    {
      std::ofstream f(p, std::ios::binary);
      f.write(bytes.data(), static_cast<std::streamsize>(static_cast<double>(bytes.size()) * cut));
    }
    const std::string e = error_of(p);
    EXPECT_NE(e.find(p.string()), std::string::npos) << "cut " << cut << ": " << e;
    EXPECT_NE(e.find("truncated or corrupt"), std::string::npos) << "cut " << cut << ": " << e;
  }
  const fs::path junk = fs::path(testing::TempDir()) / "junk.onnx";
  {
    std::ofstream f(junk);
    f << "this is not a protobuf\n";
  }
  const std::string e = error_of(junk);
  EXPECT_NE(e.find("junk.onnx: not a valid ONNX model"), std::string::npos) << e;
  EXPECT_NE(error_of(fs::path(testing::TempDir()) / "missing.onnx").find("no such file"), std::string::npos);
}

TEST(OnnxErrors, UnsupportedOpsAreAllReportedTogether) {
  Model m;
  m.input("x", {int64_t{1}, int64_t{4}, int64_t{8}, int64_t{8}});
  m.node("Relu", {"x"}, {"a"}, "ok_relu");
  m.node("Einsum", {"a"}, {"b"}, "mix");
  m.node("Relu", {"b"}, {"c"}, "after");  // depends on an unsupported node: not reported again
  m.node("Hardmax", {"a"}, {"d"}, "hm");
  m.node("Add", {"c", "d"}, {"y"}, "sum");
  m.input("v", {int64_t{1}, int64_t{4}, int64_t{2}, int64_t{8}, int64_t{8}});
  m.weight("w3", {2, 4, 1, 1, 1});
  m.node("Conv", {"v", "w3"}, {"z"}, "conv3d");
  m.output("y");
  m.output("z");
  const std::string e = error_of(m.save("unsupported.onnx"));
  EXPECT_NE(e.find("unsupported.onnx: 3 node(s) cannot be imported"), std::string::npos) << e;
  EXPECT_NE(e.find("'mix' (Einsum: equation '': 1 operand(s) (supported: two operands"), std::string::npos) << e;
  EXPECT_NE(e.find("'hm' (Hardmax)"), std::string::npos) << e;
  EXPECT_NE(e.find("'conv3d' (Conv: "), std::string::npos) << e;
  EXPECT_EQ(e.find("'after'"), std::string::npos) << e;
  EXPECT_NE(e.find("Supported ops:"), std::string::npos) << e;
}

// ---------------------------------------------------------------- host work

// x [1, 8, 4] -> Relu -> boxes; s [1, 2, 8] -> Sigmoid -> scores; NonMaxSuppression on the
// host, then a Gather of its result (host too). The accelerator runs the two vector layers
// and sends both results over PCIe: 8 x 4 + 2 x 8 = 48 int8 elements per sample.
TEST(OnnxHostWork, NonMaxSuppressionRunsOnTheHostAndItsOperandsCrossPcie) {
  Model m(11);
  m.input("x", {std::string("N"), int64_t{8}, int64_t{4}});
  m.input("s", {std::string("N"), int64_t{2}, int64_t{8}});
  m.node("Relu", {"x"}, {"boxes"}, "relu");
  m.node("Sigmoid", {"s"}, {"scores"}, "sigmoid");
  m.ints("max_out", {5});
  m.node("NonMaxSuppression", {"boxes", "scores", "max_out"}, {"sel"}, "nms");
  m.ints("col", {2}, true);
  auto* ga = m.node("Gather", {"sel", "col"}, {"box_ids"}, "pick");
  attr(ga, "axis", int64_t{1});
  m.output("box_ids");
  OnnxImportInfo info;
  const Graph g = load_onnx(m.save("nms.onnx"), {}, &info);
  ASSERT_EQ(g.layers.size(), 2u);
  EXPECT_EQ(g.total_macs_per_sample(), 0);
  ASSERT_EQ(g.outputs.size(), 2u);  // what the host reads, in the order it reads it
  EXPECT_EQ(g.tensors[static_cast<size_t>(g.outputs[0])].name, "boxes");
  EXPECT_EQ(g.tensors[static_cast<size_t>(g.outputs[1])].name, "scores");
  ASSERT_EQ(g.host_ops.size(), 2u);
  EXPECT_EQ(g.host_ops[0].name, "nms");
  EXPECT_EQ(g.host_ops[0].op, "NonMaxSuppression");
  EXPECT_EQ(g.host_ops[0].reads, g.outputs);
  EXPECT_EQ(g.host_ops[1].name, "pick");
  EXPECT_TRUE(g.host_ops[1].reads.empty());  // reads only the host's own result
  EXPECT_EQ(info.absorbed.at("nms"), "host: NonMaxSuppression");
  EXPECT_EQ(info.absorbed.at("pick"), "host: reads 'sel' from 'nms' (NonMaxSuppression)");
  EXPECT_EQ(info.value_shapes.count("sel"), 0u);  // its size depends on the data
  const auto p = compiler::compile(g, test_support::TinyArch{}.build(), {.batch = 3});
  EXPECT_EQ(p.host_output_bytes, 3u * (8 * 4 + 2 * 8));
}

// A data-dependent gather (indices from TopK) is host work; the TopK stays on the vector unit.
TEST(OnnxHostWork, GatherByComputedIndicesRunsOnTheHost) {
  Model m(11);
  m.input("x", {std::string("N"), int64_t{10}, int64_t{4}});
  m.input("s", {std::string("N"), int64_t{10}});
  m.ints("k", {3});
  m.node("TopK", {"s", "k"}, {"v", "i"}, "topk");
  auto* gn = m.node("GatherElements", {"x", "i"}, {"picked"}, "gather_elements");
  attr(gn, "axis", int64_t{1});
  auto* ga = m.node("Gather", {"x", "i"}, {"rows"}, "gather");
  attr(ga, "axis", int64_t{1});
  m.output("picked");
  m.output("rows");
  m.output("v");
  OnnxImportInfo info;
  const Graph g = load_onnx(m.save("gather_host.onnx"), {}, &info);
  int topk = 0;
  for (const auto& l : g.layers) topk += l.op == OpKind::kTopK;
  EXPECT_EQ(topk, 2);  // values (a graph output) and indices (read by the host)
  ASSERT_EQ(g.host_ops.size(), 2u);
  EXPECT_EQ(g.host_ops[0].op, "GatherElements");
  EXPECT_EQ(g.host_ops[1].op, "Gather");
  EXPECT_EQ(info.absorbed.at("gather"), "host: Gather of an activation by indices computed at run time");
  // Only the indices cross PCIe: x is a graph input the accelerator never touches (the host has it).
  ASSERT_EQ(g.host_ops[0].reads.size(), 1u);
  EXPECT_EQ(g.tensors[static_cast<size_t>(g.host_ops[0].reads[0])].name, "i");
  EXPECT_EQ(g.host_ops[1].reads, g.host_ops[0].reads);
}

// A matrix op after host work would lose its MACs: a blocker naming what it reads.
TEST(OnnxHostWork, MatrixOpAfterHostWorkIsABlocker) {
  Model m(11);
  m.input("x", {int64_t{1}, int64_t{6}});
  m.node("Relu", {"x"}, {"r"}, "relu");
  m.node("NonZero", {"r"}, {"nz"}, "nonzero");
  auto* c = m.node("Cast", {"nz"}, {"nzf"}, "cast");
  attr(c, "to", int64_t{onnx::TensorProto_DataType_FLOAT});
  m.weight("w", {6, 4});
  m.node("MatMul", {"nzf", "w"}, {"y"}, "mm");
  m.output("y");
  const std::string e = error_of(m.save("host_then_matmul.onnx"));
  EXPECT_NE(e.find("1 node(s) cannot be imported: 'mm' (MatMul: reads 'nzf', computed on the host by 'cast' (Cast): a "
                   "matrix op after host work)"),
            std::string::npos)
      << e;
}

TEST(OnnxErrors, UnboundDynamicDimensionsAreNamed) {
  Model m;
  m.input("tokens", {std::string("batch"), std::string("seq"), int64_t{16}});
  m.input("other", {std::string("batch"), int64_t{4}, std::string{}});
  m.weight("w", {16, 8});
  m.node("MatMul", {"tokens", "w"}, {"y"}, "proj");
  m.node("Relu", {"other"}, {"z"}, "r");
  m.output("y");
  m.output("z");
  const fs::path p = m.save("dynamic.onnx");
  const std::string e = error_of(p);
  EXPECT_NE(e.find("dynamic.onnx: dynamic dimension(s) left unbound"), std::string::npos) << e;
  EXPECT_NE(e.find("'seq' ('tokens' dim 1)"), std::string::npos) << e;
  EXPECT_NE(e.find("input 'other' dimension 2 (unnamed)"), std::string::npos) << e;
  EXPECT_NE(e.find("--input-shape"), std::string::npos) << e;
  EXPECT_EQ(e.find("dim 0"), std::string::npos) << "the batch defaults to 1: " << e;

  OnnxOptions o;
  o.input_shapes = {{"tokens", {4, 32, 16}}, {"other", {4, 4, 5}}};
  const Graph g = load_onnx(p, o);
  EXPECT_EQ(g.default_batch, 4);
  EXPECT_EQ(g.tensors[static_cast<size_t>(g.outputs[0])].shape, (Shape{32, 8}));
  // A named dimension can be bound directly; a wrong rank or a fixed dim is an error.
  o.input_shapes = {{"seq", {7}}, {"other", {1, 4, 2}}};
  EXPECT_EQ(load_onnx(p, o).tensors[static_cast<size_t>(load_onnx(p, o).outputs[0])].shape, (Shape{7, 8}));
  o.input_shapes = {{"tokens", {1, 32}}};
  EXPECT_NE(error_of(p, o).find("gives 2 dimensions, the model's input has 3"), std::string::npos);
  o.input_shapes = {{"tokens", {1, 32, 17}}, {"other", {1, 4, 5}}};
  EXPECT_NE(error_of(p, o).find("dimension 2 is fixed to 16 in the model, not 17"), std::string::npos);
  o.input_shapes = {{"nope", {1}}};
  EXPECT_NE(error_of(p, o).find("'nope', which is neither a graph input"), std::string::npos);
  o.input_shapes = {{"tokens", {2, 8, 16}}, {"other", {3, 4, 5}}};
  EXPECT_NE(error_of(p, o).find("binds dimension 'batch' to 3, but it is already bound to 2"), std::string::npos)
      << error_of(p, o);
}

TEST(OnnxErrors, ParseInputShape) {
  EXPECT_EQ(parse_input_shape("x=1,3,224,224"), (std::pair<std::string, std::vector<int64_t>>{"x", {1, 3, 224, 224}}));
  EXPECT_EQ(parse_input_shape("input_ids=8,128").second, (std::vector<int64_t>{8, 128}));
  for (const char* bad : {"x", "=1,2", "x=", "x=1,,2", "x=1,a", "x=0,3", "x=-1", "x=1,3,"}) {
    EXPECT_THROW(parse_input_shape(bad), InputError) << bad;
  }
  EXPECT_TRUE(is_onnx_path("a/b/Model.ONNX"));
  EXPECT_FALSE(is_onnx_path("workloads/tpu/mlp0.yaml"));
}

TEST(OnnxErrors, MissingOrShortExternalDataIsNamed) {
  Model m = small_cnn();
  auto* w = m.g->mutable_initializer(0);  // "w"
  w->clear_raw_data();
  w->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
  auto* loc = w->add_external_data();
  loc->set_key("location");
  loc->set_value("cnn.weights");
  auto* len = w->add_external_data();
  len->set_key("length");
  len->set_value(std::to_string(4 * 3 * 3 * 3 * 4));
  const fs::path p = m.save("cnn_external.onnx");
  std::filesystem::remove(p.parent_path() / "cnn.weights");
  std::string e = error_of(p);
  EXPECT_NE(e.find("initializer 'w': its external data file"), std::string::npos) << e;
  EXPECT_NE(e.find("cnn.weights"), std::string::npos) << e;
  {
    std::ofstream f(p.parent_path() / "cnn.weights", std::ios::binary);
    f << std::string(100, '\0');
  }
  e = error_of(p);
  EXPECT_NE(e.find("which has only 100 (truncated data file?)"), std::string::npos) << e;
  {
    std::ofstream f(p.parent_path() / "cnn.weights", std::ios::binary);
    f << std::string(432, '\0');
  }
  EXPECT_EQ(load_onnx(p).layers.size(), 4u);
}

// ---------------------------------------------------------------- folding, fusion, layout

TEST(OnnxImport, ConvBatchNormReluFoldIntoOneLayer) {
  OnnxImportInfo info;
  const Graph g = load_onnx(small_cnn().save("cnn.onnx"), {}, &info);
  ASSERT_EQ(g.layers.size(), 4u);  // conv (+BN +Relu), global pool, flatten (a free reshape), fc
  EXPECT_EQ(g.layers[0].name, "conv");
  EXPECT_EQ(g.layers[0].op, OpKind::kConv2d);
  EXPECT_EQ(g.layers[0].activation, Activation::kRelu);
  EXPECT_EQ(g.tensors[static_cast<size_t>(g.inputs[0])].shape, (Shape{8, 8, 3}));  // NCHW -> per-sample HWC
  EXPECT_EQ(g.tensors[static_cast<size_t>(g.layers[0].output)].shape, (Shape{8, 8, 4}));
  EXPECT_EQ(g.layers[2].op, OpKind::kReshape);
  EXPECT_EQ(g.layers[3].op, OpKind::kFc);
  EXPECT_EQ(g.layers[3].name, "fc");
  EXPECT_EQ(g.layers[3].gemm_k, 4);
  EXPECT_EQ(info.absorbed["bn"], "batchnorm folded");
  EXPECT_EQ(info.absorbed["relu"], "fused");
  EXPECT_EQ(info.value_shapes["p"], (std::vector<int64_t>{1, 4, 1, 1}));
  EXPECT_EQ(g.default_batch, 1);
}

TEST(OnnxImport, ShapeSubgraphFoldsAndTheBatchIsTracked) {
  // x [N, S, 64] -> Reshape(Concat(Shape[0], Shape[1], 4, 16)) -> Transpose(0,2,1,3) -> Reshape(-1, 64)
  Model m;
  m.input("x", {std::string("N"), int64_t{10}, int64_t{64}});
  m.node("Shape", {"x"}, {"shape"});
  m.ints("i0", {0}, true);
  m.ints("i1", {1}, true);
  m.ints("ax", {0});
  m.node("Gather", {"shape", "i0"}, {"n"});
  m.node("Gather", {"shape", "i1"}, {"s"});
  m.node("Unsqueeze", {"n", "ax"}, {"n1"});
  m.node("Unsqueeze", {"s", "ax"}, {"s1"});
  m.ints("heads", {4, 16});
  attr(m.node("Concat", {"n1", "s1", "heads"}, {"target"}), "axis", int64_t{0});
  m.node("Reshape", {"x", "target"}, {"r"}, "split_heads");
  attr(m.node("Transpose", {"r"}, {"t"}, "to_heads"), "perm", std::vector<int64_t>{0, 2, 1, 3});
  m.ints("flat", {-1, 64});
  m.node("Reshape", {"t", "flat"}, {"y"}, "merge");
  m.output("y");
  OnnxImportInfo info;
  OnnxOptions o;
  o.input_shapes = {{"x", {3, 10, 64}}};
  const Graph g = load_onnx(m.save("fold.onnx"), o, &info);
  EXPECT_EQ(info.value_shapes["target"], (std::vector<int64_t>{4}));
  EXPECT_EQ(info.value_shapes["r"], (std::vector<int64_t>{3, 10, 4, 16}));
  EXPECT_EQ(info.value_shapes["y"], (std::vector<int64_t>{30, 64}));  // the batch merged into the rows
  EXPECT_TRUE(info.absorbed.count("Shape") == 0);
  ASSERT_EQ(g.layers.size(), 3u);  // reshapes are free (aliases); the transpose moves data
  EXPECT_EQ(g.layers[0].op, OpKind::kReshape);
  EXPECT_TRUE(is_layout_op(g.layers[0].op));
  EXPECT_EQ(g.tensors[static_cast<size_t>(g.layers[0].output)].shape, (Shape{10, 4, 16}));
  EXPECT_EQ(g.layers[1].op, OpKind::kTranspose);
  EXPECT_EQ(g.layers[1].perm, (std::vector<int64_t>{1, 0, 2}));
  EXPECT_EQ(g.tensors[static_cast<size_t>(g.layers[1].output)].shape, (Shape{4, 10, 16}));
  EXPECT_EQ(g.layers[2].op, OpKind::kReshape);
  EXPECT_EQ(g.tensors[static_cast<size_t>(g.outputs[0])].shape, (Shape{10, 64}));
  EXPECT_EQ(g.default_batch, 3);
}

TEST(OnnxImport, ExternalShapeConstantIsRead) {
  Model m;
  m.input("x", {int64_t{2}, int64_t{6}});
  auto* t = m.g->add_initializer();
  t->set_name("target");
  t->set_data_type(onnx::TensorProto_DataType_INT64);
  t->add_dims(3);
  t->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
  for (auto [k, v] : {std::pair<const char*, const char*>{"location", "shape.bin"}, {"offset", "8"}, {"length", "24"}}) {
    auto* e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  }
  m.node("Reshape", {"x", "target"}, {"y"}, "r");
  m.output("y");
  const fs::path p = m.save("external_shape.onnx");
  {
    const int64_t vals[4] = {99, 0, 2, 3};  // offset 8 skips the first
    std::ofstream f(p.parent_path() / "shape.bin", std::ios::binary);
    f.write(reinterpret_cast<const char*>(vals), sizeof vals);
  }
  OnnxImportInfo info;
  const Graph g = load_onnx(p, {}, &info);
  EXPECT_EQ(info.value_shapes["y"], (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(g.tensors[static_cast<size_t>(g.outputs[0])].shape, (Shape{2, 3}));
}

TEST(OnnxImport, Opset18Forms) {
  Model m(18);
  m.input("x", {int64_t{1}, int64_t{6}, int64_t{4}, int64_t{4}});
  m.ints("axes", {2, 3});
  attr(m.node("ReduceMean", {"x", "axes"}, {"mean"}, "mean"), "keepdims", int64_t{1});
  auto* s = m.node("Split", {"x"}, {"a", "b", "c"}, "split");
  attr(s, "axis", int64_t{1});
  attr(s, "num_outputs", int64_t{3});
  m.ints("pads", {1, 2, 1, 2});
  m.ints("pad_axes", {2, 3});
  m.node("Pad", {"a", "pads", "", "pad_axes"}, {"padded"}, "pad");
  m.floats("scales", {1, 1, 2, 2});
  attr(m.node("Resize", {"b", "", "scales"}, {"up"}, "resize"), "mode", std::string("linear"));
  m.output("mean");
  m.output("padded");
  m.output("up");
  m.output("c");
  OnnxImportInfo info;
  const Graph g = load_onnx(m.save("opset18.onnx"), {}, &info);
  EXPECT_EQ(info.value_shapes["mean"], (std::vector<int64_t>{1, 6, 1, 1}));
  EXPECT_EQ(info.value_shapes["a"], (std::vector<int64_t>{1, 2, 4, 4}));
  EXPECT_EQ(info.value_shapes["padded"], (std::vector<int64_t>{1, 2, 6, 8}));
  EXPECT_EQ(info.value_shapes["up"], (std::vector<int64_t>{1, 2, 8, 8}));
  EXPECT_EQ(info.opset, 18);
  EXPECT_EQ(g.outputs.size(), 4u);
}

TEST(OnnxImport, Opset9Forms) {
  Model m(9);
  m.input("x", {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{4}});
  m.floats("scales", {1, 1, 2, 2});
  m.node("Upsample", {"x", "scales"}, {"up"}, "up");
  auto* sl = m.node("Slice", {"up"}, {"sl"}, "slice");
  attr(sl, "starts", std::vector<int64_t>{1});
  attr(sl, "ends", std::vector<int64_t>{7});
  attr(sl, "axes", std::vector<int64_t>{3});
  auto* pd = m.node("Pad", {"sl"}, {"pd"}, "pad");
  attr(pd, "pads", std::vector<int64_t>{0, 0, 1, 1, 0, 0, 1, 1});
  auto* us = m.node("Unsqueeze", {"pd"}, {"y"}, "unsq");
  attr(us, "axes", std::vector<int64_t>{4});
  m.output("y");
  OnnxImportInfo info;
  load_onnx(m.save("opset9.onnx"), {}, &info);
  EXPECT_EQ(info.value_shapes["up"], (std::vector<int64_t>{1, 2, 8, 8}));
  EXPECT_EQ(info.value_shapes["sl"], (std::vector<int64_t>{1, 2, 8, 6}));
  EXPECT_EQ(info.value_shapes["pd"], (std::vector<int64_t>{1, 2, 10, 8}));
  EXPECT_EQ(info.value_shapes["y"], (std::vector<int64_t>{1, 2, 10, 8, 1}));
}

TEST(OnnxImport, UnnamedNodesAreNamedAfterTheirOutput) {
  Model m;
  m.input("x", {int64_t{1}, int64_t{8}});
  m.weight("w", {8, 4});
  m.node("MatMul", {"x", "w"}, {"logits"});
  m.node("Softmax", {"logits"}, {"probs"}, "softmax");
  m.output("probs");
  const Graph g = load_onnx(m.save("names.onnx"));
  ASSERT_EQ(g.layers.size(), 2u);
  EXPECT_EQ(g.layers[0].name, "logits");
  EXPECT_EQ(g.layers[1].name, "softmax");
}

TEST(OnnxImport, ReshapeOfAnImageCostsATranspose) {
  // Conv output [N, 4, 4, 4] reshaped to [N, 4, 16] needs NCHW order: the importer inserts
  // the data movement (the IR stores images channels last).
  Model m;
  m.input("x", {int64_t{1}, int64_t{3}, int64_t{4}, int64_t{4}});
  m.weight("w", {4, 3, 1, 1});
  m.node("Conv", {"x", "w"}, {"c"}, "conv");
  m.ints("shape", {1, 4, 16});
  m.node("Reshape", {"c", "shape"}, {"y"}, "reshape");
  m.output("y");
  const Graph g = load_onnx(m.save("nchw.onnx"));
  ASSERT_EQ(g.layers.size(), 3u);
  EXPECT_EQ(g.layers[1].op, OpKind::kTranspose);
  EXPECT_EQ(g.layers[1].name, "c/to_nchw");
  EXPECT_EQ(g.tensors[static_cast<size_t>(g.layers[1].output)].shape, (Shape{4, 4, 4}));
  EXPECT_EQ(g.tensors[static_cast<size_t>(g.outputs[0])].shape, (Shape{4, 16}));
}

TEST(OnnxImport, ScaleAndBiasAfterMatmulAreFused) {
  Model m;
  m.input("x", {int64_t{1}, int64_t{5}, int64_t{8}});
  m.weight("w", {8, 4});
  m.node("MatMul", {"x", "w"}, {"mm"}, "proj");
  m.weight("bias", {4});
  m.node("Add", {"mm", "bias"}, {"biased"}, "bias_add");
  m.floats("scale", {0.125f});
  m.node("Mul", {"biased", "scale"}, {"scaled"}, "scale");
  m.node("Relu", {"scaled"}, {"y"}, "relu");
  m.output("y");
  OnnxImportInfo info;
  const Graph g = load_onnx(m.save("fuse.onnx"), {}, &info);
  ASSERT_EQ(g.layers.size(), 1u);
  EXPECT_EQ(g.layers[0].activation, Activation::kRelu);
  EXPECT_EQ(g.layers[0].gemm_m_per_sample, 5);
  EXPECT_EQ(info.absorbed["bias_add"], "fused");
  EXPECT_EQ(info.absorbed["scale"], "fused");
}

TEST(OnnxImport, ActivationUsedTwiceIsNotFused) {
  Model m;
  m.input("x", {int64_t{1}, int64_t{8}});
  m.weight("w", {8, 8});
  m.node("MatMul", {"x", "w"}, {"mm"}, "proj");
  m.node("Relu", {"mm"}, {"r"}, "relu");
  m.node("Add", {"r", "mm"}, {"y"}, "residual");
  m.output("y");
  const Graph g = load_onnx(m.save("nofuse.onnx"));
  ASSERT_EQ(g.layers.size(), 3u);
  EXPECT_EQ(g.layers[0].activation, Activation::kNone);
  EXPECT_EQ(g.layers[1].op, OpKind::kRelu);
}

// ---------------------------------------------------------------- lowering of imported graphs

namespace {
Model depthwise_model() {
  Model m;
  m.input("x", {int64_t{1}, int64_t{32}, int64_t{16}, int64_t{16}});
  m.weight("w", {32, 1, 3, 3});
  auto* c = m.node("Conv", {"x", "w"}, {"y"}, "dw");
  attr(c, "group", int64_t{32});
  attr(c, "pads", std::vector<int64_t>{1, 1, 1, 1});
  m.output("y");
  return m;
}
}  // namespace

TEST(OnnxLowering, DepthwiseConvGoesWhereTheConfigMakesItFaster) {
  const Graph g = load_onnx(depthwise_model().save("dw.onnx"));
  ASSERT_EQ(g.layers.size(), 1u);
  EXPECT_EQ(g.layers[0].groups, 32);
  EXPECT_EQ(g.layers[0].macs_per_sample(), 16 * 16 * 9 * 32);
  test_support::TinyArch wide;  // 4x4 array, 64 vector lanes: the vector unit wins
  wide.vector_lanes = 64;
  const auto pv = compiler::compile(g, wide.build());
  EXPECT_EQ(pv.layers[0].mapping, "vector");
  EXPECT_EQ(pv.layers[0].macs, 16 * 16 * 9 * 32);
  test_support::TinyArch narrow;  // 1 vector lane: 32 small array tiles per chunk win
  narrow.vector_lanes = 1;
  narrow.accumulator_entries = 512;
  const auto pa = compiler::compile(g, narrow.build());
  EXPECT_EQ(pa.layers[0].mapping, "array");
  EXPECT_EQ(pa.layers[0].groups, 32);
  EXPECT_EQ(pa.layers[0].gemm_m * pa.layers[0].gemm_k * pa.layers[0].gemm_n, pa.layers[0].macs);
  int matmuls = 0;
  for (const auto& in : pa.instructions) matmuls += in.op == compiler::Opcode::kMatmul;
  EXPECT_EQ(matmuls, 32 * 3);  // per channel: K = 9 -> 3 tiles of 4 rows (M fits one chunk)
}

TEST(OnnxLowering, AttentionMatmulLoadsItsSecondOperandFromTheUnifiedBuffer) {
  Model m;
  m.input("q", {int64_t{1}, int64_t{2}, int64_t{6}, int64_t{4}});
  m.input("k", {int64_t{1}, int64_t{2}, int64_t{6}, int64_t{4}});
  attr(m.node("Transpose", {"k"}, {"kt"}, "kt"), "perm", std::vector<int64_t>{0, 1, 3, 2});
  m.node("MatMul", {"q", "kt"}, {"s"}, "scores");
  m.output("s");
  const Graph g = load_onnx(m.save("attn.onnx"));
  ASSERT_EQ(g.layers.size(), 2u);
  const Layer& mm = g.layers[1];
  EXPECT_EQ(mm.op, OpKind::kMatmul);
  EXPECT_EQ(mm.gemm_groups, 2);
  EXPECT_EQ(mm.macs_per_sample(), 2 * 6 * 4 * 6);
  EXPECT_EQ(mm.weight_count(), 0);
  const auto p = compiler::compile(g, test_support::TinyArch{}.build(), {.batch = 2});
  EXPECT_EQ(p.layers[1].mapping, "array_ub");
  EXPECT_EQ(p.layers[1].weight_bytes, 0u);
  int ub_reads = 0;
  for (size_t i = 0; i < p.instructions.size(); ++i) {
    const auto& in = p.instructions[i];
    if (in.op != compiler::Opcode::kReadWeights) continue;
    EXPECT_EQ(in.weight_source, compiler::WeightSource::kUnifiedBuffer);
    EXPECT_EQ(in.bytes, 0u);
    ASSERT_EQ(in.reads.size(), 1u);
    EXPECT_EQ(in.reads[0].buffer, g.layers[0].output);  // K^T, produced by the transpose
    // Never ahead of the transpose that produces it.
    bool producer_before = false;
    for (size_t j = 0; j < i; ++j) producer_before |= p.instructions[j].layer == 0;
    EXPECT_TRUE(producer_before);
    ++ub_reads;
  }
  // 2 samples x 2 heads x (K = 4: one tile) x (N = 6: two 4-wide tiles)
  EXPECT_EQ(ub_reads, 2 * 2 * 2);
  EXPECT_EQ(p.weight_bytes_read, 0u);
  EXPECT_NE(p.listing().find("read_weights from=ub ub_read=16"), std::string::npos) << p.listing();
}

TEST(OnnxLowering, LstmRunsStepByStep) {
  Model m(14);
  m.input("x", {int64_t{5}, std::string("batch"), int64_t{8}});  // [T, N, I]: the batch is axis 1
  m.weight("W", {1, 16, 8});
  m.weight("R", {1, 16, 4});
  auto* n = m.node("LSTM", {"x", "W", "R"}, {"Y", "Y_h"}, "lstm");
  attr(n, "hidden_size", int64_t{4});
  m.output("Y_h");
  OnnxImportInfo info;
  const Graph g = load_onnx(m.save("lstm.onnx"), {}, &info);
  EXPECT_EQ(info.value_shapes["Y"], (std::vector<int64_t>{5, 1, 1, 4}));
  EXPECT_EQ(info.value_shapes["Y_h"], (std::vector<int64_t>{1, 1, 4}));
  const Layer& l = g.layers[0];
  EXPECT_EQ(l.op, OpKind::kLstm);
  EXPECT_EQ(l.macs_per_sample(), 5 * 16 * (8 + 4));
  EXPECT_EQ(l.weight_count(), 16 * (8 + 4));
  const auto p = compiler::compile(g, test_support::TinyArch{}.build(), {.batch = 3});
  int cells = 0, matmuls = 0;
  for (const auto& in : p.instructions) {
    if (in.layer != 0) continue;
    cells += in.op == compiler::Opcode::kVector && in.vector_function == "lstm_cell";
    matmuls += in.op == compiler::Opcode::kMatmul;
  }
  EXPECT_EQ(cells, 5);
  // Projection: K = 8 (2 tiles) x N = 16 (4 tiles), M = 15 rows in one chunk; each step: K = 4 x N = 16.
  EXPECT_EQ(matmuls, 2 * 4 + 5 * 4);
  EXPECT_EQ(p.layers[0].macs, 3 * 5 * 16 * (8 + 4));
}

TEST(OnnxLowering, ConstantInputsAreWeights) {
  Model m;
  m.input("x", {int64_t{2}, int64_t{8}});
  m.input("w", {int64_t{8}, int64_t{3}});
  m.node("MatMul", {"x", "w"}, {"y"}, "mm");
  m.output("y");
  OnnxOptions o;
  o.constant_inputs = {"w"};
  const Graph g = load_onnx(m.save("const_input.onnx"), o);
  ASSERT_EQ(g.layers.size(), 1u);
  EXPECT_EQ(g.layers[0].op, OpKind::kFc);
  EXPECT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.default_batch, 2);
}
