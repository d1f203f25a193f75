// Unit tests of sim/sweep without processes: expressions, expansion, ids, configs, rows,
// the result store's resume logic and Pareto fronts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/config/arch_config.h"
#include "sim/sweep/experiment.h"
#include "sim/sweep/expr.h"
#include "sim/sweep/results.h"
#include "sim/sweep/summary.h"

namespace fs = std::filesystem;
using namespace tessera;
using namespace tessera::sweep;

namespace {

const fs::path kSrc = TESSERA_SOURCE_DIR;

// An experiment from text; base and workload paths are relative to the source tree.
Experiment parse(const std::string& body, const std::string& origin = "test.yaml") {
  const std::string text = "base: configs/tpu-v1.yaml\nworkloads: [workloads/tpu/mlp1.yaml]\nmetrics: [summary.latency_s]\n" + body;
  return parse_experiment(YamlNode::load_string(text, origin), kSrc);
}

Experiment parse_full(const std::string& text) { return parse_experiment(YamlNode::load_string(text, "test.yaml"), kSrc); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

Value eval(const std::string& text, const std::map<std::string, Value>& names = {}) {
  return Expr::parse(text).eval([&](const std::string& n) -> std::optional<Value> {
    auto it = names.find(n);
    if (it == names.end()) return std::nullopt;
    return it->second;
  });
}

Value param(const Experiment& e, const Point& p, const std::string& key) {
  for (const auto& [k, v] : e.params(p)) {
    if (k == key) return v;
  }
  ADD_FAILURE() << "no param " << key;
  return Value::null();
}

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("tessera-sweep-unit-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

// ---------------------------------------------------------------------------------------- expressions

TEST(SweepExpr, ArithmeticKeepsIntegers) {
  EXPECT_EQ(eval("2 + 3 * 4"), Value::of_int(14));
  EXPECT_EQ(eval("(2 + 3) * 4"), Value::of_int(20));
  EXPECT_EQ(eval("256 / 2"), Value::of_int(128));  // exact division stays an int
  EXPECT_EQ(eval("7 / 2"), Value::of_real(3.5));
  EXPECT_EQ(eval("7 // 2"), Value::of_int(3));
  EXPECT_EQ(eval("-7 % 3"), Value::of_int(2));
  EXPECT_EQ(eval("2 ** 10"), Value::of_int(1024));
  EXPECT_EQ(eval("-3 + 1"), Value::of_int(-2));
  EXPECT_EQ(eval("1.5 * 2"), Value::of_real(3.0));
  EXPECT_EQ(eval("min(3, 1, 2) + max(4, 8)"), Value::of_int(9));
  EXPECT_EQ(eval("log2(1024)"), Value::of_real(10));
  EXPECT_EQ(eval("if(2 > 1, 10, 20)"), Value::of_int(10));
}

TEST(SweepExpr, SizesNamesAndComparisons) {
  EXPECT_EQ(eval("32 MiB"), Value::of_int(32 << 20));
  EXPECT_EQ(eval("64KiB + 1"), Value::of_int(65537));
  const std::map<std::string, Value> names = {{"array.rows", Value::of_int(256)},
                                              {"array.cols", Value::of_int(256)},
                                              {"unified_buffer.capacity", Value::of_string("24 MiB")},
                                              {"array.dataflow", Value::of_string("ws")}};
  EXPECT_EQ(eval("array.rows * array.cols <= 65536", names), Value::of_bool(true));
  EXPECT_EQ(eval("array.rows * array.cols < 65536", names), Value::of_bool(false));
  // Size strings from the config read as bytes.
  EXPECT_EQ(eval("unified_buffer.capacity + 4 MiB <= 28 MiB", names), Value::of_bool(true));
  EXPECT_EQ(eval("array.dataflow == \"ws\" and not (array.rows > 512)", names), Value::of_bool(true));
  EXPECT_EQ(eval("array.dataflow != 'ws' || array.rows == 256", names), Value::of_bool(true));
}

TEST(SweepExpr, ErrorsNameTheProblem) {
  auto err = [](const std::string& text) {
    try {
      eval(text, {{"s", Value::of_string("ws")}});
    } catch (const ExprError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(err("nope + 1").find("unknown name 'nope'"), std::string::npos) << err("nope + 1");
  EXPECT_NE(err("1 / 0").find("division by zero"), std::string::npos);
  EXPECT_NE(err("s * 2").find("expected a number"), std::string::npos);
  EXPECT_NE(err("1 +").find("column"), std::string::npos);
  EXPECT_NE(err("1 and true").find("expected true or false"), std::string::npos);
  EXPECT_NE(err("1 < 2 < 3").find("do not chain"), std::string::npos);
}

TEST(SweepExpr, Templates) {
  const Lookup look = [](const std::string& n) -> std::optional<Value> {
    if (n == "array.rows") return Value::of_int(128);
    if (n == "array.dataflow") return Value::of_string("os");
    return std::nullopt;
  };
  EXPECT_EQ(Template::parse("${array.rows}").eval(look), Value::of_int(128));
  EXPECT_EQ(Template::parse("${array.rows} * 2").eval(look), Value::of_int(256));
  EXPECT_EQ(Template::parse("${array.rows * 2} / 4").eval(look), Value::of_int(64));
  EXPECT_EQ(Template::parse("${array.rows} * 1 KiB").eval(look), Value::of_int(128 * 1024));
  EXPECT_EQ(Template::parse("tpu-${array.rows}-${array.dataflow}").eval(look), Value::of_string("tpu-128-os"));
  EXPECT_EQ(Template::parse("${array.dataflow}").eval(look), Value::of_string("os"));
}

// ---------------------------------------------------------------------------------------- expansion

TEST(SweepExpand, GridIsCartesianInOrder) {
  const Experiment e = parse(
      "parameters:\n"
      "  grid:\n"
      "    array.rows: [64, 128, 256]\n"
      "    weight_memory.bandwidth_gb_per_s: [34, 68]\n"
      "    clock_mhz: [700, 1050]\n");
  ASSERT_EQ(e.points.size(), 12u);
  EXPECT_EQ((std::vector<std::string>{"array.rows", "weight_memory.bandwidth_gb_per_s", "clock_mhz"}), e.param_keys);
  // Last axis fastest.
  EXPECT_EQ(param(e, e.points[0], "clock_mhz"), Value::of_int(700));
  EXPECT_EQ(param(e, e.points[1], "clock_mhz"), Value::of_int(1050));
  EXPECT_EQ(param(e, e.points[2], "weight_memory.bandwidth_gb_per_s"), Value::of_int(68));
  EXPECT_EQ(param(e, e.points[11], "array.rows"), Value::of_int(256));
  for (size_t i = 0; i < e.points.size(); ++i) EXPECT_EQ(e.points[i].index, i);
  EXPECT_EQ(e.points[0].batch, 168);  // the workload's own batch
  EXPECT_EQ(e.points[0].workload, "mlp1");
}

TEST(SweepExpand, ZipAdvancesTogetherAndMultipliesWithGrid) {
  const Experiment e = parse(
      "parameters:\n"
      "  zip:\n"
      "    array.rows: [64, 128, 256]\n"
      "    array.cols: [256, 128, 64]\n"
      "  grid:\n"
      "    array.dataflow: [ws, os]\n");
  ASSERT_EQ(e.points.size(), 6u);
  for (const auto& p : e.points) EXPECT_EQ(param(e, p, "array.rows").i * param(e, p, "array.cols").i, 16384);
  EXPECT_EQ(param(e, e.points[0], "array.dataflow"), Value::of_string("ws"));
  EXPECT_EQ(param(e, e.points[1], "array.dataflow"), Value::of_string("os"));

  const std::string err = error_of([] {
    parse("parameters:\n  zip:\n    array.rows: [64, 128]\n    array.cols: [64]\n");
  });
  EXPECT_NE(err.find("test.yaml:7:"), std::string::npos) << err;
  EXPECT_NE(err.find("same length"), std::string::npos) << err;
}

TEST(SweepExpand, PointsBlocksAndBatches) {
  const Experiment e = parse_full(
      "base: configs/tpu-v1.yaml\n"
      "workloads:\n"
      "  - {path: workloads/tpu/mlp1.yaml, batch: [1, 8, 64]}\n"
      "  - workloads/tpu/mlp0.yaml\n"
      "metrics: [summary.latency_s]\n"
      "parameters:\n"
      "  - grid: {array.rows: [64, 128]}\n"
      "  - points:\n"
      "      - {array.rows: 32, clock_mhz: 1000}\n"
      "      - {clock_mhz: 940}\n"
      "      - {array.rows: 64}\n");  // same as a grid point: a duplicate
  // (3 + 1 batches) x (2 + 3) candidates, one duplicate per batch.
  EXPECT_EQ(e.stats.candidates, 20u);
  EXPECT_EQ(e.stats.duplicates, 4u);
  ASSERT_EQ(e.points.size(), 16u);
  // Keys a block does not set take the base config's value.
  EXPECT_EQ(param(e, e.points[0], "clock_mhz"), Value::of_int(700));
  EXPECT_EQ(param(e, e.points[3], "array.rows"), Value::of_int(256));
  EXPECT_EQ(e.points[0].batch, 1);
  EXPECT_EQ(e.points[12].workload, "mlp0");
  EXPECT_EQ(e.points[12].batch, 200);
}

TEST(SweepExpand, RandomSamplesAreSeededAndInRange) {
  const std::string body =
      "parameters:\n"
      "  random:\n"
      "    samples: 40\n"
      "    seed: SEED\n"
      "    params:\n"
      "      array.rows: {pow2: [16, 512]}\n"
      "      weight_memory.bandwidth_gb_per_s: {range: [10.0, 200.0]}\n"
      "      clock_mhz: {range: [500, 1000], step: 100}\n"
      "      array.dataflow: {choices: [ws, os, is]}\n"
      "      accumulators.entries: {range: [1024, 8192], log: true}\n";
  auto with_seed = [&](int seed) {
    std::string b = body;
    b.replace(b.find("SEED"), 4, std::to_string(seed));
    return parse(b);
  };
  const Experiment a = with_seed(7), b = with_seed(7), c = with_seed(8);
  EXPECT_EQ(a.stats.candidates, 40u);
  EXPECT_EQ(a.points.size() + a.stats.duplicates, 40u);
  ASSERT_EQ(a.points.size(), b.points.size());
  for (size_t i = 0; i < a.points.size(); ++i) EXPECT_EQ(a.points[i].id, b.points[i].id);
  EXPECT_NE(a.points[0].id, c.points[0].id);
  std::set<std::string> flows;
  for (const auto& p : a.points) {
    const int64_t rows = param(a, p, "array.rows").i;
    EXPECT_TRUE(rows >= 16 && rows <= 512 && (rows & (rows - 1)) == 0) << rows;
    const Value bw = param(a, p, "weight_memory.bandwidth_gb_per_s");
    EXPECT_EQ(bw.kind, Value::Kind::kReal);
    EXPECT_TRUE(bw.d >= 10 && bw.d < 200);
    const int64_t clock = param(a, p, "clock_mhz").i;
    EXPECT_TRUE(clock >= 500 && clock <= 1000 && clock % 100 == 0) << clock;
    const int64_t entries = param(a, p, "accumulators.entries").i;
    EXPECT_TRUE(entries >= 1024 && entries <= 8192);
    flows.insert(param(a, p, "array.dataflow").s);
  }
  EXPECT_EQ(flows.size(), 3u);
  // The generator itself is pinned: the same numbers on every platform.
  Rng r(42);
  EXPECT_EQ(r.next(), 0xbdd732262feb6e95ULL);
}

TEST(SweepExpand, DerivedKeys) {
  const Experiment e = parse(
      "parameters:\n"
      "  grid: {array.rows: [64, 128]}\n"
      "derived:\n"
      "  array.cols: ${array.rows}\n"
      "  accumulators.entries: ${array.rows} * 16\n"
      "  unified_buffer.read_bytes_per_cycle: ${array.rows / 2}\n"
      "  weight_memory.technology: LPDDR${array.rows - 123}\n"
      "  controller.queue_depth: 4\n"
      "  weight_memory.channels: ${if(batch > 100, 4, 2)}\n");
  ASSERT_EQ(e.points.size(), 2u);
  const Point& p = e.points[1];
  EXPECT_EQ(param(e, p, "array.cols"), Value::of_int(128));
  EXPECT_EQ(param(e, p, "accumulators.entries"), Value::of_int(2048));
  EXPECT_EQ(param(e, p, "unified_buffer.read_bytes_per_cycle"), Value::of_int(64));
  EXPECT_EQ(param(e, p, "weight_memory.technology"), Value::of_string("LPDDR5"));
  EXPECT_EQ(param(e, p, "controller.queue_depth"), Value::of_int(4));
  EXPECT_EQ(param(e, p, "weight_memory.channels"), Value::of_int(4));  // mlp1 batch 168
  EXPECT_EQ(e.param_keys.back(), "weight_memory.channels");

  // The generated config is a valid config with those values.
  const ArchConfig cfg = parse_arch_config(YamlNode::load_string(e.config_yaml(p), "gen.yaml"));
  EXPECT_EQ(cfg.array.rows, 128);
  EXPECT_EQ(cfg.array.cols, 128);
  EXPECT_EQ(cfg.accumulators.entries, 2048);
  EXPECT_EQ(cfg.unified_buffer.read_bytes_per_cycle, 64);
  EXPECT_EQ(cfg.weight_memory.technology, "LPDDR5");
  EXPECT_EQ(cfg.unified_buffer.capacity_bytes, 24u << 20);  // untouched base values survive
  EXPECT_EQ(cfg.array.mac_modes.size(), 4u);

  const std::string err = error_of([] { parse("derived:\n  array.cols: ${array.rowz}\n"); });
  EXPECT_NE(err.find("test.yaml:5:"), std::string::npos) << err;
  EXPECT_NE(err.find("unknown name 'array.rowz'"), std::string::npos) << err;
}

TEST(SweepExpand, ConstraintsPrune) {
  const Experiment e = parse(
      "parameters:\n"
      "  grid:\n"
      "    array.rows: [128, 256, 512]\n"
      "    array.cols: [128, 256, 512]\n"
      "constraints:\n"
      "  - array.rows * array.cols <= 65536\n"
      "  - unified_buffer.capacity + accumulators.entries * array.cols * 4 <= 28 MiB\n");
  // rows*cols <= 65536 keeps 6 of 9; the SRAM budget (24 MiB + 4096*cols*4) drops cols=512.
  EXPECT_EQ(e.stats.candidates, 9u);
  EXPECT_EQ(e.points.size(), 5u);
  EXPECT_EQ(e.stats.pruned, 4u);
  for (const auto& p : e.points) {
    EXPECT_LE(param(e, p, "array.rows").i * param(e, p, "array.cols").i, 65536);
    EXPECT_LT(param(e, p, "array.cols").i, 512);
  }
  const std::string err = error_of([] { parse("constraints:\n  - array.rows + 1\n"); });
  EXPECT_NE(err.find("test.yaml:5:"), std::string::npos) << err;
  EXPECT_NE(err.find("true or false"), std::string::npos) << err;
}

TEST(SweepExpand, UnknownKeysAreErrorsWithLocation) {
  std::string err = error_of([] { parse("parameter:\n  grid: {array.rows: [1]}\n"); });
  EXPECT_NE(err.find("test.yaml:4:1: parameter: unknown key"), std::string::npos) << err;
  err = error_of([] { parse("parameters:\n  grid: {array.rows: [1]}\n  gird: {clock_mhz: [1]}\n"); });
  EXPECT_NE(err.find("test.yaml:6:3"), std::string::npos) << err;
  EXPECT_NE(err.find("unknown key"), std::string::npos) << err;
  // A key the base does not have and the config loader does not know.
  err = error_of([] { parse("parameters:\n  grid:\n    array.rowz: [64]\n"); });
  EXPECT_NE(err.find("test.yaml:6:"), std::string::npos) << err;
  EXPECT_NE(err.find("not a key of the architecture config"), std::string::npos) << err;
  // A key that is optional in configs is fine even if the base leaves it out.
  EXPECT_NO_THROW(parse("parameters:\n  grid:\n    controller.queue_depth: [4, 16]\n"));
  // A mapping cannot take one value.
  err = error_of([] { parse("parameters:\n  grid:\n    array: [64]\n"); });
  EXPECT_NE(err.find("is a mapping in the base config"), std::string::npos) << err;
  err = error_of([] { parse("parameters:\n  random: {samples: 3, params: {clock_mhz: {choices: [1]}}}\n"); });
  EXPECT_NE(err.find("missing required key 'seed'"), std::string::npos) << err;
  err = error_of([] { parse("parameters:\n  grid: {array.rows: [64]}\n  points: [{array.rows: 32}]\n"); });
  EXPECT_NE(err.find("set twice"), std::string::npos) << err;
  err = error_of([] { parse_full("base: configs/nope.yaml\nworkloads: [workloads/tpu/mlp1.yaml]\nmetrics: [a]\n"); });
  EXPECT_NE(err.find("test.yaml:1:7: base: no such config file"), std::string::npos) << err;
}

TEST(SweepExpand, PointIdsAreStableAndContentDerived) {
  const Experiment a = parse("parameters:\n  grid: {array.rows: [64, 128], clock_mhz: [700]}\n");
  const Experiment b = parse("parameters:\n  grid: {clock_mhz: [700, 900], array.rows: [32, 128]}\n");
  // The point (rows 128, clock 700) has one id however the experiment enumerates it.
  std::string id_a, id_b;
  for (const auto& p : a.points) {
    if (param(a, p, "array.rows").i == 128) id_a = p.id;
  }
  for (const auto& p : b.points) {
    if (param(b, p, "array.rows").i == 128 && param(b, p, "clock_mhz").i == 700) id_b = p.id;
  }
  EXPECT_EQ(id_a, id_b);
  EXPECT_EQ(id_a.size(), 16u);
  EXPECT_EQ(point_id("mlp1", 8, {{"array.rows", Value::of_int(64)}}),
            point_id("mlp1", 8, {{"array.rows", Value::of_int(64)}}));
  EXPECT_NE(point_id("mlp1", 8, {{"array.rows", Value::of_int(64)}}),
            point_id("mlp1", 16, {{"array.rows", Value::of_int(64)}}));
}

// ---------------------------------------------------------------------------------------- run options

TEST(SweepRunOptions, PrecisionIsAParameterPassedToTesseraRun) {
  const fs::path dir = temp_dir("precision");
  std::ofstream(dir / "wide.yaml") << "default: {activations: int8, weights: int16}\n";
  const std::string text =
      "base: " + (kSrc / "configs/tpu-v1.yaml").string() + "\n"
      "workloads: [" + (kSrc / "workloads/tpu/mlp1.yaml").string() + "]\n"
      "metrics: [summary.latency_s]\n"
      "parameters:\n"
      "  - grid:\n"
      "      precision: [int8, int16, first-last-int16, wide.yaml, int4]\n"
      "      array.rows: [64, 128]\n"
      "  - points: [{clock_mhz: 940}]\n"
      "derived:\n"
      "  vector_unit.lanes: ${if(precision == \"int16\", 2 * array.rows, array.rows)}\n"
      "constraints:\n"
      "  - not (precision == \"first-last-int16\" and array.rows == 128)\n";
  const Experiment e = parse_experiment(YamlNode::load_string(text, "p.yaml"), dir);
  // 5 x 2 grid points (one pruned) + 1.
  ASSERT_EQ(e.points.size(), 10u);
  EXPECT_EQ(e.param_keys, (std::vector<std::string>{"precision", "array.rows", "clock_mhz", "vector_unit.lanes"}));
  auto args_of = [&](size_t i) { return e.run_arguments(e.points[i]); };
  EXPECT_EQ(param(e, e.points[2], "precision"), Value::of_string("int16"));
  EXPECT_EQ(param(e, e.points[2], "vector_unit.lanes"), Value::of_int(128));  // derived from precision
  EXPECT_EQ(args_of(2), (std::vector<std::string>{"--precision", "int16"}));
  // A policy file is relative to the experiment file; the row keeps the text as written.
  EXPECT_EQ(param(e, e.points[5], "precision"), Value::of_string("wide.yaml"));
  EXPECT_EQ(args_of(5), (std::vector<std::string>{"--precision", (dir / "wide.yaml").string()}));
  // Unknown names go to tessera run as written: the point fails there, not the experiment.
  EXPECT_EQ(args_of(7), (std::vector<std::string>{"--precision", "int4"}));
  // A point that does not set it runs at tessera run's default, and says so.
  EXPECT_EQ(param(e, e.points[9], "precision"), Value::of_string("int8"));
  EXPECT_EQ(param(e, e.points[9], "clock_mhz"), Value::of_int(940));
  // Not a config key: the generated config is valid and does not mention it, except in the comment.
  const std::string cfg = e.config_yaml(e.points[2]);
  EXPECT_NO_THROW(parse_arch_config(YamlNode::load_string(cfg, "gen.yaml")));
  EXPECT_NE(cfg.find("# run with: --precision int16\n"), std::string::npos) << cfg;
  EXPECT_EQ(cfg.find("\nprecision:"), std::string::npos) << cfg;
  // Precision is part of the point's identity.
  EXPECT_NE(e.points[0].id, e.points[2].id);

  std::string err = error_of([] { parse("parameters:\n  grid:\n    precision.weights: [int16]\n"); });
  EXPECT_NE(err.find("test.yaml:6:"), std::string::npos) << err;
  EXPECT_NE(err.find("'precision' is a single value"), std::string::npos) << err;
  fs::remove_all(dir);
}

// A base config that itself starts with `base:` (docs/configs.md, "Composition"): overrides
// apply to the composed tree, and each point's config.yaml stands alone (no `base:` left).
TEST(SweepExpand, ComposedBaseConfigIsWhatOverridesApplyTo) {
  const Experiment e = parse_full("base: configs/tpu-v1-hbm.yaml\nworkloads: [workloads/tpu/mlp1.yaml]\n"
                                  "metrics: [summary.latency_s]\n"
                                  "parameters:\n  - grid: {weight_memory.bandwidth_gb_per_s: [128, 512]}\n");
  ASSERT_EQ(e.points.size(), 2u);
  // Values of both files of the chain: the variant's and TPU v1's.
  EXPECT_EQ(e.base_value("weight_memory.bandwidth_gb_per_s"), Value::of_int(256));
  EXPECT_EQ(e.base_value("array.rows"), Value::of_int(256));
  EXPECT_EQ(e.base_value("name"), Value::of_string("tpu-v1-hbm"));
  const std::string cfg = e.config_yaml(e.points[1]);
  EXPECT_EQ(cfg.find("\nbase:"), std::string::npos) << cfg;
  const ArchConfig c = parse_arch_config(YamlNode::load_string(cfg, "gen.yaml"));
  EXPECT_EQ(c.name, "tpu-v1-hbm");
  EXPECT_EQ(c.weight_memory.technology, "HBM2-PC");
  EXPECT_EQ(c.weight_memory.bandwidth_gb_per_s, 512);
  EXPECT_EQ(c.array.rows, 256);
  EXPECT_EQ(c.unified_buffer.capacity_bytes, 24u << 20);
}

// A workload's --input-value and --batch-axis bindings (issue 15): every point of it gets them.
TEST(SweepRunOptions, OnnxWorkloadsWithInputValuesAndBatchAxes) {
  const fs::path dir = temp_dir("onnx-values");
  std::ofstream(dir / "vad.onnx") << "x";
  const std::string head = "base: " + (kSrc / "configs/tpu-v1.yaml").string() + "\nmetrics: [summary.latency_s]\n";
  auto load = [&](const std::string& body) { return parse_experiment(YamlNode::load_string(head + body, "v.yaml"), dir, {}); };
  const Experiment e = load(
      "workloads:\n"
      "  - {path: vad.onnx, batch: [1, 2], input_values: {sr: 16000, gains: [0.5, 1]}, batch_axes: {state: 1},\n"
      "     input_shape: 'input=1,512'}\n");
  ASSERT_EQ(e.points.size(), 2u);
  EXPECT_EQ(e.run_arguments(e.points[1]),
            (std::vector<std::string>{"--input-shape", "input=1,512", "--input-value", "sr=16000", "--input-value",
                                      "gains=0.5,1", "--batch-axis", "state=1"}));
  std::string err = error_of([&] { load("workloads: [{path: vad.onnx, batch: 1, input_values: {sr: fast}}]\n"); });
  EXPECT_NE(err.find("v.yaml:3:"), std::string::npos) << err;
  EXPECT_NE(err.find("'sr=fast': value 'fast' is not a number"), std::string::npos) << err;
  err = error_of([&] { load("workloads: [{path: vad.onnx, batch: 1, batch_axes: {state: x}}]\n"); });
  EXPECT_NE(err.find("'state=x': axis 'x' is not an integer"), std::string::npos) << err;
  err = error_of([&] { load("workloads: [{path: vad.onnx, batch: 1, input_values: [sr=1]}]\n"); });
  EXPECT_NE(err.find("expected a mapping NAME: value, e.g. {sr: 16000}"), std::string::npos) << err;
  err = error_of([&] {
    load("workloads: [{path: " + (kSrc / "workloads/tpu/mlp1.yaml").string() + ", input_values: {x: 1}}]\n");
  });
  EXPECT_NE(err.find("input_values bind the inputs of ONNX models (*.onnx)"), std::string::npos) << err;
  fs::remove_all(dir);
}

TEST(SweepRunOptions, OnnxWorkloadsWithInputShapes) {
  const fs::path dir = temp_dir("onnx");
  // The loader only needs the files to exist; the importer reads them when a point runs.
  std::ofstream(dir / "bert.onnx") << "x";
  fs::create_directories(dir / "build/workloads/onnx");
  std::ofstream(dir / "build/workloads/onnx/resnet.onnx") << "x";
  const std::string head = "base: " + (kSrc / "configs/tpu-v1.yaml").string() + "\nmetrics: [summary.latency_s]\n";
  auto load = [&](const std::string& body) {
    return parse_experiment(YamlNode::load_string(head + body, "o.yaml"), dir, {.build_dir = dir / "build"});
  };
  const Experiment e = load(
      "workloads:\n"
      "  - {path: bert.onnx, batch: 1, input_shapes: {input_ids: [1, 64], token_type_ids: '1,64'}, name: bert64}\n"
      "  - {path: bert.onnx, batch: [1, 4], name: bert}\n"
      "  - path: ${build}/workloads/onnx/resnet.onnx\n"
      "    batch: 1\n"
      "    input_shape: input=1,3,224,224\n"
      "parameters:\n"
      "  grid:\n"
      "    input_shape.input_ids: ['1,128', '1,256']\n"
      "    input_shape.past.0.key: [7]\n");
  // (1 + 2 + 1 batches) x 2 x 1.
  ASSERT_EQ(e.points.size(), 8u);
  EXPECT_EQ(e.workloads[2].path, dir / "build/workloads/onnx/resnet.onnx");
  EXPECT_EQ(e.workloads[2].name, "resnet");
  EXPECT_TRUE(e.workloads[0].onnx);
  EXPECT_EQ(param(e, e.points[1], "input_shape.input_ids"), Value::of_string("1,256"));
  // The swept binding replaces the workload's own one of the same input; the others stay.
  EXPECT_EQ(e.run_arguments(e.points[1]),
            (std::vector<std::string>{"--input-shape", "input_ids=1,256", "--input-shape", "token_type_ids=1,64",
                                      "--input-shape", "past.0.key=7"}));
  EXPECT_EQ(e.run_arguments(e.points[6]),
            (std::vector<std::string>{"--input-shape", "input=1,3,224,224", "--input-shape", "input_ids=1,128",
                                      "--input-shape", "past.0.key=7"}));
  EXPECT_NO_THROW(parse_arch_config(YamlNode::load_string(e.config_yaml(e.points[1]), "gen.yaml")));
  // Input shapes in expressions: a sequence length drives a derived key.
  const Experiment d = load(
      "workloads: [{path: bert.onnx, batch: 1}]\n"
      "parameters: {grid: {input_shape.sequence: [64, 128]}}\n"
      "derived: {unified_buffer.capacity: '${input_shape.sequence} * 64 KiB'}\n");
  EXPECT_EQ(param(d, d.points[1], "unified_buffer.capacity"), Value::of_int(8 << 20));
  EXPECT_EQ(d.run_arguments(d.points[1]), (std::vector<std::string>{"--input-shape", "sequence=128"}));

  std::string err = error_of([&] { load("workloads: [{path: bert.onnx, batch: 1, input_shape: 'input_ids=1,x'}]\n"); });
  EXPECT_NE(err.find("o.yaml:3:"), std::string::npos) << err;
  EXPECT_NE(err.find("dimension 'x' is not a positive integer"), std::string::npos) << err;
  err = error_of([&] { load("workloads: [{path: bert.onnx, batch: 1, input_shapes: {input_ids: [1, 0]}}]\n"); });
  EXPECT_NE(err.find("input_shapes.input_ids"), std::string::npos) << err;
  err = error_of([&] { load("workloads: [{path: bert.onnx, batch: 1, input_shapes: [a=1, a=2]}]\n"); });
  EXPECT_NE(err.find("input 'a' is bound twice"), std::string::npos) << err;
  err = error_of([&] {
    load("workloads: [{path: " + (kSrc / "workloads/tpu/mlp1.yaml").string() + ", input_shapes: {x: [1, 2]}}]\n");
  });
  EXPECT_NE(err.find("is a YAML graph"), std::string::npos) << err;
  // A swept input shape on a YAML graph is an error before anything runs.
  err = error_of([&] {
    load("workloads: [{path: bert.onnx, batch: 1}, " + (kSrc / "workloads/tpu/mlp1.yaml").string() + "]\n"
         "parameters: {grid: {input_shape.sequence: [64]}}\n");
  });
  EXPECT_NE(err.find("o.yaml:4:"), std::string::npos) << err;
  EXPECT_NE(err.find("workload 'mlp1' is a YAML graph"), std::string::npos) << err;
  // A model the build has not generated yet says to build first.
  err = error_of([&] { load("workloads: [{path: '${build}/workloads/onnx/bert_base.onnx', batch: 1}]\n"); });
  EXPECT_NE(err.find("no such workload file '" + (dir / "build/workloads/onnx/bert_base.onnx").string()), std::string::npos) << err;
  EXPECT_NE(err.find("generated by the build: run `cmake --build"), std::string::npos) << err;
  err = error_of([&] { load("workloads: [{path: '${src}/x.onnx', batch: 1}]\n"); });
  EXPECT_NE(err.find("the only variable in paths is ${build}"), std::string::npos) << err;
  err = error_of([&] {
    parse_experiment(YamlNode::load_string(head + "workloads: [{path: '${build}/x.onnx', batch: 1}]\n", "o.yaml"), dir);
  });
  EXPECT_NE(err.find("${build} (the build directory) is not known here"), std::string::npos) << err;
  fs::remove_all(dir);
}

TEST(SweepExpand, ShippedExperimentsLoad) {
  const fs::path onnx_dir = fs::path(TESSERA_BINARY_DIR) / "workloads/onnx";
  const bool have_onnx = fs::exists(onnx_dir / "resnet50.onnx") && fs::exists(onnx_dir / "bert_base.onnx");
  for (const char* name : {"smoke", "tpu-bandwidth", "resnet50-aspect-dataflow", "bert-precision-buffer"}) {
    const bool needs_onnx = std::string(name) != "smoke" && std::string(name) != "tpu-bandwidth";
    if (needs_onnx && !have_onnx) continue;  // not generated in this build (no python3-onnx)
    const Experiment e = load_experiment(kSrc / "experiments" / (std::string(name) + ".yaml"),
                                         {.build_dir = TESSERA_BINARY_DIR});
    EXPECT_GT(e.points.size(), 0u) << name;
    for (const auto& p : e.points) {
      // Every generated config that should be valid parses (smoke has one deliberate failure).
      try {
        parse_arch_config(YamlNode::load_string(e.config_yaml(p), "gen.yaml"));
      } catch (const InputError& err) {
        EXPECT_EQ(std::string(name), "smoke") << err.what();
      }
    }
  }
  const Experiment smoke = load_experiment(kSrc / "experiments/smoke.yaml");
  EXPECT_EQ(smoke.points.size(), 10u);
  EXPECT_EQ(smoke.stats.pruned, 2u);
}

// ---------------------------------------------------------------------------------------- rows and files

TEST(SweepResults, JsonlRowFormat) {
  const Experiment e = parse("parameters:\n  grid: {array.rows: [64], array.dataflow: [ws]}\n");
  const Point& p = e.points[0];
  nlohmann::json report = {{"summary", {{"latency_s", 0.25}, {"cycles", {{"total", 100}}}}}};
  Row ok = row_from_report(e, p, report);
  EXPECT_TRUE(ok.ok);
  EXPECT_EQ(row_to_jsonl(ok), "{\"point\":\"" + p.id +
                                  "\",\"index\":0,\"workload\":\"mlp1\",\"batch\":168,\"params\":{\"array.rows\":64,"
                                  "\"array.dataflow\":\"ws\"},\"status\":\"ok\",\"error\":null,\"metrics\":{"
                                  "\"summary.latency_s\":0.25}}\n");
  auto back = row_from_jsonl(row_to_jsonl(ok).substr(0, row_to_jsonl(ok).size() - 1));
  ASSERT_TRUE(back);
  EXPECT_EQ(row_to_jsonl(*back), row_to_jsonl(ok));
  EXPECT_EQ(csv_header(e), "point,index,workload,batch,status,error,array.rows,array.dataflow,summary.latency_s\n");
  EXPECT_EQ(row_to_csv(e, ok), p.id + ",0,mlp1,168,ok,,64,ws,0.25\n");

  Row bad = failed_row(e, p, "exit 2: tessera: error: x.yaml:1:2: a, b: \"bad\"\nsecond line");
  EXPECT_EQ(row_to_csv(e, bad), p.id + ",0,mlp1,168,failed,\"exit 2: tessera: error: x.yaml:1:2: a, b: \"\"bad\"\"\nsecond line\",64,ws,\n");
  EXPECT_NE(row_to_jsonl(bad).find("\"status\":\"failed\",\"error\":\"exit 2"), std::string::npos);
  EXPECT_NE(row_to_jsonl(bad).find("\"metrics\":{\"summary.latency_s\":null}"), std::string::npos);

  // A metric the report does not have fails the point, naming what is there.
  Row missing = row_from_report(e, p, {{"summary", {{"latency", 1}}}});
  EXPECT_FALSE(missing.ok);
  EXPECT_NE(missing.error.find("no 'summary.latency_s' (keys under summary: latency)"), std::string::npos) << missing.error;
  EXPECT_FALSE(row_from_jsonl("{\"point\":\"abc\""));
}

TEST(SweepResults, ResumeDropsTornLineAndKeepsEachPointOnce) {
  const Experiment e = parse("parameters:\n  grid: {array.rows: [32, 64, 128]}\n");
  const fs::path dir = temp_dir("store");
  nlohmann::json report = {{"summary", {{"latency_s", 1.0}}}};
  {
    ResultStore store(e, dir, false, false);
    store.append(row_from_report(e, e.points[0], report));
    store.append(row_from_report(e, e.points[0], report));  // ignored: already there
    store.append(failed_row(e, e.points[1], "boom"));
    // A second writer on the same directory is refused.
    EXPECT_NE(error_of([&] { ResultStore other(e, dir, true, false); }).find("another sweep"), std::string::npos);
  }
  EXPECT_NE(error_of([&] { ResultStore again(e, dir, false, false); }).find("--resume"), std::string::npos);
  {
    // Simulate a kill in the middle of a write.
    std::ofstream torn(dir / "results.jsonl", std::ios::app);
    torn << "{\"point\":\"" << e.points[2].id << "\",\"index\":2,\"wor";
  }
  {
    ResultStore store(e, dir, true, false);
    EXPECT_EQ(store.dropped_torn(), 1u);
    EXPECT_EQ(store.done().size(), 2u);
    EXPECT_FALSE(store.done().count(e.points[2].id));
    store.append(row_from_report(e, e.points[2], report));
  }
  const auto rows = read_results(dir / "results.jsonl");
  EXPECT_EQ(rows.rows.size(), 3u);
  EXPECT_EQ(rows.torn, 0u);
  const std::string csv = slurp(dir / "results.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 4);  // header + 3 rows, rebuilt from the JSONL
  {
    ResultStore store(e, dir, true, true);  // --retry-failed: the failed row goes
    EXPECT_EQ(store.done().size(), 2u);
    EXPECT_FALSE(store.done().count(e.points[1].id));
  }
  // Other columns (a changed experiment) are refused.
  const Experiment other = parse("parameters:\n  grid: {clock_mhz: [700]}\n");
  EXPECT_NE(error_of([&] { ResultStore s(other, dir, true, false); }).find("other columns"), std::string::npos);
  fs::remove_all(dir);
}

TEST(SweepSummary, ParetoFront) {
  const std::vector<std::vector<double>> v = {{1, 10}, {2, 5}, {3, 5}, {4, 1}, {2, 5}, {5, 5}};
  EXPECT_EQ(pareto_front(v, {true, true}), (std::vector<size_t>{0, 1, 3, 4}));
  EXPECT_EQ(pareto_front(v, {false, false}), (std::vector<size_t>{0, 5}));
  EXPECT_EQ(pareto_front(v, {true, false}), (std::vector<size_t>{0}));
}
