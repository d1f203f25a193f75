// Integration tests: the real `tessera` executable on shipped configs and workloads.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "tests/support/run_cli.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string kSrc = TESSERA_SOURCE_DIR;
const std::string kBin = std::string(TESSERA_BINARY_DIR) + "/tessera";

using Result = tessera_test::CliResult;
using tessera_test::slurp;

Result tessera(const std::string& args) { return tessera_test::run_tessera(args); }

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::path(TESSERA_BINARY_DIR) / "test-out" / name;
  fs::remove_all(dir);
  fs::create_directories(dir.parent_path());
  return dir;
}

const char* kBuckets[] = {"array_active", "weight_shift", "weight_stall", "input_stall", "raw_stall", "non_matrix", "pcie"};

}  // namespace

TEST(Cli, RunWritesCompleteReport) {
  const fs::path out = scratch("mlp1");
  const Result r = tessera("run --arch configs/tpu-v1.yaml --workload workloads/tpu/mlp1.yaml --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("mlp1 on tpu-v1, batch 168"), std::string::npos) << r.output;
  const json rep = json::parse(slurp(out / "report.json"));
  for (const char* key : {"arch", "workload", "summary", "layers", "roofline", "baselines"}) {
    EXPECT_TRUE(rep.contains(key)) << key;
  }
  const json& s = rep["summary"];
  for (const char* key : {"latency_s", "latency_cycles", "inferences_per_s", "ops", "tops", "peak_tops", "utilization",
                          "oi_ops_per_weight_byte", "oi_macs_per_weight_byte", "oi_ops_per_dram_byte", "cycles"}) {
    EXPECT_TRUE(s.contains(key)) << key;
  }
  // The breakdown covers every cycle exactly once, overall and over the layers.
  int64_t sum = 0, layer_sum = 0;
  for (const char* b : kBuckets) {
    sum += s["cycles"][b].get<int64_t>();
    layer_sum += s["host_io_cycles"][b].get<int64_t>();
    for (const auto& l : rep["layers"]) layer_sum += l["cycles"][b].get<int64_t>();
  }
  EXPECT_EQ(sum, s["latency_cycles"].get<int64_t>());
  EXPECT_EQ(s["cycles"]["total"].get<int64_t>(), sum);
  EXPECT_EQ(layer_sum, sum);
  // latency_s is the cycle count at 700 MHz; ops = 2 x MACs; OI from the bytes moved.
  EXPECT_DOUBLE_EQ(s["latency_s"].get<double>(), static_cast<double>(sum) / 700e6);
  EXPECT_DOUBLE_EQ(s["ops"].get<double>(), 2.0 * s["macs"].get<double>());
  EXPECT_EQ(s["macs"].get<int64_t>(), rep["workload"]["macs"].get<int64_t>());
  // MLP: MACs per weight = batch; tpu-v1 fetches whole 256x256 tiles (weight_memory.fetch: tile), so
  // MLP1's 1500x1000, 1000x2000, 2000x600 and 600x500 layers (5,000,000 weights) read 24 + 32 + 24 + 6
  // = 86 tiles of 65,536 bytes: 168 x 5,000,000 / 5,636,096 MACs per weight byte fetched.
  EXPECT_NEAR(s["oi_macs_per_weight_byte"].get<double>(), 168.0 * 5000000 / (86 * 65536.0), 1e-9);
  EXPECT_EQ(rep["layers"].size(), 4u);
  // layers.csv: a header and one row per layer; summary.md names the breakdown.
  const std::string csv = slurp(out / "layers.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5);
  EXPECT_NE(slurp(out / "summary.md").find("## Cycle breakdown"), std::string::npos);
}

TEST(Cli, ReportsAreByteIdenticalAcrossRuns) {
  const fs::path a = scratch("det-a"), b = scratch("det-b");
  for (const auto& dir : {a, b}) {
    const Result r = tessera("run -q -a configs/tpu-v1.yaml -w workloads/tpu/lstm0.yaml -o " + dir.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  for (const char* f : {"report.json", "layers.csv", "summary.md"}) {
    EXPECT_EQ(slurp(a / f), slurp(b / f)) << f;
  }
}

// Golden summaries of the six TPU-paper apps on tpu-v1: any change to the timing
// model shows up here. Regenerate with TESSERA_UPDATE_GOLDEN=1 after checking why.
class GoldenApps : public ::testing::TestWithParam<const char*> {};

TEST_P(GoldenApps, SummaryMatchesGolden) {
  const std::string app = GetParam();
  const fs::path out = scratch("golden-" + app);
  const Result r = tessera("run -q -a configs/tpu-v1.yaml -w workloads/tpu/" + app + ".yaml -o " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json rep = json::parse(slurp(out / "report.json"));
  json got;
  got["latency_cycles"] = rep["summary"]["latency_cycles"];
  got["cycles"] = rep["summary"]["cycles"];
  // The TPU paper's Table 3 from the counters (sim/report/tpu_paper_view.h): the split causes and
  // each row's count (rows 1-8).
  got["cycles_split"] = rep["summary"]["cycles_split"];
  for (const auto& row : rep["table3"]["rows"]) {
    if (row.contains("count")) got["table3_counts"].push_back(row["count"]);
  }
  got["macs"] = rep["summary"]["macs"];
  got["weight_memory_bytes"] = rep["summary"]["weight_memory_bytes"];
  got["instructions"] = rep["summary"]["instructions"];
  // Energy, power and area (docs/energy.md), to 9 significant digits: a change to the energy
  // model or to tpu-v1.yaml's coefficients shows up here too.
  auto sig = [](const json& v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", v.get<double>());
    return std::string(buf);
  };
  got["energy_j"] = sig(rep["summary"]["energy_j"]);
  got["power_w"] = sig(rep["summary"]["power_w"]);
  got["area_mm2"] = sig(rep["summary"]["area_mm2"]);
  for (const auto& [k, v] : rep["summary"]["energy_breakdown_j"].items()) got["energy_breakdown_j"][k] = sig(v);
  const fs::path golden = fs::path(kSrc) / "tests/golden" / ("tpu-v1-" + app + ".json");
  if (std::getenv("TESSERA_UPDATE_GOLDEN")) {
    std::ofstream(golden) << got.dump(2) << "\n";
  }
  ASSERT_TRUE(fs::exists(golden)) << golden;
  EXPECT_EQ(got, json::parse(slurp(golden))) << "got " << got.dump(2);
}

INSTANTIATE_TEST_SUITE_P(TpuPaperApps, GoldenApps,
                         ::testing::Values("mlp0", "mlp1", "lstm0", "lstm1", "cnn0", "cnn1"));

// The compact program (issue 19) and the expanded one (--expanded-program: every
// instruction stored) give byte-identical reports and traces on every golden app, on the
// BERT layer on tpu-v1 and on the 32x32 edge-npu-32.
// The golden apps and the BERT layer, on the configs that run them.
std::vector<std::pair<const char*, const char*>> golden_pairs() {
  return {{"configs/tpu-v1.yaml", "workloads/tpu/mlp0.yaml"},  {"configs/tpu-v1.yaml", "workloads/tpu/mlp1.yaml"},
          {"configs/tpu-v1.yaml", "workloads/tpu/lstm0.yaml"}, {"configs/tpu-v1.yaml", "workloads/tpu/lstm1.yaml"},
          {"configs/tpu-v1.yaml", "workloads/tpu/cnn0.yaml"},  {"configs/tpu-v1.yaml", "workloads/tpu/cnn1.yaml"},
          {"configs/tpu-v1.yaml", "workloads/bert_layer.yaml"}, {"configs/edge-npu-32.yaml", "workloads/bert_layer.yaml"}};
}

class CompactMatchesExpanded : public ::testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(CompactMatchesExpanded, ReportsAndTraceAreByteIdentical) {
  const auto [arch, workload] = GetParam();
  const std::string name = fs::path(arch).stem().string() + "-" + fs::path(workload).stem().string();
  const fs::path a = scratch("compact-" + name), b = scratch("expanded-" + name);
  for (const auto& [dir, flag] : {std::pair{a, ""}, std::pair{b, " --expanded-program"}}) {
    const Result r = tessera("run -q -a " + std::string(arch) + " -w " + workload + " -o " + dir.string() + " --trace " +
                             dir.string() + ".trace.json" + flag);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  for (const char* f : {"report.json", "layers.csv", "summary.md"}) {
    EXPECT_EQ(slurp(a / f), slurp(b / f)) << f;
  }
  EXPECT_EQ(slurp(a.string() + ".trace.json"), slurp(b.string() + ".trace.json"));
}

INSTANTIATE_TEST_SUITE_P(
    Goldens, CompactMatchesExpanded,
    ::testing::ValuesIn(golden_pairs()));

// Without --trace the cycle breakdown is classified as the run goes, from logs that merge
// what it cannot tell apart; with it, once at the end from every interval (issue 19). The
// reports must not differ.
class TraceDoesNotChangeTheReport : public ::testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(TraceDoesNotChangeTheReport, ReportsAreByteIdentical) {
  const auto [arch, workload] = GetParam();
  const std::string name = fs::path(arch).stem().string() + "-" + fs::path(workload).stem().string();
  const fs::path a = scratch("untraced-" + name), b = scratch("traced-" + name);
  Result r = tessera("run -q -a " + std::string(arch) + " -w " + workload + " -o " + a.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = tessera("run -q -a " + std::string(arch) + " -w " + workload + " -o " + b.string() + " --trace " + b.string() + ".trace.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* f : {"report.json", "layers.csv", "summary.md"}) {
    EXPECT_EQ(slurp(a / f), slurp(b / f)) << f;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Goldens, TraceDoesNotChangeTheReport,
    ::testing::ValuesIn([] {
      auto pairs = golden_pairs();  // and the other dataflows and memories
      pairs.insert(pairs.end(), {{"configs/os-128.yaml", "workloads/tpu/cnn0.yaml"},
                                 {"configs/is-64.yaml", "workloads/tpu/lstm1.yaml"},
                                 {"configs/tpu-v1-hbm.yaml", "workloads/tpu/mlp1.yaml"}});
      return pairs;
    }()));

TEST(Cli, CompilePrintsTheCompactProgramOrExpandsIt) {
  const Result c = tessera("compile -a configs/tpu-v1.yaml -w workloads/tpu/mlp0.yaml");
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("# compact form: "), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("repeat "), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("; step "), std::string::npos) << c.output;
  const Result e = tessera("compile --expand -a configs/tpu-v1.yaml -w workloads/tpu/mlp0.yaml");
  ASSERT_EQ(e.exit_code, 0) << e.output;
  EXPECT_EQ(e.output.find("repeat "), std::string::npos);
  // One line per instruction (numbered from 0), the header and the layer comments.
  EXPECT_NE(e.output.find("\n646\thalt\n"), std::string::npos);  // mlp0: 647 instructions
  EXPECT_LT(c.output.size(), e.output.size());
  const Result h = tessera("compile --help");
  EXPECT_NE(h.output.find("--expand"), std::string::npos);
  EXPECT_NE(h.output.find("--expanded-program"), std::string::npos);
}

TEST(Cli, CompilePrintsTheProgram) {
  const Result r = tessera("compile -a configs/tpu-v1.yaml -w workloads/tpu/mlp1.yaml --batch 8");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("# program for workload 'mlp1' on 'tpu-v1', batch 8"), std::string::npos);
  EXPECT_NE(r.output.find("matmul m=8 k=256 n=256 int8xint8"), std::string::npos);
  EXPECT_NE(r.output.find("halt"), std::string::npos);
}

TEST(Cli, HelpTeaches) {
  const Result r = tessera("run --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("--arch"), std::string::npos);
  EXPECT_NE(r.output.find("sums to the total"), std::string::npos);
}

TEST(CliErrors, BadConfigIsExitCodeTwoWithLocation) {
  const fs::path dir = scratch("badcfg");
  fs::create_directories(dir);
  std::string cfg = slurp(fs::path(kSrc) / "configs/tpu-v1.yaml");
  cfg.replace(cfg.find("  rows: 256"), 10, "  rowz: 256");
  std::ofstream(dir / "bad.yaml") << cfg;
  const Result r = tessera("run -a " + (dir / "bad.yaml").string() + " -w workloads/tpu/mlp1.yaml -o " + (dir / "out").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("bad.yaml:10:3: array.rowz: unknown key"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "out" / "report.json"));
}

// --ideal-memory (issue 16 item 7): the report says so, weight memory and PCIe take no
// time, and the bytes are the same as in the normal run.
TEST(Cli, IdealMemoryFlag) {
  const fs::path normal = scratch("ideal-off"), ideal = scratch("ideal-on");
  const std::string args = "run -q -a configs/tpu-v1.yaml -w workloads/tpu/mlp1.yaml --batch 8 -o ";
  Result r = tessera(args + normal.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = tessera(args + ideal.string() + " --ideal-memory");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json a = json::parse(slurp(normal / "report.json")), b = json::parse(slurp(ideal / "report.json"));
  EXPECT_EQ(a["arch"]["ideal_memory"], false);
  EXPECT_EQ(b["arch"]["ideal_memory"], true);
  EXPECT_EQ(a["arch"]["weight_memory"]["fetch"], "tile");
  EXPECT_GT(a["summary"]["cycles"]["weight_stall"].get<int64_t>(), 0);
  // Left in weight_stall: the controller issuing the first four read_weights (issue_cycles:
  // 1) before the first matmul, cycles [0, 4); the breakdown books issue time by the
  // instruction being issued (sim/engine/engine.cpp). No cycle waits for weight memory.
  EXPECT_EQ(b["summary"]["cycles"]["weight_stall"], 4);
  EXPECT_EQ(b["summary"]["cycles"]["pcie"], 0);
  EXPECT_EQ(b["summary"]["busy_cycles"]["weight_memory"], 0);
  EXPECT_EQ(b["summary"]["busy_cycles"]["pcie"], 0);
  EXPECT_EQ(b["summary"]["weight_memory_bytes"], a["summary"]["weight_memory_bytes"]);
  EXPECT_EQ(b["summary"]["pcie_bytes_to_device"], a["summary"]["pcie_bytes_to_device"]);
  EXPECT_EQ(b["summary"]["pcie_bytes_to_host"], a["summary"]["pcie_bytes_to_host"]);
  EXPECT_EQ(b["summary"]["macs"], a["summary"]["macs"]);
  EXPECT_LT(b["summary"]["latency_cycles"].get<int64_t>(), a["summary"]["latency_cycles"].get<int64_t>());
}

// --residency weights=host (docs/configs.md "residency"): the weight fetchers read every
// weight tile over PCIe instead of from weight memory. The same tiles move (mlp1 on TPU v1,
// fetch: tile), so PCIe carries the input plus exactly the bytes weight memory served in the
// normal run, weight memory serves none, and the run is slower (PCIe: 14 GB/s against
// 30 GB/s of DDR3).
TEST(Cli, HostResidentWeightsCrossPcie) {
  const fs::path normal = scratch("weights-device"), host = scratch("weights-host");
  const std::string args = "run -q -a configs/tpu-v1.yaml -w workloads/tpu/mlp1.yaml --batch 8 -o ";
  Result r = tessera(args + normal.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = tessera(args + host.string() + " --residency weights=host");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json a = json::parse(slurp(normal / "report.json")), b = json::parse(slurp(host / "report.json"));
  EXPECT_EQ(a["arch"].count("chip"), 0u);  // TPU v1's report is unchanged
  EXPECT_EQ(b["arch"]["chip"]["residency"]["weights"], "host");
  EXPECT_EQ(b["arch"]["chip"]["residency"]["inputs"], "host");
  const auto weight_bytes = a["summary"]["weight_memory_bytes"].get<uint64_t>();
  EXPECT_GT(weight_bytes, 0u);
  EXPECT_EQ(b["summary"]["weight_memory_bytes"], 0);
  EXPECT_EQ(b["workload"]["host_weight_bytes"], weight_bytes);
  EXPECT_EQ(b["summary"]["pcie_bytes_to_device"].get<uint64_t>(),
            a["summary"]["pcie_bytes_to_device"].get<uint64_t>() + weight_bytes);
  EXPECT_EQ(b["summary"]["pcie_bytes_to_host"], a["summary"]["pcie_bytes_to_host"]);
  EXPECT_EQ(b["summary"]["macs"], a["summary"]["macs"]);
  EXPECT_GT(b["summary"]["latency_cycles"].get<int64_t>(), a["summary"]["latency_cycles"].get<int64_t>());
  // The array waits for its weights on the host link: those cycles are pcie (pcie_input), not
  // weight_stall (measured: 253,930 of 277,570 cycles pcie, 1 weight_stall; the hand-derived
  // count is ChipTemplate.HostResidentWeightsCrossPcieAtTheLinkRate).
  const auto& cb = b["summary"]["cycles"];
  EXPECT_LT(cb["weight_stall"].get<int64_t>() * 1000, cb["pcie"].get<int64_t>());
  EXPECT_GT(b["summary"]["cycles_split"]["pcie_input"].get<double>(), 0.9 * cb["total"].get<double>());
}

TEST(CliErrors, IdealMemoryMustBeABool) {
  const fs::path dir = scratch("badideal");
  fs::create_directories(dir);
  std::ofstream(dir / "bad.yaml") << slurp(fs::path(kSrc) / "configs/tpu-v1.yaml") << "ideal_memory: sometimes\n";
  const Result r = tessera("run -a " + (dir / "bad.yaml").string() + " -w workloads/tpu/mlp1.yaml -o " + (dir / "out").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("ideal_memory"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "out" / "report.json"));
}

TEST(CliErrors, MissingFileAndBadBatch) {
  Result r = tessera("run -a configs/nope.yaml -w workloads/tpu/mlp1.yaml -o /tmp/x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("configs/nope.yaml"), std::string::npos) << r.output;
  r = tessera("run -a configs/tpu-v1.yaml -w workloads/tpu/mlp1.yaml -o /tmp/x --batch 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--batch"), std::string::npos) << r.output;
}

TEST(CliErrors, UnsupportedOpInWorkload) {
  const fs::path dir = scratch("badop");
  fs::create_directories(dir);
  std::ofstream(dir / "g.yaml") << "name: g\ninputs: [{name: x, shape: [4]}]\nlayers:\n  - {name: s, op: softmaxx}\n";
  const Result r = tessera("run -a configs/tpu-v1.yaml -w " + (dir / "g.yaml").string() + " -o " + (dir / "out").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("g.yaml:4:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("unsupported op 'softmaxx'"), std::string::npos) << r.output;
}

TEST(CliErrors, UnwritableOutputDirectory) {
  const Result r = tessera("run -q -a configs/tpu-v1.yaml -w workloads/tpu/mlp1.yaml -o /dev/null/out");
  if (tessera_test::systemc_asan_false_positive(r)) GTEST_SKIP() << "ASan + SystemC stack switching (docs/reliability.md)";
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("/dev/null/out: cannot create output directory"), std::string::npos) << r.output;
}

TEST(CliErrors, WorkloadTooBigForTheBufferNamesTheLayer) {
  // edge-npu-32 runs cnn1 with spills now; with a 2 KiB buffer not even conv1's smallest row tile fits.
  const fs::path dir = scratch("tiny-ub");
  fs::create_directories(dir);
  std::string arch = slurp(fs::path(kSrc) / "configs/edge-npu-32.yaml");
  arch.replace(arch.find("capacity: 512 KiB"), std::string("capacity: 512 KiB").size(), "capacity: 2 KiB");
  std::ofstream(dir / "arch.yaml") << arch;
  const Result r = tessera("run -q -a " + (dir / "arch.yaml").string() + " -w workloads/tpu/cnn1.yaml -o " +
                           (dir / "out").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("layer 'conv1' (conv2d) needs"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("smallest tile"), std::string::npos) << r.output;
}

// --baseline and --trace through the real executable (the numbers themselves are tested
// in tests/models/baseline and tests/sim/report).
TEST(CliBaselines, NamedBaselinesLandInEveryReportFile) {
  const fs::path out = scratch("mlp0-baselines");
  const Result r = tessera("run -a configs/tpu-v1.yaml -w workloads/tpu/mlp0.yaml -b 16 -o " + out.string() +
                           " --baseline haswell-e5-2699v3,k80");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json rep = json::parse(slurp(out / "report.json"));
  ASSERT_EQ(rep["baselines"].size(), 2u);
  EXPECT_EQ(rep["baselines"][0]["name"], "haswell-e5-2699v3");
  EXPECT_EQ(rep["baselines"][1]["name"], "k80");
  const double acc_s = rep["summary"]["latency_s"].get<double>();
  for (const auto& b : rep["baselines"]) {
    EXPECT_FALSE(b["measured"].get<bool>());
    EXPECT_EQ(b["layers"].size(), rep["layers"].size());
    // speed-up of the accelerator = baseline latency / accelerator latency
    EXPECT_DOUBLE_EQ(b["speedup_of_accelerator"].get<double>(), b["summary"]["latency_s"].get<double>() / acc_s);
    EXPECT_GT(b["speedup_of_accelerator"].get<double>(), 1.0) << b["name"];  // TPU v1 beats both on MLP0
  }
  const std::string md = slurp(out / "summary.md");
  EXPECT_NE(md.find("## Baselines"), std::string::npos) << md;
  EXPECT_NE(md.find("K80"), std::string::npos) << md;
  EXPECT_NE(r.output.find("k80"), std::string::npos) << r.output;  // console block
}

TEST(CliBaselines, AllNamesEverySpecAndUnknownNameIsExitTwo) {
  const fs::path out = scratch("mlp0-all");
  Result r = tessera("run -a configs/tpu-v1.yaml -w workloads/tpu/mlp0.yaml -b 16 -q -o " + out.string() +
                     " --baseline all");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json rep = json::parse(slurp(out / "report.json"));
  size_t specs = 0;
  for (const auto& e : fs::directory_iterator(fs::path(kSrc) / "configs" / "baselines")) {
    specs += e.path().extension() == ".yaml";
  }
  EXPECT_EQ(rep["baselines"].size(), specs);

  const fs::path bad = scratch("mlp0-bad-baseline");
  r = tessera("run -a configs/tpu-v1.yaml -w workloads/tpu/mlp0.yaml -o " + bad.string() + " --baseline k80,tpu-v9");
  if (tessera_test::systemc_asan_false_positive(r)) GTEST_SKIP() << "ASan + SystemC stack switching (docs/reliability.md)";
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("tpu-v9"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("k80"), std::string::npos) << r.output;  // the list of available ones
  EXPECT_FALSE(fs::exists(bad / "report.json"));
}

TEST(CliTrace, TraceIsChromeJsonWithOneTrackPerUnit) {
  const fs::path out = scratch("mlp0-trace");
  const fs::path trace = out.string() + "-trace.json";
  fs::remove(trace);
  const Result r = tessera("run -a configs/tpu-v1.yaml -w workloads/tpu/mlp0.yaml -b 16 -q -o " + out.string() +
                           " --trace " + trace.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json t = json::parse(slurp(trace));
  ASSERT_TRUE(t["traceEvents"].is_array());
  std::set<std::string> tracks;
  double array_us = 0;
  std::map<int, std::string> tid_name;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") tid_name[e["tid"].get<int>()] = e["args"]["name"];
  }
  for (const auto& e : t["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("tid")) << e.dump();
    if (e["ph"] != "X") continue;
    ASSERT_GE(e["dur"].get<double>(), 0.0);
    tracks.insert(tid_name.at(e["tid"].get<int>()));
    if (e["name"] == "matmul") array_us += e["dur"].get<double>();
  }
  for (const char* unit : {"pcie", "weight_memory", "array", "vector_unit"}) EXPECT_TRUE(tracks.count(unit)) << unit;
  // The array's matmul intervals add up to the report's streaming cycles (at 700 MHz).
  const json rep = json::parse(slurp(out / "report.json"));
  EXPECT_EQ(t["otherData"]["total_cycles"], rep["summary"]["latency_cycles"]);
  const double stream_cycles = rep["summary"]["busy_cycles"]["array_stream"].get<double>();
  EXPECT_GT(stream_cycles, 0.0);
  EXPECT_NEAR(array_us * 700.0, stream_cycles, 1e-6 * stream_cycles);
}

// `--trace DIR/trace.json` creates DIR as `-o DIR` does (issue 33 item 6).
TEST(CliTrace, TraceIntoMissingDirectoryCreatesIt) {
  const fs::path out = scratch("mlp0-trace-newdir");
  const fs::path dir = scratch("mlp0-trace-newdir-traces");
  fs::remove_all(dir);
  const Result r = tessera("run -a configs/tpu-v1.yaml -w workloads/tpu/mlp0.yaml -b 16 -q -o " + out.string() +
                           " --trace " + (dir / "sub" / "trace.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(json::parse(slurp(dir / "sub" / "trace.json"))["traceEvents"].is_array());
}

TEST(CliTrace, TraceWhereNoDirectoryCanBeIsExitTwoAndWritesNothing) {
  const fs::path out = scratch("mlp0-trace-bad");
  fs::remove_all(out);
  const fs::path file = scratch("mlp0-trace-bad-file");
  std::ofstream(file) << "a file, not a directory\n";
  const Result r = tessera("run -a configs/tpu-v1.yaml -w workloads/tpu/mlp0.yaml -b 16 -q -o " + out.string() +
                           " --trace " + (file / "trace.json").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--trace " + (file / "trace.json").string() + ": cannot create directory"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(out / "report.json"));
}

// --accumulator-headroom-bits reaches the functional mode: int16 x int16 on TPU v1's 32-bit
// accumulators saturates without headroom (docs/precision-functional.md section 6).
TEST(CliFunctional, AccumulatorHeadroomFlagReachesTheFunctionalMode) {
  double sqnr[2] = {0, 0};
  const char* bits[2] = {"2", "-1"};
  for (int i = 0; i < 2; ++i) {
    const fs::path out = scratch(std::string("functional-headroom-") + bits[i]);
    const Result r = tessera("run -q -a configs/tpu-v1.yaml -w workloads/tpu/mlp0.yaml --precision int16 --functional "
                             "--accumulator-headroom-bits " + std::string(bits[i]) + " -o " + out.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const json f = json::parse(slurp(out / "report.json"))["functional"];
    EXPECT_EQ(f["accumulator_headroom_bits"].get<int>(), std::stoi(bits[i]));
    sqnr[i] = f["output_sqnr_db"].get<double>();
  }
  EXPECT_GT(sqnr[0], 40.0);            // 2 bits of headroom: int16 keeps its accuracy
  EXPECT_LT(sqnr[1], sqnr[0] - 20.0);  // full-scale scales overflow the accumulators
  const Result bad = tessera("run -a configs/tpu-v1.yaml -w workloads/tpu/mlp0.yaml --accumulator-headroom-bits 1 -o " + scratch("functional-headroom-bad").string());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("--accumulator-headroom-bits requires --functional"), std::string::npos) << bad.output;
}

// ---- Issue 33: which precision ran, and energy defaults, said out loud.
namespace {
fs::path write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
  return path;
}
const char* kTwoFc = R"(inputs: [{name: x, shape: [256]}]
layers:
  - {name: fc1, op: fc, units: 256, activation: relu}
  - {name: fc2, op: fc, units: 256}
)";
}  // namespace

TEST(CliPrecision, WorkloadDtypeRunsAndSummariesSaySo) {
  const fs::path dir = scratch("precision-source");
  const fs::path wl = write_text(dir / "wide.yaml", std::string("name: wide\nbatch: 8\ndtype: int16\n") + kTwoFc);
  Result r = tessera("run -a configs/tpu-v1.yaml -w " + wl.string() + " -o " + (dir / "a").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("  precision: int16 (from the workload)\n"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("note: --precision"), std::string::npos) << r.output;
  EXPECT_NE(slurp(dir / "a" / "summary.md").find("| precision | int16 (from the workload) |\n"), std::string::npos);
  const json rep = json::parse(slurp(dir / "a" / "report.json"));
  EXPECT_EQ(rep["workload"]["precision"], "int16");
  for (const auto& l : rep["layers"]) {
    EXPECT_EQ(l["a_dtype"], "int16");
    EXPECT_EQ(l["b_dtype"], "int16");
  }
  // --precision overrides it, and says what it changed on stderr.
  r = tessera("run -p int8 -a configs/tpu-v1.yaml -w " + wl.string() + " -o " + (dir / "b").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("note: --precision int8 overrides the dtypes workload 'wide' declares (int16xint16 on 2 "
                          "matrix layer(s)): 2 matrix layer(s) run at int8xint8 on 2 matrix layer(s) instead\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("  precision: int8 (--precision)\n"), std::string::npos) << r.output;
  EXPECT_NE(slurp(dir / "b" / "summary.md").find("| precision | int8 (--precision) |\n"), std::string::npos);
  EXPECT_EQ(json::parse(slurp(dir / "b" / "report.json"))["layers"][0]["b_dtype"], "int8");
  // The int16 run moved twice the weight bytes of the int8 one (256 x 256 weights per layer).
  EXPECT_EQ(rep["summary"]["weight_memory_bytes"].get<int64_t>(),
            2 * json::parse(slurp(dir / "b" / "report.json"))["summary"]["weight_memory_bytes"].get<int64_t>());
  // tessera compile says it too.
  r = tessera("compile -p int8 -a configs/tpu-v1.yaml -w " + wl.string() + " -o " + (dir / "listing.txt").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("note: --precision int8 overrides"), std::string::npos) << r.output;
}

TEST(CliPrecision, WorkloadWithoutDtypesRunsInt8ByDefault) {
  const fs::path dir = scratch("precision-default");
  const fs::path wl = write_text(dir / "plain.yaml", std::string("name: plain\nbatch: 8\n") + kTwoFc);
  const Result r = tessera("run -a configs/tpu-v1.yaml -w " + wl.string() + " -o " + (dir / "a").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("  precision: int8 (default: the workload declares no dtypes)\n"), std::string::npos)
      << r.output;
  EXPECT_EQ(json::parse(slurp(dir / "a" / "report.json"))["workload"]["precision"], "int8");
}

TEST(CliEnergy, ConfigWithoutEnergySectionWarnsOnStderrAndInTheSummary) {
  const fs::path dir = scratch("energy-defaults");
  std::string cfg = slurp(fs::path(kSrc) / "configs/tpu-v1.yaml");
  ASSERT_NE(cfg.find("\nenergy:"), std::string::npos);
  cfg = cfg.substr(0, cfg.find("\nenergy:") + 1);  // energy: is the config's last section
  const fs::path arch = write_text(dir / "no-energy.yaml", cfg);
  Result r = tessera("run -q -a " + arch.string() + " -w workloads/tpu/mlp0.yaml -o " + (dir / "a").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string says = "has no energy: section: every energy, power and area figure is a default (28 nm, 0.9 V";
  EXPECT_NE(r.output.find("warning: " + arch.string() + ": The config " + says), std::string::npos) << r.output;
  EXPECT_NE(slurp(dir / "a" / "summary.md").find("**The config " + says), std::string::npos);
  // A node below the tables' 7 nm is refused, naming the key and why.
  std::string five = slurp(fs::path(kSrc) / "configs/tpu-v1.yaml");
  five.replace(five.find("technology_nm: 28"), 17, "technology_nm: 5 ");
  const fs::path arch5 = write_text(dir / "five.yaml", five);
  r = tessera("run -q -a " + arch5.string() + " -w workloads/tpu/mlp0.yaml -o " + (dir / "b").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("energy.technology_nm: 5 nm is below the 7 nm that the node scaling tables reach"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir / "b" / "report.json"));
}
