// Baselines in the report: the work handed to the models, the JSON against the model's
// own numbers, name resolution (all, host, NAME:PRECISION, paths) and its errors.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "models/baseline/host_blas.h"
#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/compiler/compiler.h"
#include "sim/report/baselines.h"
#include "tests/support/tiny_arch.h"

using namespace tessera;
using nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

const char* kCpuSpec = R"(name: Test CPU
kind: cpu
precision: fp32
peak_tops: {fp32: 1.0}
memory: {capacity: 1 GiB, bandwidth_gb_per_s: 100, efficiency: 0.5}
on_chip: {capacity: 64 KiB, bandwidth_gb_per_s: 1000}
efficiency: {parallel_units: 4, k_half: 64, tiles: [{m: 16, n: 16, max: 0.8}]}
overheads: {launch_us: 1}
)";

const char* kGpuSpec = R"(name: Test GPU
kind: gpu
precision: fp16
peak_tops: {fp32: 10, fp16: 100}
memory: {capacity: 16 GiB, bandwidth_gb_per_s: 1000}
on_chip: {capacity: 1 MiB, bandwidth_gb_per_s: 5000}
efficiency: {parallel_units: 10, k_half: 0, tiles: [{m: 128, n: 128, max: 0.8}, {m: 32, n: 32, max: 0.4}]}
overheads: {launch_us: 5}
host_link: {bandwidth_gb_per_s: 10, latency_us: 2}
)";

// x[8] -> fc1 (16, relu) -> fc2 (4), batch 4, on the tiny 4x4 test array.
struct BaselinesReport : ::testing::Test {
  ArchConfig arch = test_support::TinyArch{}.build();
  graph::Graph graph = graph::parse_graph_yaml(YamlNode::load_string(R"(
name: two
batch: 4
inputs: [{name: x, shape: [8]}]
layers:
  - {name: fc1, op: fc, units: 16, activation: relu}
  - {name: fc2, op: fc, units: 4}
)", "two.yaml"));
  compiler::Program program = compiler::compile(graph, arch);
  engine::RunStats stats;  // the baselines do not read the accelerator's stats
  ordered_json acc;
  fs::path dir;

  void SetUp() override {
    acc["summary"]["latency_s"] = 1e-6;
    acc["layers"] = ordered_json::array();
    for (double l : {4e-7, 6e-7}) {
      ordered_json layer;
      layer["latency_s"] = l;
      acc["layers"].push_back(layer);
    }
    dir = fs::path(TESSERA_BINARY_DIR) / "test-out" / "baselines" /
          ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "cpu.yaml") << kCpuSpec;
    std::ofstream(dir / "gpu.yaml") << kGpuSpec;
  }
  report::RunRecord record() const { return {arch, graph, program, stats}; }
  ordered_json run(const std::vector<std::string>& names, report::BaselineOptions o = {}) const {
    if (o.dir.empty()) o.dir = dir;
    return report::baselines_json(names, record(), acc, o);
  }
  std::string error_of(const std::vector<std::string>& names) const {
    try {
      run(names);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
};

}  // namespace

TEST_F(BaselinesReport, WorkloadFromGraphAndProgram) {
  const baseline::Workload w = report::baseline_workload(graph, program);
  EXPECT_EQ(w.batch, 4);
  ASSERT_EQ(w.layers.size(), 2u);
  const auto& fc1 = w.layers[0];
  EXPECT_TRUE(fc1.matrix);
  EXPECT_EQ(fc1.m, 4);
  EXPECT_EQ(fc1.k, 8);
  EXPECT_EQ(fc1.n, 16);
  EXPECT_EQ(fc1.macs, 4 * 8 * 16);
  EXPECT_EQ(fc1.weights, 8 * 16);
  ASSERT_EQ(fc1.inputs.size(), 1u);
  EXPECT_EQ(fc1.inputs[0].elements, 32);
  EXPECT_TRUE(fc1.inputs[0].host);
  EXPECT_EQ(fc1.output.elements, 64);
  EXPECT_FALSE(fc1.output.host);
  const auto& fc2 = w.layers[1];
  EXPECT_FALSE(fc2.inputs[0].host);
  EXPECT_TRUE(fc2.output.host);
  EXPECT_EQ(w.host_input_elements, 32);
  EXPECT_EQ(w.host_output_elements, 16);
  EXPECT_EQ(w.total_macs(), 4 * 8 * 16 + 4 * 16 * 4);
}

TEST_F(BaselinesReport, JsonMatchesTheModel) {
  const ordered_json out = run({"cpu"});
  ASSERT_EQ(out.size(), 1u);
  const ordered_json& b = out[0];
  const baseline::BaselineSpec spec = baseline::load_baseline_spec(dir / "cpu.yaml");
  const baseline::Workload w = report::baseline_workload(graph, program);
  const baseline::Estimate e = baseline::estimate(spec, w);

  EXPECT_EQ(b["name"], "cpu");
  EXPECT_EQ(b["display_name"], "Test CPU");
  EXPECT_EQ(b["kind"], "cpu");
  EXPECT_EQ(b["measured"], false);
  EXPECT_EQ(b["precision"], "fp32");
  EXPECT_EQ(b["precision_from"], "spec");
  EXPECT_EQ(b["batch"], 4);
  EXPECT_DOUBLE_EQ(b["peak_tops"].get<double>(), 1.0);
  const ordered_json& s = b["summary"];
  const double macs = 4 * 8 * 16 + 4 * 16 * 4;
  EXPECT_DOUBLE_EQ(s["latency_s"].get<double>(), e.latency_s);
  EXPECT_DOUBLE_EQ(s["inferences_per_s"].get<double>(), 4 / e.latency_s);
  EXPECT_DOUBLE_EQ(s["ops"].get<double>(), 2 * macs);
  EXPECT_DOUBLE_EQ(s["tops"].get<double>(), 2 * macs / e.latency_s / 1e12);
  EXPECT_DOUBLE_EQ(s["utilization"].get<double>(), s["tops"].get<double>() / 1.0);
  EXPECT_DOUBLE_EQ(b["speedup_of_accelerator"].get<double>(), e.latency_s / 1e-6);
  ASSERT_EQ(b["layers"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const ordered_json& l = b["layers"][i];
    EXPECT_DOUBLE_EQ(l["latency_s"].get<double>(), e.layers[i].latency_s);
    EXPECT_DOUBLE_EQ(l["efficiency"].get<double>(), e.layers[i].efficiency);
    EXPECT_EQ(l["bound"], e.layers[i].bound);
    EXPECT_DOUBLE_EQ(l["speedup_of_accelerator"].get<double>(), e.layers[i].latency_s / (i == 0 ? 4e-7 : 6e-7));
  }
  // Roofline: ridge = 1 TOPS / 100 GB/s = 10 ops per byte; weights 8*16 + 16*4 = 192 fp32 = 768 B.
  const ordered_json& roof = b["roofline"];
  EXPECT_DOUBLE_EQ(roof["peak_tops"].get<double>(), 1.0);
  const ordered_json& wm = roof["weight_memory"];
  EXPECT_DOUBLE_EQ(wm["bandwidth_gb_per_s"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(wm["ridge_ops_per_byte"].get<double>(), 10);
  EXPECT_DOUBLE_EQ(wm["oi_ops_per_byte"].get<double>(), 2 * macs / 768);
  EXPECT_DOUBLE_EQ(wm["oi_macs_per_byte"].get<double>(), macs / 768);
  EXPECT_DOUBLE_EQ(wm["attainable_tops"].get<double>(), std::min(1.0, 100e9 * (2 * macs / 768) / 1e12));
  EXPECT_EQ(wm["bound"], "memory");
  EXPECT_DOUBLE_EQ(roof["dram"]["oi_ops_per_byte"].get<double>(), 2 * macs / e.dram_bytes);
  EXPECT_EQ(roof["layers"].size(), 2u);
}

TEST_F(BaselinesReport, GpuIncludesTheHostLink) {
  const ordered_json b = run({"gpu"})[0];
  // fp16: 32 input elements x 2 B = 64 B over 10 GB/s + 2 us; 16 outputs = 32 B + 2 us.
  EXPECT_DOUBLE_EQ(b["host_link_transfers"]["to_device_bytes"].get<double>(), 64);
  EXPECT_NEAR(b["host_link_transfers"]["to_device_s"].get<double>(), 2e-6 + 64 / 10e9, 1e-18);
  EXPECT_NEAR(b["summary"]["host_link_s"].get<double>(), 4e-6 + 96 / 10e9, 1e-18);
  double layers = 0;
  for (const auto& l : b["layers"]) layers += l["latency_s"].get<double>();
  EXPECT_NEAR(b["summary"]["latency_s"].get<double>(), layers + 4e-6 + 96 / 10e9, 1e-18);
}

TEST_F(BaselinesReport, AllExpandsSortedAndDropsDuplicates) {
  const ordered_json out = run({"gpu", "all", "cpu"});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]["name"], "gpu");
  EXPECT_EQ(out[1]["name"], "cpu");
  EXPECT_EQ(report::available_baselines(dir), (std::vector<std::string>{"cpu", "gpu"}));
  EXPECT_EQ(report::split_baseline_list(" k80, all ,,host"), (std::vector<std::string>{"k80", "all", "host"}));
}

TEST_F(BaselinesReport, UnknownNameListsTheAvailableOnes) {
  const std::string e = error_of({"cpu", "k81"});
  EXPECT_NE(e.find("unknown baseline 'k81'; available (in "), std::string::npos) << e;
  EXPECT_NE(e.find("): cpu, gpu, all (every one of those), host (measured"), std::string::npos) << e;
  EXPECT_NE(error_of({"missing/spec.yaml"}).find("missing/spec.yaml: cannot read the baseline spec file: it does not exist"), std::string::npos);
}

TEST_F(BaselinesReport, PrecisionOverrideAndPaths) {
  const ordered_json both = run({"gpu", "gpu:fp32"});
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0]["name"], "gpu");
  const ordered_json& b = both[1];
  EXPECT_EQ(b["name"], "gpu:fp32");
  EXPECT_EQ(b["spec"], "gpu");
  EXPECT_EQ(b["precision"], "fp32");
  EXPECT_EQ(b["precision_from"], "override");
  EXPECT_DOUBLE_EQ(b["peak_tops"].get<double>(), 10);
  const std::string e = error_of({"gpu:int8"});
  EXPECT_NE(e.find("baseline 'gpu:int8': precision 'int8' is not one gpu has; its peak_tops give: fp32, fp16"),
            std::string::npos)
      << e;
  const ordered_json p = run({(dir / "cpu.yaml").string()});
  EXPECT_EQ(p[0]["name"], "cpu");
}

TEST_F(BaselinesReport, ShippedBaselines) {
  report::BaselineOptions o;
  o.dir = fs::path(TESSERA_SOURCE_DIR) / "configs" / "baselines";
  const ordered_json out = run({"all"}, o);
  ASSERT_GE(out.size(), 7u);
  for (const auto& b : out) {
    const std::string n = b["name"];
    EXPECT_EQ(b["precision"], n == "k80" || n == "haswell-e5-2699v3" ? "fp32" : "int8") << n;
    EXPECT_GT(b["summary"]["latency_s"].get<double>(), 0) << n;
    EXPECT_TRUE(b["speedup_of_accelerator"].is_number()) << n;
    EXPECT_GT(b["roofline"]["weight_memory"]["ridge_ops_per_byte"].get<double>(), 0) << n;
  }
}

// Perf/W next to the accelerator's (docs/energy.md): incremental divides by the die's busy
// power, total adds its host share; a TDP-only part runs at its TDP, labelled as such.
TEST_F(BaselinesReport, PowerAndPerfPerWatt) {
  std::ofstream(dir / "cpu.yaml") << kCpuSpec << "power: {idle_w: 40, busy_w: 100, tdp_w: 150, host_w: 50}\n";
  std::ofstream(dir / "gpu.yaml") << kGpuSpec << "power: {tdp_w: 300}\n";
  acc["summary"]["perf_per_w"] = {{"incremental", 1000.0}, {"total", 400.0}, {"host_power_w", 10.0}};
  const ordered_json out = run({"cpu", "gpu"});
  const auto& cpu = out[0];
  const double ips = cpu["summary"]["inferences_per_s"].get<double>();
  EXPECT_EQ(cpu["power"]["basis"], "measured");
  EXPECT_DOUBLE_EQ(cpu["power"]["busy_w"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(cpu["perf_per_w"]["incremental"].get<double>(), ips / 100);
  EXPECT_DOUBLE_EQ(cpu["perf_per_w"]["total"].get<double>(), ips / 150);
  EXPECT_DOUBLE_EQ(cpu["accelerator_perf_per_w_ratio"]["incremental"].get<double>(), 1000 / (ips / 100));
  EXPECT_DOUBLE_EQ(cpu["accelerator_perf_per_w_ratio"]["total"].get<double>(), 400 / (ips / 150));
  EXPECT_DOUBLE_EQ(cpu["energy_per_inference_j"].get<double>(), 100 * cpu["summary"]["latency_s"].get<double>() / 4);
  const auto& gpu = out[1];
  EXPECT_EQ(gpu["power"]["basis"], "tdp");
  EXPECT_DOUBLE_EQ(gpu["power"]["busy_w"].get<double>(), 300);
  EXPECT_TRUE(gpu["power"]["idle_w"].is_null());
  EXPECT_DOUBLE_EQ(gpu["perf_per_w"]["total"].get<double>(), gpu["perf_per_w"]["incremental"].get<double>());
  // A spec without power has no perf/W.
  std::ofstream(dir / "cpu.yaml") << kCpuSpec;
  EXPECT_TRUE(run({"cpu"})[0]["perf_per_w"].is_null());
}

TEST_F(BaselinesReport, MarkdownAndConsole) {
  ordered_json r;
  r["arch"]["name"] = "tiny";
  r["summary"] = {{"latency_s", 1e-6}, {"inferences_per_s", 4e6}, {"tops", 0.001}, {"utilization", 0.5}};
  ordered_json layer;
  layer["macs"] = 512;
  layer["a_dtype"] = "int8";
  layer["b_dtype"] = "int8";
  r["layers"] = ordered_json::array();
  r["layers"].push_back(layer);
  r["baselines"] = ordered_json::array();
  EXPECT_EQ(report::baselines_markdown(r), "");
  r["baselines"] = run({"cpu", "gpu"});
  const std::string md = report::baselines_markdown(r);
  EXPECT_NE(md.find("## Baselines"), std::string::npos);
  EXPECT_NE(md.find("| tiny (this run) | int8 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| Test GPU | fp16 |"), std::string::npos) << md;
  EXPECT_NE(report::baselines_console(r).find("gpu (fp16): "), std::string::npos);
}

TEST_F(BaselinesReport, HostIsMeasured) {
  if (!baseline::host_blas_available()) GTEST_SKIP() << "built without OpenBLAS";
  report::BaselineOptions o;
  o.host.repeats = 3;
  o.host.max_gflop_per_call = 1e-7;  // 100 flops: fc1 (1024 flops) is timed on 1 of its 4 rows and scaled
  const ordered_json b = run({"host"}, o)[0];
  EXPECT_EQ(b["name"], "host");
  EXPECT_EQ(b["measured"], true);
  EXPECT_EQ(b["precision"], "fp32");
  EXPECT_GT(b["summary"]["latency_s"].get<double>(), 0);
  EXPECT_GT(b["peak_tops"].get<double>(), 0);
  EXPECT_GT(b["roofline"]["weight_memory"]["bandwidth_gb_per_s"].get<double>(), 0);
  const ordered_json& l = b["layers"][0];
  EXPECT_EQ(l["run_rows"], 1);
  EXPECT_EQ(l["full_rows"], 4);
  EXPECT_DOUBLE_EQ(l["scale"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(l["latency_s"].get<double>(), 4.0 * l["median_s"].get<double>());
  EXPECT_EQ(l["repeats"], 3);
  EXPECT_LE(l["min_s"].get<double>(), l["median_s"].get<double>());
  EXPECT_LE(l["median_s"].get<double>(), l["max_s"].get<double>());
  EXPECT_EQ(b["measurement"]["statistic"], "median");
  EXPECT_FALSE(b["measurement"]["scaled_layers"].empty());
  bool noted = false;
  for (const auto& n : b["notes"]) noted |= n.get<std::string>().find("slice") != std::string::npos;
  EXPECT_TRUE(noted);
}
