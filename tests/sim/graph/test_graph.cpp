#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/graph/graph.h"

using namespace tessera;
using namespace tessera::graph;

namespace {

Graph parse(const std::string& text) { return parse_graph_yaml(YamlNode::load_string(text, "g.yaml")); }

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Graph, FcChainShapesWeightsAndMacs) {
  const Graph g = parse(R"(
name: mlp
batch: 16
inputs: [{name: x, shape: [100]}]
layers:
  - {name: fc1, op: fc, units: 200, activation: relu}
  - {name: fc2, op: fc, units: 10}
)");
  ASSERT_EQ(g.layers.size(), 2u);
  EXPECT_EQ(g.default_batch, 16);
  EXPECT_EQ(g.tensors[g.layers[0].output].shape, (Shape{200}));
  EXPECT_EQ(g.layers[0].activation, Activation::kRelu);
  EXPECT_EQ(g.layers[1].inputs[0], g.layers[0].output);  // default input: the previous layer
  EXPECT_EQ(g.total_weights(), 100 * 200 + 200 * 10);
  EXPECT_EQ(g.total_macs_per_sample(), 100 * 200 + 200 * 10);
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.outputs[0], g.layers[1].output);
}

TEST(Graph, ConvPaddingStrideAndImplicitIm2col) {
  const Graph g = parse(R"(
name: cnn
inputs: [{name: img, shape: [224, 224, 3]}]
layers:
  - {name: c1, op: conv2d, filters: 64, kernel: 7, stride: 2, padding: same}
  - {name: p1, op: maxpool, kernel: 3, stride: 2, padding: 1}
  - {name: c2, op: conv2d, filters: 32, kernel: [3, 1], padding: valid}
  - {name: gap, op: global_avgpool}
  - {name: fc, op: fc, units: 10}
)");
  const Layer& c1 = g.layers[0];
  EXPECT_EQ(g.tensors[c1.output].shape, (Shape{112, 112, 64}));  // ceil(224/2)
  EXPECT_EQ(c1.pad_top + c1.pad_bottom, 5);                      // (112-1)*2+7-224
  EXPECT_EQ(c1.gemm_m_per_sample, 112 * 112);
  EXPECT_EQ(c1.gemm_k, 7 * 7 * 3);
  EXPECT_EQ(c1.gemm_n, 64);
  EXPECT_EQ(g.tensors[g.layers[1].output].shape, (Shape{56, 56, 64}));  // (112+2-3)/2+1
  EXPECT_EQ(g.tensors[g.layers[2].output].shape, (Shape{54, 56, 32}));
  EXPECT_EQ(g.layers[2].gemm_k, 3 * 1 * 64);
  EXPECT_EQ(g.tensors[g.layers[3].output].shape, (Shape{32}));
  EXPECT_EQ(g.layers[4].gemm_k, 32);
}

TEST(Graph, ElementwiseConcatAndNamedInputs) {
  const Graph g = parse(R"(
name: cell
inputs: [{name: x, shape: [8]}, {name: h, shape: [4]}]
layers:
  - {name: xh, op: concat, inputs: [x, h]}
  - {name: gate, op: fc, units: 4, activation: sigmoid}
  - {name: cand, op: fc, input: xh, units: 4, activation: tanh}
  - {name: prod, op: mul, inputs: [gate, cand]}
  - {name: out, op: add, inputs: [prod, h]}
outputs: [out, gate]
)");
  EXPECT_EQ(g.tensors[g.layers[0].output].shape, (Shape{12}));
  EXPECT_EQ(g.layers[1].gemm_k, 12);
  EXPECT_EQ(g.layers[2].inputs[0], g.find_tensor("xh"));
  EXPECT_EQ(g.outputs.size(), 2u);
}

TEST(Graph, ShippedTpuAppsLoadWithPaperCounts) {
  struct App {
    const char* file;
    int64_t batch;
    int fc_or_conv;
  };
  const App apps[] = {{"mlp0", 200, 5}, {"mlp1", 168, 4}, {"lstm0", 64, 24},
                      {"lstm1", 96, 37}, {"cnn0", 8, 16},  {"cnn1", 32, 76}};
  for (const auto& app : apps) {
    const Graph g = load_graph_yaml(std::string(TESSERA_SOURCE_DIR) + "/workloads/tpu/" + app.file + ".yaml");
    EXPECT_EQ(g.default_batch, app.batch) << app.file;
    int matrix = 0;
    for (const auto& l : g.layers) matrix += is_matrix_op(l.op) ? 1 : 0;
    EXPECT_EQ(matrix, app.fc_or_conv) << app.file;
  }
}

TEST(GraphErrors, UnknownOpListsSupportedOnes) {
  const std::string e = error_of("name: g\ninputs: [{name: x, shape: [4]}]\nlayers:\n  - {name: s, op: softmaxx}\n");
  EXPECT_NE(e.find("g.yaml:4:"), std::string::npos) << e;
  EXPECT_NE(e.find("unsupported op 'softmaxx'"), std::string::npos) << e;
  EXPECT_NE(e.find("conv2d"), std::string::npos) << e;
}

// D4: the YAML op table covers every OpKind (it was built by iterating up to kExpand,
// so an op added after it could never be named in a YAML graph); the message lists
// exactly the op names, sorted.
TEST(GraphErrors, UnknownOpListsEveryOpKind) {
  const std::string e = error_of("name: g\ninputs: [{name: x, shape: [4]}]\nlayers:\n  - {name: s, op: bogus}\n");
  const std::string head = "supported: ";
  const size_t at = e.find(head);
  ASSERT_NE(at, std::string::npos) << e;
  std::vector<std::string> listed;
  for (size_t b = at + head.size(); b < e.size();) {
    const size_t comma = e.find(", ", b);
    listed.push_back(e.substr(b, comma == std::string::npos ? std::string::npos : comma - b));
    b = comma == std::string::npos ? e.size() : comma + 2;
  }
  std::vector<std::string> all;
  for (int i = 0; i < static_cast<int>(OpKind::kOpCount); ++i) all.emplace_back(op_name(static_cast<OpKind>(i)));
  std::sort(all.begin(), all.end());
  EXPECT_EQ(listed, all);
  EXPECT_EQ(all.size(), 86u);  // 68 + softsign (issue 32) + 17 element-wise ops of real exports
}

TEST(GraphErrors, UnknownKeyOnLayer) {
  const std::string e = error_of("name: g\ninputs: [{name: x, shape: [4]}]\nlayers:\n  - {name: f, op: fc, unitz: 3}\n");
  EXPECT_NE(e.find("layers[0].unitz: unknown key"), std::string::npos) << e;
}

TEST(GraphErrors, ShapeMismatchNamesBothTensors) {
  const std::string e = error_of(
      "name: g\ninputs: [{name: x, shape: [4]}, {name: y, shape: [5]}]\nlayers:\n  - {name: s, op: add, inputs: [x, y]}\n");
  EXPECT_NE(e.find("'x' is [4], 'y' is [5]"), std::string::npos) << e;
}

TEST(GraphErrors, FcOnImageNeedsFlatten) {
  const std::string e = error_of("name: g\ninputs: [{name: x, shape: [4, 4, 3]}]\nlayers:\n  - {name: f, op: fc, units: 3}\n");
  EXPECT_NE(e.find("add a flatten"), std::string::npos) << e;
}

TEST(GraphErrors, UnknownInputAndDuplicateName) {
  EXPECT_NE(error_of("name: g\ninputs: [{name: x, shape: [4]}]\nlayers:\n  - {name: f, op: fc, input: z, units: 3}\n")
                .find("unknown input 'z'"),
            std::string::npos);
  EXPECT_NE(error_of("name: g\ninputs: [{name: x, shape: [4]}]\nlayers:\n  - {name: x, op: relu}\n")
                .find("already used"),
            std::string::npos);
}

TEST(GraphErrors, WindowLargerThanInput) {
  const std::string e =
      error_of("name: g\ninputs: [{name: x, shape: [2, 2, 3]}]\nlayers:\n  - {name: c, op: conv2d, filters: 1, kernel: 3}\n");
  EXPECT_NE(e.find("does not fit"), std::string::npos) << e;
}
