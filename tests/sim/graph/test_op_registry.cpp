// The op registry (sim/graph/ops/): one OpDef per OpKind, names that round-trip, the
// YAML loader's message generated from it, and functional mode's coverage of vector ops.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/functional/functional.h"
#include "sim/graph/graph.h"
#include "sim/graph/ops/registry.h"

using namespace tessera;
using namespace tessera::graph;

namespace {

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  for (size_t b = 0; b < list.size();) {
    const size_t comma = list.find(", ", b);
    out.push_back(list.substr(b, comma == std::string::npos ? std::string::npos : comma - b));
    b = comma == std::string::npos ? list.size() : comma + 2;
  }
  return out;
}

// Vector ops functional mode has no fp32 reference for (the IR drops their attributes,
// or nobody wrote the kernel yet). A new vector op either gets a kernel or a line here.
// Their attributes (alpha, gamma, ...) are not carried by the IR, or their kernel is not written.
const std::set<OpKind> kNoFunctionalKernel = {OpKind::kLeakyRelu, OpKind::kHardSigmoid, OpKind::kHardSwish,
                                              OpKind::kBatchNorm, OpKind::kResize,      OpKind::kPad,
                                              OpKind::kElu,       OpKind::kSelu,        OpKind::kCelu,
                                              OpKind::kThresholdedRelu};

}  // namespace

TEST(OpRegistry, EveryOpKindHasExactlyOneOpDef) {
  const int count = static_cast<int>(OpKind::kOpCount);
  EXPECT_EQ(op_registry().rows().size(), static_cast<size_t>(count));
  std::set<std::string_view> names;
  for (int i = 0; i < count; ++i) {
    const auto kind = static_cast<OpKind>(i);
    const OpDef& d = op_def(kind);
    EXPECT_EQ(d.kind, kind) << i;
    EXPECT_FALSE(d.name.empty()) << i;
    EXPECT_NE(d.infer, nullptr) << d.name;
    EXPECT_TRUE(names.insert(d.name).second) << "two ops named " << d.name;
  }
  EXPECT_EQ(all_ops().size(), static_cast<size_t>(count));
  OpRegistry r;
  add_elementwise_ops(r);
  EXPECT_THROW(add_elementwise_ops(r), std::logic_error);  // a second row for the same op
}

TEST(OpRegistry, NamesRoundTrip) {
  for (const OpDef* d : all_ops()) {
    ASSERT_NE(find_op(d->name), nullptr) << d->name;
    EXPECT_EQ(find_op(d->name)->kind, d->kind);
    EXPECT_EQ(op_name(d->kind), d->name);
  }
  EXPECT_EQ(find_op("softmaxx"), nullptr);
  EXPECT_EQ(op_name(OpKind::kSoftmax), "softmax");
  EXPECT_EQ(op_name(OpKind::kConvTranspose2d), "conv_transpose2d");
}

TEST(OpRegistry, ClassesAndListingNames) {
  std::vector<std::string> matrix, alias;
  for (const OpDef* d : all_ops()) {
    if (d->cls == OpClass::kMatrix) matrix.emplace_back(d->name);
    if (d->cls == OpClass::kAlias) alias.emplace_back(d->name);
  }
  EXPECT_EQ(matrix, (std::vector<std::string>{"fc", "conv2d", "conv_transpose2d", "matmul", "lstm", "gru"}));
  EXPECT_EQ(alias, (std::vector<std::string>{"flatten", "reshape"}));
  EXPECT_EQ(op_def(OpKind::kConv2d).listing_name(), "grouped_conv");
  EXPECT_EQ(op_def(OpKind::kLstm).listing_name(), "lstm_cell");
  EXPECT_EQ(op_def(OpKind::kGru).listing_name(), "gru_cell");
  EXPECT_EQ(op_def(OpKind::kSoftmax).listing_name(), "softmax");
  EXPECT_TRUE(is_elementwise_op(OpKind::kAdd));
  EXPECT_FALSE(is_elementwise_op(OpKind::kSoftmax));
}

// The YAML loader's "supported:" list is exactly the registered names, sorted.
TEST(OpRegistry, YamlLoaderListsExactlyTheRegisteredOps) {
  std::string e;
  try {
    parse_graph_yaml(YamlNode::load_string("name: g\ninputs: [{name: x, shape: [4]}]\nlayers:\n  - {name: s, op: bogus}\n",
                                           "g.yaml"));
  } catch (const InputError& err) {
    e = err.what();
  }
  const size_t at = e.find("supported: ");
  ASSERT_NE(at, std::string::npos) << e;
  std::vector<std::string> all;
  for (const OpDef* d : all_ops()) all.emplace_back(d->name);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(split(e.substr(at + 11)), all);
  EXPECT_EQ(split(supported_ops_text()), all);
}

// Every registered op is writable in the YAML graph format (one layer of each, parsed and
// shape-checked here) and documented, with each of its keys, in docs/workloads.md's YAML
// section. A new op needs a line here and a row there.
TEST(OpRegistry, EveryOpIsWritableInYamlAndDocumented) {
  // x: an image [H, W, C]; s: a sequence [T, I]; v: a row to expand.
  const std::map<std::string, std::string> layer = {
      {"fc", "input: s, units: 4"}, {"conv2d", "filters: 4, kernel: 3, padding: same"},
      {"conv_transpose2d", "filters: 4, kernel: 2, stride: 2"}, {"matmul", "inputs: [s, st]"},
      {"lstm", "input: s, hidden: 4"}, {"gru", "input: s, hidden: 4"}, {"maxpool", "kernel: 2"}, {"avgpool", "kernel: 2"},
      {"global_avgpool", ""}, {"global_maxpool", ""}, {"where", "inputs: [x, x, x]"}, {"clip", "min: 0, max: 6"},
      {"cumsum", "axis: 0, exclusive: true"}, {"argmax", "axis: -1"}, {"argmin", "axis: -1, keepdims: false"},
      {"topk", "k: 2, indices: true"}, {"tile", "repeats: [1, 1, 2]"}, {"quantize", "to: uint8"},
      {"dynamic_quantize", ""}, {"dequantize", ""}, {"softmax", ""}, {"layer_norm", ""}, {"reduce_mean", "axes: [0, 1]"},
      {"reduce_sum", ""}, {"reduce_max", "axes: [2], keepdims: false"}, {"concat", "inputs: [x, x], axis: 0"},
      {"slice", "axis: 0, begin: 0, end: 2"}, {"reshape", "shape: [16, 8]"}, {"flatten", ""}, {"transpose", "perm: [2, 0, 1]"},
      {"expand", "input: v, shape: [4, 8]"}, {"pad", "pads: [1, 1, 0, 1, 1, 0], mode: edge"}, {"resize", "scale: [2, 2, 1]"}};
  // Every other op takes its inputs alone: one (`input: x`), or two of the same shape
  // (`inputs: [x, x]`), read off its OpDef's arity, so a new element-wise op needs no line here.
  std::string yaml =
      "name: every_op\ninputs:\n  - {name: x, shape: [4, 4, 8]}\n  - {name: s, shape: [4, 8]}\n"
      "  - {name: v, shape: [1, 8]}\nlayers:\n  - {name: st, op: transpose, input: s, perm: [1, 0]}\n";
  for (const OpDef* d : all_ops()) {
    const std::string name(d->name);
    std::string keys;
    if (auto it = layer.find(name); it != layer.end()) keys = it->second;
    else if (d->inputs.min == 2) keys = "inputs: [x, x]";
    else if (d->inputs.min != 1) ADD_FAILURE() << "op '" << name << "' has no YAML layer in this test";
    if (keys.find("input") == std::string::npos) keys = "input: x" + std::string(keys.empty() ? "" : ", ") + keys;
    yaml += "  - {name: l_" + name + ", op: " + name + ", " + keys + "}\n";
  }
  const Graph g = parse_graph_yaml(YamlNode::load_string(yaml, "every_op.yaml"));
  std::set<OpKind> kinds;
  for (const Layer& l : g.layers) kinds.insert(l.op);
  EXPECT_EQ(kinds.size(), all_ops().size());

  std::ifstream f(std::string(TESSERA_SOURCE_DIR) + "/docs/workloads.md");
  std::stringstream text;
  text << f.rdbuf();
  const std::string doc = text.str();
  const size_t begin = doc.find("\n## YAML graph format");
  ASSERT_NE(begin, std::string::npos);
  const std::string section = doc.substr(begin, doc.find("\n## ", begin + 1) - begin);
  for (const OpDef* d : all_ops()) {
    EXPECT_NE(section.find("`" + std::string(d->name) + "`"), std::string::npos) << d->name << " is not documented";
    for (const auto& key : d->yaml_keys) {
      EXPECT_NE(section.find("`" + std::string(key) + "`"), std::string::npos) << d->name << ": key " << key;
    }
  }
}

// Hand-derived vector costs (element operations per output element).
TEST(OpRegistry, VectorWorkPerOutput) {
  const Graph g = parse_graph_yaml(YamlNode::load_string(R"(
name: g
inputs: [{name: x, shape: [8, 8, 4]}]
layers:
  - {name: pool, op: avgpool, kernel: 3, stride: 1, padding: same}
  - {name: gap, op: global_avgpool}
  - {name: up, op: resize, input: x, size: [16, 16, 4], mode: linear}
  - {name: sm, op: softmax, input: x}
  - {name: ge, op: gelu, input: x}
  - {name: ad, op: add, input: x, constant: [4]}
)",
                                                         "g.yaml"));
  auto work = [&](const std::string& name) {
    for (const Layer& l : g.layers)
      if (l.name == name) {
        const OpDef& d = op_def(l.op);
        return d.work_per_output ? d.work_per_output(g, l) : int64_t{1};
      }
    return int64_t{-1};
  };
  EXPECT_EQ(work("pool"), 9);   // 3 x 3 window
  EXPECT_EQ(work("gap"), 64);   // 8 x 8 inputs per channel
  EXPECT_EQ(work("up"), 4);     // linear: 2 taps on each of the two resized axes
  EXPECT_EQ(work("sm"), 3);     // max, exp-sum, normalise
  EXPECT_EQ(work("ge"), 2);     // the function, then a multiply
  EXPECT_EQ(work("ad"), 1);
}

// Every vector op either has an fp32 function (functional mode computes it) or is
// listed in kNoFunctionalKernel (functional mode names it unsupported).
TEST(OpRegistry, EveryVectorOpHasAnFp32KernelOrIsListedUnsupported) {
  for (const OpDef* d : all_ops()) {
    if (d->cls != OpClass::kVector) continue;
    const bool kernel = d->unary || d->binary || d->fp32;
    const bool listed = kNoFunctionalKernel.count(d->kind) > 0;
    EXPECT_NE(kernel || functional::functional_supports(d->kind), listed) << d->name;
    EXPECT_EQ(functional::functional_supports(d->kind), !listed) << d->name;
    EXPECT_FALSE(d->unary && d->binary) << d->name;
  }
  EXPECT_FALSE(functional::functional_supports(OpKind::kConvTranspose2d));
  EXPECT_TRUE(functional::functional_supports(OpKind::kMatmul));
}

// Every op has an energy class (a row without one does not compile: the member has no
// default). Ops with vector-unit work have a priced class; kNoVectorWork is only for ops that
// never run on the vector unit (matrix ops without a vector form, aliases).
TEST(OpRegistry, EveryOpHasAnEnergyClassThatFitsItsWork) {
  for (const OpDef* d : all_ops()) {
    const bool vector_work = d->cls == OpClass::kVector || !d->vector_function.empty();
    EXPECT_EQ(d->energy_class == EnergyClass::kNoVectorWork, !vector_work)
        << d->name << ": energy class " << energy_class_name(d->energy_class);
    if (vector_work) {
      EXPECT_EQ(vector_function_energy_class(d->listing_name()), d->energy_class) << d->name;
    }
  }
  EXPECT_EQ(vector_function_energy_class("fc"), std::nullopt);  // no vector work: nothing to price
  EXPECT_EQ(vector_function_energy_class("bogus"), std::nullopt);
}

// The classes keep every op's energy as the name table before them priced it (Horowitz
// 45 nm: these multiply-add 3.2 pJ, these fp32 multiply-add 4.6 pJ, the rest add 0.1 pJ),
// except softsign, priced at the table's silent 0.1 pJ default until it had a class: now its
// divide's, div's fp32 multiply-add.
TEST(OpRegistry, EnergyClassesKeepThePricesOfTheNameTable) {
  const std::set<std::string_view> multiply_add = {
      "mul", "batch_norm", "avgpool", "global_avgpool", "reduce_mean", "leaky_relu", "hard_sigmoid", "hard_swish",
      "resize", "quantize", "dequantize", "dynamic_quantize"};
  const std::set<std::string_view> fp32 = {"exp",  "log", "sigmoid", "tanh", "gelu", "softmax", "softplus",  "erf",
                                           "sqrt", "pow", "div",     "mod",  "fmod", "layer_norm", "lstm_cell", "gru_cell",
                                           "softsign"};
  for (const OpDef* d : all_ops()) {
    if (d->energy_class == EnergyClass::kNoVectorWork) continue;
    // Ops added after the name table (appended after softsign) are priced by their rows alone.
    if (static_cast<int>(d->kind) > static_cast<int>(OpKind::kSoftsign)) continue;
    const std::string_view f = d->listing_name();
    const EnergyClass want = multiply_add.count(f)  ? EnergyClass::kMultiplyAdd32
                             : fp32.count(f)        ? EnergyClass::kFp32MultiplyAdd
                                                    : EnergyClass::kAdd32;
    EXPECT_EQ(d->energy_class, want) << d->name;
  }
  EXPECT_EQ(op_def(OpKind::kSoftsign).energy_class, EnergyClass::kFp32MultiplyAdd);
  EXPECT_EQ(op_def(OpKind::kConv2d).energy_class, EnergyClass::kAdd32);  // grouped_conv, as before
}

// Functional mode runs every op the way its row says: an integer path or the fp32 function.
TEST(OpRegistry, FunctionalKernelsComeFromTheRows) {
  EXPECT_EQ(op_def(OpKind::kFc).functional, FunctionalKernel::kMatrix);
  EXPECT_EQ(op_def(OpKind::kMatmul).functional, FunctionalKernel::kMatmul);
  EXPECT_EQ(op_def(OpKind::kGlobalMaxPool).functional, FunctionalKernel::kReduce);
  EXPECT_EQ(op_def(OpKind::kReshape).functional, FunctionalKernel::kCopy);
  EXPECT_EQ(op_def(OpKind::kExpand).functional, FunctionalKernel::kGather);
  EXPECT_EQ(op_def(OpKind::kSoftsign).functional, FunctionalKernel::kFp32);
  int integer_paths = 0;
  for (const OpDef* d : all_ops()) {
    if (d->functional == FunctionalKernel::kFp32) continue;
    ++integer_paths;
    EXPECT_TRUE(functional::functional_supports(d->kind)) << d->name;
  }
  EXPECT_EQ(integer_paths, 16);  // fc, conv2d, matmul, 2 pools, 2 global pools, 3 reduces, 2 aliases, 3 gathers, concat
}
