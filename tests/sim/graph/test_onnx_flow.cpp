// Real exports' control flow and state inputs (issue 15): If folded from shapes and from
// inputs bound by value (--input-value) and inlined (nested, outer-scope reads, renamed
// outputs), Loop and Scan unrolled with their bound, a data-dependent If naming the input
// that decides it; each input's batch axis inferred from its use (a [layers, batch, hidden]
// state through Gather into LSTM/GRU) and overridden (--batch-axis); a reverse Slice
// (PyTorch's flip) through index 0; every blocker in one message.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "sim/common/error.h"
#include "sim/config/arch_config.h"
#include "sim/functional/functional.h"
#include "sim/graph/onnx_importer.h"
#include "tests/support/onnx_model.h"

using namespace tessera;
using namespace tessera::graph;
using namespace tessera::test_support;

namespace {

// A subgraph (If branch, Loop or Scan body) being written into node `n`'s attribute.
struct Sub {
  onnx::GraphProto* g;
  Sub(onnx::NodeProto* n, const std::string& attr_name) {
    auto* a = n->add_attribute();
    a->set_name(attr_name);
    a->set_type(onnx::AttributeProto_AttributeType_GRAPH);
    g = a->mutable_g();
    g->set_name(attr_name);
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
  void input(const std::string& name, int elem = onnx::TensorProto_DataType_FLOAT) {
    auto* v = g->add_input();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
  }
  void output(const std::string& name) {
    auto* v = g->add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto_DataType_FLOAT);
  }
  void ints(const std::string& name, std::vector<int64_t> values, bool scalar = false) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto_DataType_INT64);
    if (!scalar) t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
  }
};

std::vector<std::string> layer_ops(const Graph& g) {
  std::vector<std::string> out;
  for (const auto& l : g.layers) out.push_back(std::string(op_name(l.op)) + ":" + l.name);
  return out;
}

const Tensor& output_tensor(const Graph& g, size_t k = 0) { return g.tensors[static_cast<size_t>(g.outputs.at(k))]; }

// The fp32 reference of the first output for input x.
std::vector<float> reference_of(const Graph& g, const std::vector<float>& x) {
  functional::FunctionalOptions o;
  o.calibration_batches = 0;
  o.inputs["x"] = x;
  const ArchConfig arch = load_arch_config(std::string(TESSERA_SOURCE_DIR) + "/configs/tpu-v1.yaml");
  return functional::run_functional(g, arch, o).outputs.at(0).reference;
}

// PyTorch's squeeze(dim=1): If(Shape(x)[1] == 1, Squeeze(x, 1), Identity(x)), then a MatMul.
Model squeeze_model(int64_t dim1) {
  Model m;
  m.input("x", {std::string("N"), dim1, int64_t{8}});
  m.node("Shape", {"x"}, {"shape"}, "shape");
  m.ints("one_idx", {1}, true);
  m.node("Gather", {"shape", "one_idx"}, {"d1"}, "gather");
  m.ints("one", {1}, true);
  m.node("Equal", {"d1", "one"}, {"is_one"}, "equal");
  auto* n = m.node("If", {"is_one"}, {"squeezed"}, "if_squeeze");
  Sub then_b(n, "then_branch");
  then_b.ints("axes", {1});
  then_b.node("Squeeze", {"x", "axes"}, {"sq"}, "squeeze");  // reads the outer x
  then_b.output("sq");
  Sub else_b(n, "else_branch");
  else_b.node("Identity", {"x"}, {"id"}, "identity");
  else_b.output("id");
  m.weight("w", {8, 4});
  m.node("MatMul", {"squeezed", "w"}, {"y"}, "proj");
  m.output("y");
  return m;
}

}  // namespace

// ---------------------------------------------------------------- If

TEST(OnnxIf, ShapeDerivedConditionFoldsAndTheTakenBranchIsInlined) {
  OnnxImportInfo info;
  Graph g = load_onnx(squeeze_model(1).save("if_squeeze.onnx"), {}, &info);
  EXPECT_EQ(info.absorbed.at("if_squeeze"), "inlined (then_branch)");
  EXPECT_EQ(info.value_shapes.at("squeezed"), (std::vector<int64_t>{1, 8}));  // the branch output, renamed
  // The Squeeze is a reshape of [1, 8] to [8] (no data moves), as outside an If.
  EXPECT_EQ(layer_ops(g), (std::vector<std::string>{"reshape:if_squeeze/then_branch/squeeze", "fc:proj"}));
  EXPECT_EQ(output_tensor(g).shape, (Shape{4}));

  info = {};
  g = load_onnx(squeeze_model(3).save("if_identity.onnx"), {}, &info);
  EXPECT_EQ(info.absorbed.at("if_squeeze"), "inlined (else_branch)");
  EXPECT_EQ(info.value_shapes.at("squeezed"), (std::vector<int64_t>{1, 3, 8}));
  EXPECT_EQ(output_tensor(g).shape, (Shape{3, 4}));
}

namespace {
// A sample-rate switch: If(sr == 16000, Relu(x), Sigmoid(x)); sr is a scalar int64 input.
Model sample_rate_model() {
  Model m;
  m.input("x", {int64_t{1}, int64_t{16}});
  m.input("sr", {}, onnx::TensorProto_DataType_INT64);
  m.ints("k16", {16000}, true);
  m.node("Equal", {"sr", "k16"}, {"is16k"}, "equal");
  auto* n = m.node("If", {"is16k"}, {"y"}, "if_sr");
  Sub then_b(n, "then_branch");
  then_b.node("Relu", {"x"}, {"r"}, "relu");
  then_b.output("r");
  Sub else_b(n, "else_branch");
  else_b.node("Sigmoid", {"x"}, {"s"}, "sigmoid");
  else_b.output("s");
  m.output("y");
  return m;
}
}  // namespace

TEST(OnnxIf, ConditionOnAnInputFoldsOnceTheInputIsBoundByValue) {
  const auto path = sample_rate_model().save("if_sr.onnx");
  const std::string e = error_of(path);
  EXPECT_NE(e.find("1 node(s) cannot be imported: 'if_sr' (If: its condition 'is16k' is not known at import time: it "
                   "depends on the value of input 'sr' (bind it with --input-value sr=V))"),
            std::string::npos)
      << e;

  OnnxOptions o;
  o.input_values = {{"sr", {16000}}};
  OnnxImportInfo info;
  Graph g = load_onnx(path, o, &info);
  ASSERT_EQ(g.layers.size(), 1u);
  EXPECT_EQ(g.layers[0].op, OpKind::kRelu);
  EXPECT_EQ(g.layers[0].name, "if_sr/then_branch/relu");
  EXPECT_EQ(g.inputs.size(), 1u) << "sr is a constant now, not an accelerator input";
  EXPECT_EQ(info.batch_axes.at("sr"), -1);
  o.input_values = {{"sr", {8000}}};
  g = load_onnx(path, o);
  ASSERT_EQ(g.layers.size(), 1u);
  EXPECT_EQ(g.layers[0].op, OpKind::kSigmoid);

  // Bad bindings name the flag.
  o.input_values = {{"sr", {16000.5}}};
  EXPECT_NE(error_of(path, o).find("--input-value sr: input 'sr' holds integers (INT64), 16000.5 is not one"),
            std::string::npos)
      << error_of(path, o);
  o.input_values = {{"sr", {1, 2}}};
  EXPECT_NE(error_of(path, o).find("--input-value sr: input 'sr' [] has 1 element(s), 2 value(s) given"), std::string::npos)
      << error_of(path, o);
  o.input_values = {{"rate", {1}}};
  EXPECT_NE(error_of(path, o).find("--input-value names 'rate', which is not a graph input (sr, x)"), std::string::npos)
      << error_of(path, o);
}

TEST(OnnxIf, ParseInputValueAndBatchAxis) {
  EXPECT_EQ(parse_input_value("sr=16000"), (std::pair<std::string, std::vector<double>>{"sr", {16000}}));
  EXPECT_EQ(parse_input_value("w=0.5,-1e3,true"), (std::pair<std::string, std::vector<double>>{"w", {0.5, -1000, 1}}));
  EXPECT_EQ(parse_batch_axis("state=1"), (std::pair<std::string, int64_t>{"state", 1}));
  EXPECT_EQ(parse_batch_axis("state=-2"), (std::pair<std::string, int64_t>{"state", -2}));
  auto err = [](auto f) {
    try {
      f();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(err([] { parse_input_value("sr"); }), "--input-value 'sr': expected NAME=VALUE or NAME=v0,v1,... (e.g. sr=16000)");
  EXPECT_EQ(err([] { parse_input_value("sr=16k"); }), "--input-value 'sr=16k': value '16k' is not a number");
  EXPECT_EQ(err([] { parse_input_value("sr=1,"); }), "--input-value 'sr=1,': value '' is not a number");
  EXPECT_EQ(err([] { parse_input_value("sr=nan"); }), "--input-value 'sr=nan': value 'nan' is not a finite number");
  EXPECT_EQ(err([] { parse_batch_axis("state"); }), "--batch-axis 'state': expected NAME=AXIS (e.g. state=1)");
  EXPECT_EQ(err([] { parse_batch_axis("state=one"); }), "--batch-axis 'state=one': axis 'one' is not an integer");
  EXPECT_NE(err([] { parse_batch_axis("state=99"); }).find("axis 99 is out of range"), std::string::npos);
}

TEST(OnnxIf, DataDependentConditionNamesTheNodeAndTheInput) {
  Model m;
  m.input("x", {int64_t{1}, int64_t{4}});
  auto* r = m.node("ReduceMax", {"x"}, {"mx"}, "max");
  attr(r, "axes", std::vector<int64_t>{1});
  attr(r, "keepdims", int64_t{0});
  auto* c = m.node("Cast", {"mx"}, {"positive"}, "cast");
  attr(c, "to", int64_t{onnx::TensorProto_DataType_BOOL});
  auto* n = m.node("If", {"positive"}, {"y"}, "gate");
  Sub then_b(n, "then_branch");
  then_b.node("Relu", {"x"}, {"a"}, "relu");
  then_b.output("a");
  Sub else_b(n, "else_branch");
  else_b.node("Tanh", {"x"}, {"b"}, "tanh");
  else_b.output("b");
  m.output("y");
  const std::string e = error_of(m.save("if_data.onnx"));
  EXPECT_NE(e.find("'gate' (If: its condition 'positive' is not known at import time: it depends on the data of input 'x' "
                   "(known only at run time))"),
            std::string::npos)
      << e;
}

TEST(OnnxIf, NestedIfsReadTheEnclosingBranchAndTheGraph) {
  Model m;
  m.input("x", {int64_t{1}, int64_t{4}});
  m.input("mode", {}, onnx::TensorProto_DataType_INT64);
  m.ints("one", {1}, true);
  m.node("Shape", {"x"}, {"shape"}, "shape");
  m.node("Size", {"shape"}, {"rank"}, "rank");
  m.ints("two", {2}, true);
  m.node("Equal", {"rank", "two"}, {"is2d"}, "is2d");
  auto* outer = m.node("If", {"is2d"}, {"y", "z"}, "outer");
  Sub then_b(outer, "then_branch");
  then_b.node("Relu", {"x"}, {"a"}, "relu");                  // defined in the outer branch
  then_b.node("Equal", {"mode", "one"}, {"fast"}, "is_fast");  // a graph input read two levels down
  auto* inner = then_b.node("If", {"fast"}, {"b"}, "inner");
  Sub inner_then(inner, "then_branch");
  inner_then.node("Sigmoid", {"a"}, {"c"}, "sigmoid");  // reads the enclosing branch's value
  inner_then.output("c");
  Sub inner_else(inner, "else_branch");
  inner_else.node("Add", {"a", "x"}, {"d"}, "add");  // and the graph's
  inner_else.output("d");
  then_b.output("b");
  then_b.output("x");  // an outer value as a branch output: copied into z
  Sub else_b(outer, "else_branch");
  else_b.node("Tanh", {"x"}, {"t"}, "tanh");
  else_b.output("t");
  else_b.output("t");
  m.output("y");
  m.output("z");
  const auto path = m.save("if_nested.onnx");

  OnnxOptions o;
  o.input_values = {{"mode", {0}}};
  OnnxImportInfo info;
  Graph g = load_onnx(path, o, &info);
  EXPECT_EQ(info.absorbed.at("outer"), "inlined (then_branch)");
  EXPECT_EQ(info.absorbed.at("outer/then_branch/inner"), "inlined (else_branch)");
  EXPECT_EQ(layer_ops(g), (std::vector<std::string>{"relu:outer/then_branch/relu", "add:outer/then_branch/inner/else_branch/add"}));
  EXPECT_EQ(info.value_shapes.at("y"), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(info.value_shapes.at("z"), (std::vector<int64_t>{1, 4}));

  o.input_values = {{"mode", {1}}};
  g = load_onnx(path, o);
  EXPECT_EQ(layer_ops(g), (std::vector<std::string>{"relu:outer/then_branch/relu", "sigmoid:outer/then_branch/inner/then_branch/sigmoid"}));
  // Unbound, the inner If is the blocker (the outer one folds from the shape).
  const std::string e = error_of(path);
  EXPECT_NE(e.find("'outer/then_branch/inner' (If: its condition 'outer/then_branch/fast' is not known at import time: "
                   "it depends on the value of input 'mode'"),
            std::string::npos)
      << e;
}

// ---------------------------------------------------------------- Loop and Scan

namespace {
// h = x; for i in range(M): h = h + 1 (scan output: relu(h) per iteration).
Model loop_model(int64_t trips, bool with_cond) {
  Model m;
  m.input("x", {int64_t{1}, int64_t{4}});
  m.ints("M", {trips}, true);
  std::string cond;
  if (with_cond) {
    auto* t = m.g->add_initializer();
    t->set_name("true");
    t->set_data_type(onnx::TensorProto_DataType_BOOL);
    t->add_int32_data(1);
    cond = "true";
  }
  m.floats("one", {1.0f});
  auto* n = m.node("Loop", {"M", cond, "x"}, {"h", "relus"}, "loop");
  Sub body(n, "body");
  body.input("i", onnx::TensorProto_DataType_INT64);
  body.input("cond_in", onnx::TensorProto_DataType_BOOL);
  body.input("h_in");
  body.node("Identity", {"cond_in"}, {"cond_out"}, "keep_going");
  body.node("Add", {"h_in", "one"}, {"h_out"}, "add");  // `one` from the graph
  body.node("Relu", {"h_out"}, {"r"}, "relu");
  body.output("cond_out");
  body.output("h_out");
  body.output("r");
  m.output("h");
  m.output("relus");
  return m;
}
}  // namespace

TEST(OnnxLoop, KnownTripCountIsUnrolled) {
  for (bool with_cond : {false, true}) {
    OnnxImportInfo info;
    const Graph g = load_onnx(loop_model(3, with_cond).save("loop.onnx"), {}, &info);
    EXPECT_EQ(info.absorbed.at("loop"), "unrolled (3 iterations)");
    std::vector<std::string> ops = layer_ops(g);
    EXPECT_EQ(std::count_if(ops.begin(), ops.end(), [](const std::string& s) { return s.rfind("add:", 0) == 0; }), 3)
        << testing::PrintToString(ops);
    EXPECT_NE(std::find(ops.begin(), ops.end(), "add:loop/2/add"), ops.end()) << testing::PrintToString(ops);
    EXPECT_EQ(info.value_shapes.at("h"), (std::vector<int64_t>{1, 4}));
    EXPECT_EQ(info.value_shapes.at("relus"), (std::vector<int64_t>{3, 1, 4}));  // stacked per iteration
    ASSERT_EQ(g.outputs.size(), 2u);
    EXPECT_EQ(output_tensor(g, 1).shape, (Shape{3, 4}));
    // h = x + 3, computed: the unrolled adds chain.
    const std::vector<float> y = reference_of(g, {1, 2, -3, 0.5f});
    EXPECT_EQ(y, (std::vector<float>{4, 5, 0, 3.5f}));
  }
}

// A while loop as exported: M = INT64_MAX, the body's condition `i < 2` folds each iteration.
TEST(OnnxLoop, FoldedConditionStopsAWhileLoop) {
  Model m = loop_model(std::numeric_limits<int64_t>::max(), true);
  auto* body = m.g->mutable_node(0)->mutable_attribute(0)->mutable_g();
  body->mutable_node(0)->set_op_type("Less");  // cond_out = i < 2, instead of cond_in passed through
  body->mutable_node(0)->set_input(0, "i");
  body->mutable_node(0)->add_input("two");
  m.ints("two", {2}, true);
  OnnxImportInfo info;
  const Graph g = load_onnx(m.save("loop_while.onnx"), {}, &info);
  EXPECT_EQ(info.absorbed.at("loop"), "unrolled (3 iterations)");
  EXPECT_EQ(info.value_shapes.at("relus"), (std::vector<int64_t>{3, 1, 4}));
  EXPECT_EQ(reference_of(g, {1, 2, -3, 0.5f}), (std::vector<float>{4, 5, 0, 3.5f}));
}

TEST(OnnxLoop, UnrollingIsBoundedAndTheCountIsNamed) {
  const std::string e = error_of(loop_model(1000000, false).save("loop_long.onnx"));
  EXPECT_NE(e.find("'loop' (Loop: unrolling its 1000000 iterations of 3 node(s) each takes 3000000 nodes (at most 65536 "
                   "nodes are inlined per model))"),
            std::string::npos)
      << e;
}

TEST(OnnxLoop, TripCountFromAnInputBoundByValue) {
  Model m = loop_model(0, false);
  // M from a scalar input instead of the initializer.
  for (auto& t : *m.g->mutable_initializer()) {
    if (t.name() == "M") t.set_name("unused_M");
  }
  m.input("M", {}, onnx::TensorProto_DataType_INT64);
  const auto path = m.save("loop_input.onnx");
  const std::string e = error_of(path);
  EXPECT_NE(e.find("'loop' (Loop: its trip count 'M' is not known at import time: it depends on the value of input 'M' "
                   "(bind it with --input-value M=V))"),
            std::string::npos)
      << e;
  OnnxOptions o;
  o.input_values = {{"M", {2}}};
  OnnxImportInfo info;
  load_onnx(path, o, &info);
  EXPECT_EQ(info.absorbed.at("loop"), "unrolled (2 iterations)");
}

TEST(OnnxScan, ScanIsUnrolledAlongItsAxis) {
  // A running sum over the 3 steps of x [N, 3, 4] (scan axis 1), each step's sum stacked.
  Model m(16);
  m.input("x", {int64_t{1}, int64_t{3}, int64_t{4}});
  m.input("s0", {int64_t{1}, int64_t{4}});
  auto* n = m.node("Scan", {"s0", "x"}, {"s", "sums"}, "scan");
  attr(n, "num_scan_inputs", int64_t{1});
  attr(n, "scan_input_axes", std::vector<int64_t>{1});
  attr(n, "scan_output_axes", std::vector<int64_t>{1});
  Sub body(n, "body");
  body.input("acc");
  body.input("step");
  body.node("Add", {"acc", "step"}, {"acc_out"}, "add");
  body.node("Identity", {"acc_out"}, {"out"}, "copy");
  body.output("acc_out");
  body.output("out");
  m.output("s");
  m.output("sums");
  OnnxImportInfo info;
  const Graph g = load_onnx(m.save("scan.onnx"), {}, &info);
  EXPECT_EQ(info.absorbed.at("scan"), "unrolled (3 iterations)");
  EXPECT_EQ(info.value_shapes.at("s"), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(info.value_shapes.at("sums"), (std::vector<int64_t>{1, 3, 4}));
  std::vector<std::string> ops = layer_ops(g);
  EXPECT_EQ(std::count_if(ops.begin(), ops.end(), [](const std::string& s) { return s.rfind("add:", 0) == 0; }), 3)
      << testing::PrintToString(ops);
}

// ---------------------------------------------------------------- batch axes

namespace {
// x [T, batch, 8] and a recurrent state [2 layers, batch, 16]; layer 0's state through
// Gather (+ Unsqueeze) into an LSTM or GRU, as PyTorch exports a multi-layer RNN's h0.
Model state_model(bool lstm, Dim batch) {
  Model m;
  m.input("x", {int64_t{5}, batch, int64_t{8}});
  m.input("h0", {int64_t{2}, batch, int64_t{16}});
  const int64_t gates = lstm ? 4 : 3;
  m.weight("W", {1, gates * 16, 8});
  m.weight("R", {1, gates * 16, 16});
  m.ints("layer0", {0}, true);
  m.node("Gather", {"h0", "layer0"}, {"h0_l0"}, "pick_layer");
  m.ints("axis0", {0});
  m.node("Unsqueeze", {"h0_l0", "axis0"}, {"h0_l0_3d"}, "unsqueeze");
  auto* n = m.node(lstm ? "LSTM" : "GRU", {"x", "W", "R", "", "", "h0_l0_3d"}, {"Y", "Y_h"}, "rnn");
  attr(n, "hidden_size", int64_t{16});
  m.output("Y");
  m.output("Y_h");
  return m;
}
}  // namespace

TEST(OnnxBatchAxis, RecurrentStateThroughGatherHasItsBatchOnAxisOne) {
  for (bool lstm : {true, false}) {
    SCOPED_TRACE(lstm ? "LSTM" : "GRU");
    // Fixed dims: the state's first axis (2 layers) is not the batch (1).
    OnnxImportInfo info;
    Graph g = load_onnx(state_model(lstm, int64_t{1}).save("state_fixed.onnx"), {}, &info);
    EXPECT_EQ(info.batch_axes.at("x"), 1);
    EXPECT_EQ(info.batch_axes.at("h0"), 1);
    EXPECT_EQ(g.default_batch, 1);
    ASSERT_EQ(g.inputs.size(), 2u);
    EXPECT_EQ(g.tensors[static_cast<size_t>(g.inputs[1])].shape, (Shape{2, 16}));  // per sample: the layers stay
    // A dynamic batch bound to 3: both inputs agree on it.
    OnnxOptions o;
    o.input_shapes = {{"batch", {3}}};
    info = {};
    g = load_onnx(state_model(lstm, std::string("batch")).save("state_dynamic.onnx"), o, &info);
    EXPECT_EQ(info.batch_axes.at("h0"), 1);
    EXPECT_EQ(g.default_batch, 3);
    EXPECT_EQ(info.value_shapes.at("h0_l0"), (std::vector<int64_t>{3, 16}));
    EXPECT_EQ(info.value_shapes.at("Y_h"), (std::vector<int64_t>{1, 3, 16}));
  }
}

// As Spox exports torch's LSTM: the state's layer is picked by Gather, then an If adds a
// batch axis for unbatched inputs (then_branch: Unsqueeze) or passes it on (else_branch),
// then Unsqueeze(0) makes [1, batch, hidden] for the LSTM. Both branches are followed; only
// the one that gives the LSTM a rank-3 state says where the batch is.
TEST(OnnxBatchAxis, StateThroughTheBranchesOfAnIf) {
  Model m = state_model(true, int64_t{1});
  m.g->mutable_node(1)->set_input(0, "h0_l0_maybe");  // the Unsqueeze now reads the If's result
  m.node("Shape", {"x"}, {"xs"}, "xs");
  m.node("Size", {"xs"}, {"xr"}, "xr");
  m.ints("two", {2}, true);
  m.node("Equal", {"xr", "two"}, {"unbatched"}, "unbatched");
  auto* n = m.node("If", {"unbatched"}, {"h0_l0_maybe"}, "batch_it");
  Sub then_b(n, "then_branch");
  then_b.ints("zero", {0});
  then_b.node("Unsqueeze", {"h0_l0", "zero"}, {"u"}, "add_batch");
  then_b.output("u");
  Sub else_b(n, "else_branch");
  else_b.node("Identity", {"h0_l0"}, {"i"}, "keep");
  else_b.output("i");
  OnnxImportInfo info;
  const Graph g = load_onnx(m.save("state_if.onnx"), {}, &info);
  EXPECT_EQ(info.batch_axes.at("h0"), 1);
  EXPECT_EQ(info.absorbed.at("batch_it"), "inlined (else_branch)");
  EXPECT_EQ(g.default_batch, 1);
}

namespace {
// A state [4, 1, 16] that reaches no op saying where its batch is (transposed, then Relu).
Model unanchored_state(Dim state_batch, Dim x_batch) {
  Model m;
  m.input("x", {x_batch, int64_t{8}});
  m.input("state", {int64_t{4}, state_batch, int64_t{16}});
  auto* t = m.node("Transpose", {"state"}, {"st"}, "transpose");
  attr(t, "perm", std::vector<int64_t>{1, 0, 2});
  m.node("Relu", {"st"}, {"y"}, "relu");
  m.node("Relu", {"x"}, {"z"}, "relu_x");
  m.output("y");
  m.output("z");
  return m;
}
}  // namespace

TEST(OnnxBatchAxis, OverrideAndNamedDimension) {
  const auto path = unanchored_state(int64_t{2}, int64_t{2}).save("state_unanchored.onnx");
  // The default (axis 0: 4) contradicts x's batch of 2: an error that names the way out.
  std::string e = error_of(path);
  EXPECT_NE(e.find("graph inputs disagree on the batch: 'x' has 2, 'state' has 4 on axis 0 (each input's batch axis is "
                   "inferred from its use; set it with --batch-axis NAME=AXIS)"),
            std::string::npos)
      << e;
  OnnxOptions o;
  o.batch_axes = {{"state", 1}};
  OnnxImportInfo info;
  Graph g = load_onnx(path, o, &info);
  EXPECT_EQ(info.batch_axes.at("state"), 1);
  EXPECT_EQ(g.default_batch, 2);
  o.batch_axes = {{"state", -2}};  // counted from the back
  info = {};
  load_onnx(path, o, &info);
  EXPECT_EQ(info.batch_axes.at("state"), 1);
  o.batch_axes = {{"state", 3}};
  e = error_of(path, o);
  EXPECT_NE(e.find("--batch-axis state=3: input 'state' has rank 3 (allowed axes: -3 to 2)"), std::string::npos) << e;
  o.batch_axes = {{"h", 1}};
  e = error_of(path, o);
  EXPECT_NE(e.find("--batch-axis names 'h', which is not a graph input (state, x)"), std::string::npos) << e;

  // A dimension named like x's batch marks the state's batch axis.
  info = {};
  g = load_onnx(unanchored_state(std::string("N"), std::string("N")).save("state_named.onnx"), {}, &info);
  EXPECT_EQ(info.batch_axes.at("state"), 1);
  EXPECT_EQ(info.batch_axes.at("x"), 0);
}

// ---------------------------------------------------------------- reverse slice

namespace {
Model flip_model(int64_t end) {
  Model m;
  m.input("x", {int64_t{1}, int64_t{4}});
  m.ints("starts", {-1});
  m.ints("ends", {end});
  m.ints("axes", {1});
  m.ints("steps", {-1});
  m.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"}, "flip");
  m.output("y");
  return m;
}
}  // namespace

TEST(OnnxSlice, ReverseSliceThroughIndexZeroIsTheWholeAxis) {
  for (int64_t end : {std::numeric_limits<int64_t>::min(), int64_t{-std::numeric_limits<int32_t>::max()}, int64_t{-5}}) {
    SCOPED_TRACE(end);
    const Graph g = load_onnx(flip_model(end).save("flip.onnx"));
    ASSERT_EQ(g.layers.size(), 1u);
    EXPECT_EQ(output_tensor(g).shape, (Shape{4}));
    EXPECT_EQ(reference_of(g, {1, 2, -3, 0.5f}), (std::vector<float>{0.5f, -3, 2, 1}));
  }
  // A Gather with descending indices is the same reverse slice.
  Model m;
  m.input("x", {int64_t{1}, int64_t{4}});
  m.ints("idx", {3, 2, 1, 0});
  auto* gather = m.node("Gather", {"x", "idx"}, {"y"}, "reverse");
  attr(gather, "axis", int64_t{1});
  m.output("y");
  const Graph g = load_onnx(m.save("flip_gather.onnx"));
  EXPECT_EQ(reference_of(g, {1, 2, -3, 0.5f}), (std::vector<float>{0.5f, -3, 2, 1}));
}

TEST(OnnxSlice, ReverseSliceOfConstantsFolds) {
  Model m;
  m.input("x", {int64_t{1}, int64_t{4}});
  m.floats("c", {1, 2, 3, 4});
  m.ints("starts", {-1});
  m.ints("ends", {std::numeric_limits<int64_t>::min()});
  m.ints("axes", {0});
  m.ints("steps", {-1});
  m.node("Slice", {"c", "starts", "ends", "axes", "steps"}, {"c_rev"}, "flip_c");
  m.node("Add", {"x", "c_rev"}, {"s"}, "add");
  // An integer shape reversed: [3, 2] -> [2, 3] as a Reshape target.
  m.ints("dims", {3, 2, 1});
  m.ints("istarts", {-2});
  m.ints("iends", {-std::numeric_limits<int32_t>::max()});
  m.node("Slice", {"dims", "istarts", "iends", "axes", "steps"}, {"dims_rev"}, "flip_dims");  // [2, 3]
  auto* concat = m.node("Concat", {"batch1", "dims_rev"}, {"target"}, "target");
  attr(concat, "axis", int64_t{0});
  m.ints("batch1", {1});
  m.input("v", {int64_t{1}, int64_t{6}});
  m.node("Reshape", {"v", "target"}, {"r"}, "reshape");
  m.output("s");
  m.output("r");
  OnnxImportInfo info;
  const Graph g = load_onnx(m.save("flip_const.onnx"), {}, &info);
  EXPECT_EQ(info.absorbed.at("flip_c"), "folded");
  EXPECT_EQ(info.value_shapes.at("c_rev"), (std::vector<int64_t>{4}));
  EXPECT_EQ(info.value_shapes.at("target"), (std::vector<int64_t>{3}));
  EXPECT_EQ(info.value_shapes.at("r"), (std::vector<int64_t>{1, 2, 3}));
  const auto add = std::find_if(g.layers.begin(), g.layers.end(), [](const Layer& l) { return l.name == "add"; });
  ASSERT_NE(add, g.layers.end());
  EXPECT_EQ(add->const_values, (std::vector<float>{4, 3, 2, 1}));
  EXPECT_EQ(reference_of(g, {1, 2, -3, 0.5f}), (std::vector<float>{5, 5, -1, 1.5f}));
}

// ---------------------------------------------------------------- all blockers at once

TEST(OnnxBlockers, SeveralBlockersInOneMessageGroupedByOp) {
  Model m;
  m.input("x", {int64_t{1}, int64_t{4}});
  for (int i = 0; i < 5; ++i) m.node("Det", {"x"}, {"d" + std::to_string(i)}, "det" + std::to_string(i));
  m.node("Mystery", {"x"}, {"q"}, "custom")->set_domain("ai.example");
  m.input("flag", {}, onnx::TensorProto_DataType_BOOL);
  auto* n = m.node("If", {"flag"}, {"y"}, "branch");
  Sub then_b(n, "then_branch");
  then_b.node("Relu", {"x"}, {"a"}, "relu");
  then_b.output("a");
  Sub else_b(n, "else_branch");
  else_b.node("Tanh", {"x"}, {"b"}, "tanh");
  else_b.output("b");
  for (const char* o : {"d0", "d1", "d2", "d3", "d4", "q", "y"}) m.output(o);
  const std::string e = error_of(m.save("blockers.onnx"));
  EXPECT_NE(e.find("blockers.onnx: 7 node(s) cannot be imported: 'det0', 'det1', 'det2' and 2 more (5 nodes: Det); "
                   "'custom' (Mystery: op of domain 'ai.example'); 'branch' (If: its condition 'flag' is not known at "
                   "import time: it depends on the value of input 'flag' (bind it with --input-value flag=V)). Supported ops: "),
            std::string::npos)
      << e;
}

TEST(OnnxBlockers, UnboundDimensionsAndUnsupportedOpsTogether) {
  Model m;
  m.input("x", {int64_t{1}, std::string("seq"), int64_t{4}});
  m.node("Det", {"x"}, {"d"}, "det");
  m.node("Det", {"d"}, {"d2"}, "det_again");
  m.node("Relu", {"x"}, {"r"}, "relu");
  m.output("d2");
  m.output("r");
  const std::string e = error_of(m.save("unbound_and_det.onnx"));
  EXPECT_NE(e.find("unbound_and_det.onnx: dynamic dimension(s) left unbound: 'seq' ('x' dim 1). Bind them with "
                   "--input-shape"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find(". Also, 2 node(s) cannot be imported: 'det', 'det_again' (2 nodes: Det). Supported ops: "),
            std::string::npos)
      << e;
}
