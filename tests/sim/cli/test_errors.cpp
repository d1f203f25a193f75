// Every class of bad input through the real `tessera` executable (docs/errors.md has one
// row per test here): exit code 2, the key phrase of the message the user sees, and no
// partial output left behind (outputs are written to a temporary file and renamed).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <variant>
#include <vector>

#include "tests/support/run_cli.h"

namespace fs = std::filesystem;
using tessera_test::CliResult;
using tessera_test::run_shell;
using tessera_test::run_tessera;
using tessera_test::slurp;

namespace {

const fs::path kSrc = TESSERA_SOURCE_DIR;

// A fresh directory per test: inputs go in, outputs must not appear.
fs::path scratch(const std::string& name) {
  const fs::path dir = fs::path(TESSERA_BINARY_DIR) / "test-out" / "errors" / name;
  std::error_code ec;
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::add, ec);  // a previous run's chmod
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

fs::path write(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

// The shipped TPU v1 config with `from` replaced by `to` (once).
std::string tpu_with(const std::string& from, const std::string& to) {
  std::string cfg = slurp(kSrc / "configs/tpu-v1.yaml");
  const auto at = cfg.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) cfg.replace(at, from.size(), to);
  return cfg;
}

// Nothing but the inputs the test wrote: no report, no listing, no leftover temporary file.
void expect_no_output(const fs::path& dir, const std::vector<std::string>& inputs = {}) {
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    const std::string name = e.path().filename().string();
    if (std::find(inputs.begin(), inputs.end(), name) != inputs.end()) continue;
    ADD_FAILURE() << "left behind: " << e.path();
  }
}

void expect_input_error(const CliResult& r, const std::string& phrase) {
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(phrase), std::string::npos) << "expected '" << phrase << "' in:\n" << r.output;
  // Bad input is never an internal error, a crash or a sanitizer report.
  EXPECT_EQ(r.output.find("internal error"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("Sanitizer"), std::string::npos) << r.output;
}

// `tessera run` with `arch` and `workload`, output into dir/out.
CliResult run_into(const fs::path& dir, const std::string& arch, const std::string& workload,
                   const std::string& extra = "") {
  return run_tessera("run -q -a " + arch + " -w " + workload + " -o " + (dir / "out").string() + " " + extra);
}

const std::string kMlp1 = "workloads/tpu/mlp1.yaml";
const std::string kTpu = "configs/tpu-v1.yaml";

bool running_as_root() { return ::geteuid() == 0; }

// In a TESSERA_SANITIZE build, an exception thrown after the SystemC simulation has run
// meets Debian's SystemC coroutines, which switch stacks without telling ASan: ASan warns
// that it ignores __asan_handle_no_return and may then report a false stack overflow
// (docs/reliability.md). Only that exact warning makes a test skip.
using tessera_test::systemc_asan_false_positive;

// ---------------------------------------------------------------- tiny ONNX models

using Dim = std::variant<int64_t, std::string>;

struct OnnxModel {
  onnx::ModelProto m;
  onnx::GraphProto* g;
  OnnxModel() {
    m.set_ir_version(8);
    auto* o = m.add_opset_import();
    o->set_domain("");
    o->set_version(13);
    g = m.mutable_graph();
    g->set_name("errors");
  }
  void input(const std::string& name, const std::vector<Dim>& dims) {
    auto* t = g->add_input();
    t->set_name(name);
    auto* tt = t->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto_DataType_FLOAT);
    for (const auto& d : dims) {
      auto* dd = tt->mutable_shape()->add_dim();
      if (std::holds_alternative<int64_t>(d)) dd->set_dim_value(std::get<int64_t>(d));
      else dd->set_dim_param(std::get<std::string>(d));
    }
  }
  void output(const std::string& name) {
    auto* v = g->add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto_DataType_FLOAT);
  }
  void node(const std::string& op, const std::string& in, const std::string& out, const std::string& name) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(name);
    n->add_input(in);
    n->add_output(out);
  }
  void weight(const std::string& name, std::vector<int64_t> dims) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto_DataType_FLOAT);
    int64_t n = 1;
    for (int64_t d : dims) t->add_dims(d), n *= d;
    t->set_raw_data(std::string(static_cast<size_t>(n * 4), '\0'));
  }
  std::string bytes() const { return m.SerializeAsString(); }
};

// x[1, 64] -> MatMul(W[64, 64]) -> Relu -> y: a valid model.
OnnxModel valid_mlp() {
  OnnxModel o;
  o.input("x", {int64_t{1}, int64_t{64}});
  o.weight("W", {64, 64});
  auto* n = o.g->add_node();
  n->set_op_type("MatMul");
  n->set_name("fc");
  n->add_input("x");
  n->add_input("W");
  n->add_output("h");
  o.node("Relu", "h", "y", "relu");
  o.output("y");
  return o;
}

}  // namespace

// ---------------------------------------------------------------- YAML configs

TEST(Errors, YamlSyntaxError) {
  const fs::path dir = scratch("syntax");
  write(dir / "arch.yaml", tpu_with("  rows: 256", "  rows: [256"));
  const CliResult r = run_into(dir, (dir / "arch.yaml").string(), kMlp1);
  expect_input_error(r, "YAML syntax error");
  expect_input_error(r, "arch.yaml:");
  expect_no_output(dir, {"arch.yaml"});
}

TEST(Errors, EmptyConfigFile) {
  const fs::path dir = scratch("empty");
  write(dir / "arch.yaml", "# nothing here\n");
  const CliResult r = run_into(dir, (dir / "arch.yaml").string(), kMlp1);
  expect_input_error(r, "empty document (expected a YAML mapping)");
  expect_no_output(dir, {"arch.yaml"});
}

TEST(Errors, UnknownKey) {
  const fs::path dir = scratch("unknown-key");
  write(dir / "arch.yaml", tpu_with("  rows: 256", "  rowz: 256"));
  const CliResult r = run_into(dir, (dir / "arch.yaml").string(), kMlp1);
  expect_input_error(r, "arch.yaml:10:3: array.rowz: unknown key; allowed here: count, rows, cols");
  expect_no_output(dir, {"arch.yaml"});
}

TEST(Errors, DuplicateKey) {
  const fs::path dir = scratch("duplicate-key");
  write(dir / "arch.yaml", tpu_with("  rows: 256", "  rows: 256\n  rows: 128"));
  const CliResult r = run_into(dir, (dir / "arch.yaml").string(), kMlp1);
  expect_input_error(r, "array.rows: duplicate key");
  expect_no_output(dir, {"arch.yaml"});
}

TEST(Errors, WrongType) {
  const fs::path dir = scratch("wrong-type");
  write(dir / "arch.yaml", tpu_with("  rows: 256", "  rows: many"));
  const CliResult r = run_into(dir, (dir / "arch.yaml").string(), kMlp1);
  expect_input_error(r, "array.rows: expected an integer, got 'many'");
  expect_no_output(dir, {"arch.yaml"});
}

TEST(Errors, OutOfRangeValue) {
  const fs::path dir = scratch("out-of-range");
  write(dir / "arch.yaml", tpu_with("  rows: 256", "  rows: 0"));
  const CliResult r = run_into(dir, (dir / "arch.yaml").string(), kMlp1);
  expect_input_error(r, "array.rows: must be in [1, 4096], got 0");
  expect_no_output(dir, {"arch.yaml"});
}

TEST(Errors, InconsistentSizesBufferSmallerThanATile) {
  const fs::path dir = scratch("buffer-tile");
  std::string cfg = slurp(kSrc / "configs/tpu-v1.yaml");
  const auto ub = cfg.find("unified_buffer:");
  ASSERT_NE(ub, std::string::npos);
  const auto cap = cfg.find("capacity:", ub);
  ASSERT_NE(cap, std::string::npos);
  cfg.replace(cap, cfg.find('\n', cap) - cap, "capacity: 64 KiB");
  write(dir / "arch.yaml", cfg);
  const CliResult r = run_into(dir, (dir / "arch.yaml").string(), kMlp1);
  expect_input_error(r, "unified_buffer.capacity: 65536 bytes is smaller than one tile");
  expect_no_output(dir, {"arch.yaml"});
}

// ---------------------------------------------------------------- files

TEST(Errors, MissingFile) {
  const fs::path dir = scratch("missing");
  CliResult r = run_into(dir, "configs/nope.yaml", kMlp1);
  expect_input_error(r, "--arch: File does not exist: configs/nope.yaml");
  r = run_into(dir, kTpu, "workloads/nope.yaml");
  expect_input_error(r, "--workload: File does not exist: workloads/nope.yaml");
  expect_no_output(dir);
}

TEST(Errors, UnreadableFile) {
  if (running_as_root()) GTEST_SKIP() << "running as root: file permissions do not apply";
  const fs::path dir = scratch("unreadable");
  write(dir / "arch.yaml", slurp(kSrc / "configs/tpu-v1.yaml"));
  fs::permissions(dir / "arch.yaml", fs::perms::none);
  const CliResult r = run_into(dir, (dir / "arch.yaml").string(), kMlp1);
  fs::permissions(dir / "arch.yaml", fs::perms::owner_read | fs::perms::owner_write);
  expect_input_error(r, "arch.yaml: cannot open file: Permission denied");
  expect_no_output(dir, {"arch.yaml"});
}

TEST(Errors, DirectoryInsteadOfFile) {
  const fs::path dir = scratch("directory");
  fs::create_directories(dir / "arch.yaml");
  const CliResult r = run_into(dir, (dir / "arch.yaml").string(), kMlp1);
  expect_input_error(r, "--arch: File is actually a directory");
  expect_no_output(dir);
}

// ---------------------------------------------------------------- workloads

TEST(Errors, YamlGraphUnsupportedOp) {
  const fs::path dir = scratch("yaml-op");
  write(dir / "g.yaml", "name: g\ninputs: [{name: x, shape: [4]}]\nlayers:\n  - {name: s, op: softmaxx}\n");
  const CliResult r = run_into(dir, kTpu, (dir / "g.yaml").string());
  expect_input_error(r, "g.yaml:4:");
  expect_input_error(r, "unsupported op 'softmaxx'");
  expect_no_output(dir, {"g.yaml"});
}

TEST(Errors, OnnxUnsupportedOp) {
  const fs::path dir = scratch("onnx-op");
  OnnxModel o;
  o.input("x", {int64_t{1}, int64_t{4}, int64_t{4}});
  o.node("Det", "x", "y", "det0");
  o.output("y");
  write(dir / "m.onnx", o.bytes());
  const CliResult r = run_into(dir, kTpu, (dir / "m.onnx").string());
  expect_input_error(r, "m.onnx");
  expect_input_error(r, "1 node(s) cannot be imported: 'det0' (Det). Supported ops:");
  expect_no_output(dir, {"m.onnx"});
}

TEST(Errors, OnnxTruncatedFile) {
  const fs::path dir = scratch("onnx-truncated");
  const std::string bytes = valid_mlp().bytes();
  write(dir / "full.onnx", bytes);
  // The valid model runs (so the truncation is what fails below).
  ASSERT_EQ(run_tessera("compile -a configs/tpu-v1.yaml -w " + (dir / "full.onnx").string()).exit_code, 0);
  write(dir / "m.onnx", bytes.substr(0, bytes.size() / 2));
  const CliResult r = run_into(dir, kTpu, (dir / "m.onnx").string());
  expect_input_error(r, "m.onnx");
  expect_input_error(r, "not a valid ONNX model: the protobuf does not parse (truncated or corrupt file");
  expect_no_output(dir, {"m.onnx", "full.onnx"});
}

TEST(Errors, OnnxGarbageFile) {
  const fs::path dir = scratch("onnx-garbage");
  write(dir / "m.onnx", "this is not a protobuf\n");
  const CliResult r = run_into(dir, kTpu, (dir / "m.onnx").string());
  expect_input_error(r, "not a valid ONNX model");
  expect_no_output(dir, {"m.onnx"});
}

TEST(Errors, OnnxUnboundDynamicDimension) {
  const fs::path dir = scratch("onnx-dynamic");
  OnnxModel o;
  o.input("x", {int64_t{1}, std::string("seq"), int64_t{64}});
  o.node("Relu", "x", "y", "relu");
  o.output("y");
  write(dir / "m.onnx", o.bytes());
  CliResult r = run_into(dir, kTpu, (dir / "m.onnx").string());
  expect_input_error(r, "dynamic dimension(s) left unbound: 'seq' ('x' dim 1)");
  expect_input_error(r, "--input-shape");
  r = run_into(dir, kTpu, (dir / "m.onnx").string(), "--input-shape x=1,oops,64");
  expect_input_error(r, "--input-shape 'x=1,oops,64': dimension 'oops' is not a positive integer");
  expect_no_output(dir, {"m.onnx"});
}

// ---------------------------------------------------------------- hostile ONNX (reliability audit)

namespace {
// An INT64 initializer (for folded shape computations).
void int64s(OnnxModel& o, const std::string& name, const std::vector<int64_t>& v) {
  auto* t = o.g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto_DataType_INT64);
  t->add_dims(static_cast<int64_t>(v.size()));
  for (int64_t x : v) t->add_int64_data(x);
}
onnx::NodeProto* node2(OnnxModel& o, const std::string& op, const std::vector<std::string>& ins,
                       const std::vector<std::string>& outs, const std::string& name) {
  auto* n = o.g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : ins) n->add_input(i);
  for (const auto& x : outs) n->add_output(x);
  return n;
}
// x [1, 16] -> Reshape(x, t) -> Relu -> y, with t computed by the caller's nodes.
OnnxModel reshape_by(const std::string& t) {
  OnnxModel o;
  o.input("x", {int64_t{1}, int64_t{16}});
  node2(o, "Reshape", {"x", t}, {"r"}, "reshape");
  o.node("Relu", "r", "y", "relu");
  o.output("y");
  return o;
}
}  // namespace

TEST(Errors, OnnxIntegerOverflow) {
  const fs::path dir = scratch("onnx-overflow");
  {  // the audit's reproducer: a SIGFPE (exit 136) before
    OnnxModel o = reshape_by("q");
    int64s(o, "a", {std::numeric_limits<int64_t>::min()});
    int64s(o, "b", {-1});
    node2(o, "Div", {"a", "b"}, {"q"}, "div");
    write(dir / "div.onnx", o.bytes());
    expect_input_error(run_into(dir, kTpu, (dir / "div.onnx").string()),
                       "div.onnx: node 'div' (Div): -9223372036854775808 / -1 does not fit 64 bits");
  }
  {  // integer Pow looped 2^62 times before
    OnnxModel o = reshape_by("q");
    int64s(o, "a", {2});
    int64s(o, "b", {int64_t{1} << 62});
    node2(o, "Pow", {"a", "b"}, {"q"}, "pow");
    write(dir / "pow.onnx", o.bytes());
    expect_input_error(run_into(dir, kTpu, (dir / "pow.onnx").string()), "node 'pow' (Pow): 2 ** 4611686018427387904 does not fit 64 bits");
  }
  {  // a window: dilation * (kernel - 1) + 1
    OnnxModel o;
    o.input("x", {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{8}});
    o.weight("w", {4, 3, 3, 3});
    auto* c = node2(o, "Conv", {"x", "w"}, {"y"}, "conv");
    auto* a = c->add_attribute();
    a->set_name("dilations");
    a->set_type(onnx::AttributeProto_AttributeType_INTS);
    a->add_ints(int64_t{1} << 62);
    a->add_ints(1);
    o.output("y");
    write(dir / "conv.onnx", o.bytes());
    expect_input_error(run_into(dir, kTpu, (dir / "conv.onnx").string()), "node 'conv' (Conv): dilations must be in [1, 1048576]");
  }
  expect_no_output(dir, {"div.onnx", "pow.onnx", "conv.onnx"});
}

TEST(Errors, OnnxMalformedNode) {
  const fs::path dir = scratch("onnx-malformed");
  {
    OnnxModel o;
    o.input("x", {int64_t{1}, int64_t{16}});
    o.node("MatMul", "x", "y", "mm");
    o.output("y");
    write(dir / "mm.onnx", o.bytes());
    expect_input_error(run_into(dir, kTpu, (dir / "mm.onnx").string()), "mm.onnx: node 'mm' (MatMul): needs 2 inputs (opset 13), has 1");
  }
  {
    OnnxModel o;
    o.input("x", {int64_t{1}, int64_t{16}});
    o.node("Transpose", "x", "y", "tr");
    auto* a = o.g->mutable_node(0)->add_attribute();
    a->set_name("perm");
    a->set_type(onnx::AttributeProto_AttributeType_INTS);
    a->add_ints(0);
    a->add_ints(5);
    o.output("y");
    write(dir / "tr.onnx", o.bytes());
    expect_input_error(run_into(dir, kTpu, (dir / "tr.onnx").string()),
                       "node 'tr' (Transpose): perm [0, 5] is not a permutation of the 2 axes (allowed: each of 0 to 1 once)");
  }
  {
    OnnxModel o;
    o.input("x", {int64_t{1}, int64_t{16}});
    o.node("Softmax", "x", "y", "sm");
    auto* a = o.g->mutable_node(0)->add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto_AttributeType_STRING);
    a->set_s("1");
    o.output("y");
    write(dir / "sm.onnx", o.bytes());
    expect_input_error(run_into(dir, kTpu, (dir / "sm.onnx").string()),
                       "node 'sm' (Softmax): attribute 'axis' must be of type INT, got STRING");
  }
  {  // a required attribute missing: Cast's `to` defaulted to FLOAT before
    OnnxModel o;
    o.input("x", {int64_t{1}, int64_t{16}});
    o.node("Cast", "x", "y", "cast");
    o.output("y");
    write(dir / "cast.onnx", o.bytes());
    expect_input_error(run_into(dir, kTpu, (dir / "cast.onnx").string()),
                       "node 'cast' (Cast): needs the attribute 'to', which is missing");
  }
  expect_no_output(dir, {"mm.onnx", "tr.onnx", "sm.onnx", "cast.onnx"});
}

TEST(Errors, OnnxExternalDataOutsideTheModel) {
  const fs::path dir = scratch("onnx-external");
  fs::create_directories(dir / "model");
  {  // a file outside whose 16 bytes would make a valid target shape [1, 16]
    const int64_t secret[2] = {1, 16};
    std::ofstream(dir / "secret.bin", std::ios::binary).write(reinterpret_cast<const char*>(secret), sizeof secret);
  }
  fs::create_symlink("../secret.bin", dir / "model" / "link.bin");
  for (const std::string& loc : {std::string("../secret.bin"), (dir / "secret.bin").string(), std::string("link.bin")}) {
    OnnxModel o = reshape_by("s");
    auto* t = o.g->add_initializer();
    t->set_name("s");
    t->set_data_type(onnx::TensorProto_DataType_INT64);
    t->add_dims(2);
    t->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
    auto* e = t->add_external_data();
    e->set_key("location");
    e->set_value(loc);
    write(dir / "model" / "m.onnx", o.bytes());
    const CliResult r = run_into(dir, kTpu, (dir / "model" / "m.onnx").string());
    expect_input_error(r, "initializer 's': its external data location '" + loc + "'");
    expect_input_error(r, "outside the model's directory");
  }
  expect_no_output(dir, {"m.onnx", "secret.bin", "link.bin"});
}

TEST(Errors, OnnxBoundDimensionTooLarge) {
  const fs::path dir = scratch("onnx-cap");
  OnnxModel o;
  o.input("x", {std::string("N"), int64_t{64}});
  o.weight("W", {64, 32});
  node2(o, "MatMul", {"x", "W"}, {"y"}, "mm");
  o.output("y");
  write(dir / "dyn.onnx", o.bytes());
  // The batch's named dimension: 1.4 GB and 15 s at 10^9 before, the OOM killer at 2^62.
  for (const std::string bind : {"N=1000000000", "N=4611686018427387904"}) {
    expect_input_error(run_into(dir, kTpu, (dir / "dyn.onnx").string(), "--input-shape " + bind),
                       "--input-shape " + bind + ": a dimension must be in [1, 16777216] (the --batch cap)");
  }
  expect_input_error(run_into(dir, kTpu, (dir / "dyn.onnx").string(), "--input-shape x=1073741824,64"),
                     "--input-shape x: dimension 0 is 1073741824, must be in [1, 16777216] (the --batch cap)");
  expect_no_output(dir, {"dyn.onnx"});
}

TEST(Errors, OnnxInvalidGraph) {
  const fs::path dir = scratch("onnx-invalid");
  {
    OnnxModel o;
    o.input("x", {int64_t{1}, int64_t{16}});
    o.node("Relu", "x", "y", "first");
    o.node("Sigmoid", "x", "y", "second");
    o.output("y");
    write(dir / "two.onnx", o.bytes());
    expect_input_error(run_into(dir, kTpu, (dir / "two.onnx").string()),
                       "value 'y' is written by two nodes: node 'first' (Relu) and node 'second' (Sigmoid)");
  }
  {
    OnnxModel o;
    o.input("x", {int64_t{1}, int64_t{16}});
    int64s(o, "sp", {4, 4});
    auto* s = node2(o, "Split", {"x", "sp"}, {"a", "b"}, "split");
    auto* a = s->add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto_AttributeType_INT);
    a->set_i(1);
    o.node("Relu", "a", "y", "relu");
    o.output("y");
    write(dir / "split.onnx", o.bytes());
    expect_input_error(run_into(dir, kTpu, (dir / "split.onnx").string()),
                       "node 'split' (Split): split sizes [4, 4] sum to 8, but axis 1 has 16");
  }
  {
    OnnxModel o;
    o.m.mutable_opset_import(0)->set_version(1000000000000);
    o.input("x", {int64_t{1}, int64_t{16}});
    o.node("Relu", "x", "y", "relu");
    o.output("y");
    write(dir / "opset.onnx", o.bytes());
    expect_input_error(run_into(dir, kTpu, (dir / "opset.onnx").string()),
                       "opset 1000000000000 is newer than this importer knows (up to 21)");
  }
  {
    OnnxModel o;
    o.input("x", {int64_t{1}, int64_t{0}});
    o.node("Relu", "x", "y", "relu");
    o.output("y");
    write(dir / "dim0.onnx", o.bytes());
    const CliResult r = run_into(dir, kTpu, (dir / "dim0.onnx").string());
    expect_input_error(r, "input 'x' dimension 1 is 0 in the model: empty tensors are not supported");
    EXPECT_EQ(r.output.find("unbound"), std::string::npos) << r.output;
  }
  expect_no_output(dir, {"two.onnx", "split.onnx", "opset.onnx", "dim0.onnx"});
}

TEST(Errors, OnnxNonUtf8NamesAreEscaped) {
  const fs::path dir = scratch("onnx-utf8");
  OnnxModel o = valid_mlp();
  o.g->mutable_node(0)->set_name("caf\xe9!");
  o.g->set_name("g\xff");
  write(dir / "m.onnx", o.bytes());
  const CliResult r = run_into(dir, kTpu, (dir / "m.onnx").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;  // was exit 1: JSON type_error.316
  const std::string report = slurp(dir / "out" / "report.json");
  EXPECT_NE(report.find("caf\\\\xe9!"), std::string::npos);  // the name `caf\xe9!`, JSON-escaped
  EXPECT_EQ(report.find('\xe9'), std::string::npos);
}

TEST(Errors, PrecisionPolicyFile) {
  const fs::path dir = scratch("policy");
  write(dir / "policy.yaml", "name: p\ndefault: {activations: int8, weights: int8}\nfirst_lats: int16\n");
  const CliResult r = run_into(dir, kTpu, kMlp1, "-p " + (dir / "policy.yaml").string());
  expect_input_error(r, "policy.yaml:3:1: first_lats: unknown key");
  expect_no_output(dir, {"policy.yaml"});
}

// ---------------------------------------------------------------- outputs

TEST(Errors, UnwritableOutputDirectory) {
  const fs::path dir = scratch("unwritable-out");
  const CliResult r = run_tessera("run -q -a configs/tpu-v1.yaml -w workloads/tpu/mlp1.yaml -o /dev/null/out");
  if (systemc_asan_false_positive(r)) GTEST_SKIP() << "ASan + SystemC stack switching (see docs/reliability.md)";
  expect_input_error(r, "/dev/null/out: cannot create output directory");
}

TEST(Errors, OutputDirectoryWithoutWritePermission) {
  if (running_as_root()) GTEST_SKIP() << "running as root: directory permissions do not apply";
  const fs::path dir = scratch("readonly-out");
  fs::create_directories(dir / "out");
  fs::permissions(dir / "out", fs::perms::owner_read | fs::perms::owner_exec);
  const CliResult r = run_into(dir, kTpu, kMlp1);
  fs::permissions(dir / "out", fs::perms::owner_all);
  expect_input_error(r, "report.json: cannot create output file: Permission denied");
  expect_no_output(dir);
}

// A full disk: /dev/full takes no bytes (ENOSPC) where a write path can be pointed at it
// (the compile listing, the trace); for the report files the file-size limit makes
// every write beyond 512 bytes fail the same way (EFBIG, with SIGXFSZ ignored).
TEST(Errors, DiskFullDevFull) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  const fs::path dir = scratch("dev-full");
  CliResult r = run_tessera("compile -a configs/tpu-v1.yaml -w workloads/tpu/mlp1.yaml -o /dev/full");
  expect_input_error(r, "/dev/full: cannot write output file: No space left on device");
  // The trace is written before the report files: a trace that fails leaves none of them.
  r = run_into(dir, kTpu, kMlp1, "--trace /dev/full");
  if (systemc_asan_false_positive(r)) GTEST_SKIP() << "ASan + SystemC stack switching (see docs/reliability.md)";
  expect_input_error(r, "/dev/full: cannot write output file: No space left on device");
  EXPECT_FALSE(fs::exists(dir / "out" / "report.json"));
  EXPECT_TRUE(fs::is_character_file("/dev/full"));  // still the device, not replaced by a file
}

TEST(Errors, DiskFullReportFiles) {
  const fs::path dir = scratch("file-size-limit");
  const CliResult r = run_shell("trap '' XFSZ; ulimit -f 1 && " + tessera_test::tessera_path() +
                                " run -q -a configs/tpu-v1.yaml -w workloads/tpu/mlp1.yaml -o " + (dir / "out").string());
  if (systemc_asan_false_positive(r)) GTEST_SKIP() << "ASan + SystemC stack switching (see docs/reliability.md)";
  expect_input_error(r, "report.json: cannot write output file: File too large");
  expect_no_output(dir);
}

// ---------------------------------------------------------------- experiments

TEST(Errors, MalformedExperiment) {
  const fs::path dir = scratch("experiment");
  write(dir / "exp.yaml", "name: bad\nbase: " + (kSrc / "configs/tpu-v1.yaml").string() +
                              "\nworkloads: [" + (kSrc / kMlp1).string() + "]\nparameters:\n  - grid: {array.rows: [64, 128]}\n"
                              "metricz: [summary.latency_s]\n");
  CliResult r = run_tessera("sweep " + (dir / "exp.yaml").string() + " --out " + (dir / "out").string());
  expect_input_error(r, "exp.yaml:6:1: metricz: unknown key");
  write(dir / "exp.yaml", "name: bad\nbase: nope.yaml\nworkloads: [" + (kSrc / kMlp1).string() + "]\n");
  r = run_tessera("sweep " + (dir / "exp.yaml").string() + " --out " + (dir / "out").string());
  expect_input_error(r, "base: no such config file");
  write(dir / "exp.yaml", "name: bad\nbase: " + (kSrc / "configs/tpu-v1.yaml").string() +
                              "\nworkloads: [" + (kSrc / kMlp1).string() + "]\nparameters:\n  - grid: {array.rowz: [64]}\nmetrics: [summary.latency_s]\n");
  r = run_tessera("sweep " + (dir / "exp.yaml").string() + " --out " + (dir / "out").string());
  expect_input_error(r, "array.rowz: not a key of the architecture config");
  expect_no_output(dir, {"exp.yaml"});
}

// Config composition (docs/configs.md, "Composition"): a missing or cyclic `base:` is one
// located error, exit 2, for run, compile and sweep alike.
TEST(Errors, MissingOrCyclicBaseConfig) {
  const fs::path dir = scratch("compose");
  write(dir / "v.yaml", "# a variant\nbase: nope.yaml\nname: v\n");
  CliResult r = run_into(dir, (dir / "v.yaml").string(), kMlp1);
  expect_input_error(r, (dir / "v.yaml").string() + ":2:7: base: no such config file '" + (dir / "nope.yaml").string() + "'");
  write(dir / "a.yaml", "base: b.yaml\n");
  write(dir / "b.yaml", "base: a.yaml\n");
  const std::string cycle = (dir / "b.yaml").string() + ":1:7: base: config bases form a cycle: " + (dir / "a.yaml").string() +
                            " -> " + (dir / "b.yaml").string() + " -> " + (dir / "a.yaml").string();
  r = run_into(dir, (dir / "a.yaml").string(), kMlp1);
  expect_input_error(r, cycle);
  r = run_tessera("compile -a " + (dir / "a.yaml").string() + " -w " + kMlp1 + " -o " + (dir / "out.txt").string());
  expect_input_error(r, cycle);
  write(dir / "exp.yaml", "name: c\nbase: a.yaml\nworkloads: [" + (kSrc / kMlp1).string() + "]\nmetrics: [summary.latency_s]\n");
  r = run_tessera("sweep " + (dir / "exp.yaml").string() + " --out " + (dir / "sweep").string());
  expect_input_error(r, cycle);
  expect_no_output(dir, {"v.yaml", "a.yaml", "b.yaml", "exp.yaml"});
}

// Paths the system cannot examine (a component longer than NAME_MAX) in any path flag:
// std::filesystem threw out of `--precision` and `--trace` checks (exit 1, internal error).
TEST(Errors, PathsTheSystemCannotExamineAreInputErrors) {
  const std::string name(300, 'c');
  const std::string base = "run -q -a configs/tpu-v1.yaml -w workloads/tpu/mlp1.yaml ";
  CliResult r = run_tessera(base + "-o /tmp/x -p /tmp/" + name + ".yaml");
  expect_input_error(r, "nor an existing policy file (File name too long)");
  r = run_tessera(base + "-o /tmp/x --trace /tmp/" + name + "/t.json");
  expect_input_error(r, "--trace /tmp/" + name + "/t.json: cannot create directory /tmp/" + name + ": File name too long");
  r = run_tessera(base + "-o /tmp/" + name);
  expect_input_error(r, "cannot create output directory: File name too long");
  r = run_tessera("run -q -a /tmp/" + name + ".yaml -w workloads/tpu/mlp1.yaml -o /tmp/x");
  expect_input_error(r, "--arch: File does not exist");
  r = run_tessera("compile -a configs/tpu-v1.yaml -w /tmp/" + name + ".onnx");
  expect_input_error(r, "--workload: File does not exist");
}

// ---------------------------------------------------------------- command line

TEST(Errors, BadCliFlag) {
  CliResult r = run_tessera("run -q -a configs/tpu-v1.yaml -w workloads/tpu/mlp1.yaml -o /tmp/x --bogus");
  expect_input_error(r, "The following argument was not expected: --bogus");
  r = run_tessera("run -a configs/tpu-v1.yaml -w workloads/tpu/mlp1.yaml");
  expect_input_error(r, "--out is required");
  r = run_tessera("frobnicate");
  expect_input_error(r, "A subcommand is required");
  r = run_tessera("run -q -a configs/tpu-v1.yaml -w workloads/tpu/mlp1.yaml -o /tmp/x --batch 0");
  expect_input_error(r, "--batch: Value 0 not in range 1 to 16777216");
  r = run_tessera("run -q -a configs/tpu-v1.yaml -w workloads/tpu/mlp1.yaml -o /tmp/x -p int7");
  expect_input_error(r, "--precision 'int7': not a policy name");
}

// ---------------------------------------------------------------- ONNX control flow and input bindings

namespace {
// x [1, 64] -> MatMul -> If(sr == 16000, Relu, Sigmoid) -> y, sr a scalar INT64 input;
// and a state [2, 1, 8] (its batch on axis 1) that only a Sigmoid reads (no use says where its batch is).
OnnxModel sample_rate_model() {
  OnnxModel o = valid_mlp();
  o.g->mutable_node()->RemoveLast();  // the Relu: the If takes its place
  o.g->mutable_output(0)->set_name("y");
  auto* sr = o.g->add_input();
  sr->set_name("sr");
  sr->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto_DataType_INT64);
  sr->mutable_type()->mutable_tensor_type()->mutable_shape();
  auto* k = o.g->add_initializer();
  k->set_name("k16");
  k->set_data_type(onnx::TensorProto_DataType_INT64);
  k->add_int64_data(16000);
  auto* eq = o.g->add_node();
  eq->set_op_type("Equal");
  eq->set_name("is16k");
  eq->add_input("sr");
  eq->add_input("k16");
  eq->add_output("c");
  auto* n = o.g->add_node();
  n->set_op_type("If");
  n->set_name("if_sr");
  n->add_input("c");
  n->add_output("y");
  for (const auto& [branch, op] : {std::pair<std::string, std::string>{"then_branch", "Relu"}, {"else_branch", "Sigmoid"}}) {
    auto* a = n->add_attribute();
    a->set_name(branch);
    a->set_type(onnx::AttributeProto_AttributeType_GRAPH);
    auto* b = a->mutable_g()->add_node();
    b->set_op_type(op);
    b->set_name(op);
    b->add_input("h");
    b->add_output(branch + "_out");
    a->mutable_g()->add_output()->set_name(branch + "_out");
  }
  o.input("state", {int64_t{2}, int64_t{1}, int64_t{8}});
  o.node("Sigmoid", "state", "s", "state_gate");
  o.output("s");
  return o;
}
}  // namespace

TEST(Errors, OnnxInputValueFlag) {
  const fs::path dir = scratch("onnx-input-value");
  write(dir / "m.onnx", sample_rate_model().bytes());
  const std::string m = (dir / "m.onnx").string();
  // Without the value, the If is a blocker naming the input (and the state's batch is wrong).
  CliResult r = run_into(dir, kTpu, m, "--batch-axis state=1");
  expect_input_error(r, "'if_sr' (If: its condition 'c' is not known at import time: it depends on the value of input "
                        "'sr' (bind it with --input-value sr=V))");
  r = run_tessera("compile -a configs/tpu-v1.yaml -w " + m + " --input-value sr=16000 --batch-axis state=1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_into(dir, kTpu, m, "--input-value sr");
  expect_input_error(r, "--input-value 'sr': expected NAME=VALUE or NAME=v0,v1,... (e.g. sr=16000)");
  r = run_into(dir, kTpu, m, "--input-value sr=fast");
  expect_input_error(r, "--input-value 'sr=fast': value 'fast' is not a number");
  r = run_into(dir, kTpu, m, "--input-value sr=16000.5 --batch-axis state=1");
  expect_input_error(r, "--input-value sr: input 'sr' holds integers (INT64), 16000.5 is not one");
  // Issue 34: a whole number that does not fit int64 says so, not "is not one".
  r = run_into(dir, kTpu, m, "--input-value sr=9223372036854775808 --batch-axis state=1");
  expect_input_error(r, "--input-value sr: input 'sr' holds integers (INT64), and 9.223372036854776e+18 does not fit 64 bits");
  r = run_into(dir, kTpu, m, "--input-value sr=-1e19 --batch-axis state=1");
  expect_input_error(r, "does not fit 64 bits (allowed: -9223372036854775808 to 9223372036854775807");
  r = run_into(dir, kTpu, m, "--input-value sr=9007199254740995 --batch-axis state=1");
  expect_input_error(r, "is beyond 2^53, where a value given on the command line is not held exactly");
  r = run_into(dir, kTpu, m, "--input-value rate=16000");
  expect_input_error(r, "--input-value names 'rate', which is not a graph input (sr, state, x)");
  r = run_into(dir, kTpu, m, "--input-value sr=1 --input-value sr=2");
  expect_input_error(r, "--input-value sr is given more than once");
  r = run_into(dir, kTpu, kMlp1, "--input-value sr=1");
  expect_input_error(r, "--input-value applies to ONNX models only");
  expect_no_output(dir, {"m.onnx"});
}

TEST(Errors, OnnxBatchAxisFlag) {
  const fs::path dir = scratch("onnx-batch-axis");
  write(dir / "m.onnx", sample_rate_model().bytes());
  const std::string m = (dir / "m.onnx").string();
  CliResult r = run_into(dir, kTpu, m, "--input-value sr=8000");
  expect_input_error(r, "graph inputs disagree on the batch: 'x' has 1, 'state' has 2 on axis 0 (each input's batch axis "
                        "is inferred from its use; set it with --batch-axis NAME=AXIS)");
  r = run_into(dir, kTpu, m, "--input-value sr=8000 --batch-axis state=one");
  expect_input_error(r, "--batch-axis 'state=one': axis 'one' is not an integer");
  r = run_into(dir, kTpu, m, "--input-value sr=8000 --batch-axis state");
  expect_input_error(r, "--batch-axis 'state': expected NAME=AXIS (e.g. state=1)");
  r = run_into(dir, kTpu, m, "--input-value sr=8000 --batch-axis state=3");
  expect_input_error(r, "--batch-axis state=3: input 'state' has rank 3 (allowed axes: -3 to 2)");
  r = run_into(dir, kTpu, m, "--input-value sr=8000 --batch-axis sr=0");
  expect_input_error(r, "--batch-axis sr=0: input 'sr' is bound by value (--input-value), so it has no batch");
  expect_no_output(dir, {"m.onnx"});
  r = run_tessera("compile -a configs/tpu-v1.yaml -w " + m + " --input-value sr=8000 --batch-axis state=1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // A batch of 4 for both inputs (the fixed 1s are the batch: --input-shape may rebind them).
  r = run_tessera("compile -a configs/tpu-v1.yaml -w " + m +
                  " --input-value sr=8000 --batch-axis state=1 --input-shape x=4,64 --input-shape state=2,4,8");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("batch 4"), std::string::npos) << r.output;
}

TEST(Errors, OnnxFlagsAreInTheHelp) {
  for (const char* cmd : {"run --help", "compile --help"}) {
    const CliResult r = run_tessera(cmd);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("--input-value NAME=VALUE"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("--batch-axis NAME=AXIS"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("--input-value sr=16000"), std::string::npos) << r.output;
  }
}

// ici: (docs/configs.md "Chip-to-chip links"): a bad link value is one located error, exit 2,
// and nothing is written, though no single-chip run reads the links.
TEST(Errors, BadChipLinkValue) {
  const fs::path dir = scratch("ici");
  write(dir / "v.yaml", "base: " + (kSrc / "configs/tpu-v5e.yaml").string() +
                            "\nici: {bandwidth_gb_per_s: 50, latency_ns: 1000, ports: 2, topology: torus_2d}\n");
  const CliResult r = run_into(dir, (dir / "v.yaml").string(), kMlp1);
  expect_input_error(r, (dir / "v.yaml").string() + ":2:56: ici.ports: must be >= 4 for torus_2d");
  expect_no_output(dir, {"v.yaml"});
}

// Weights in host memory (docs/configs.md "residency") cross the host link: on a chip
// without one (tpu-v5e has no `pcie:` section) the config key and the per-run flag are each
// one error, exit 2, nothing written.
TEST(Errors, HostResidentWeightsWithoutAHostLink) {
  const fs::path dir = scratch("weights-host");
  write(dir / "v.yaml", "base: " + (kSrc / "configs/tpu-v5e.yaml").string() + "\nresidency: {weights: host}\n");
  const CliResult r = run_into(dir, (dir / "v.yaml").string(), kMlp1);
  expect_input_error(r, (dir / "v.yaml").string() +
                            ":2:22: residency.weights: 'host' needs a host link, and this chip has no `pcie:` section");
  const CliResult flag = run_into(dir, "configs/tpu-v5e.yaml", kMlp1, "--residency weights=host");
  expect_input_error(flag, "--residency weights=host: 'tpu-v5e' (configs/tpu-v5e.yaml) has no host link");
  const CliResult typo = run_into(dir, kTpu, kMlp1, "--residency weights=hbm");
  expect_input_error(typo, "--residency: 'hbm' is not a residency for weights; allowed: host, device");
  expect_no_output(dir, {"v.yaml"});
}
