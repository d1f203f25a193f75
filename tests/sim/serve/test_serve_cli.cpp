// Integration tests: `tessera serve` with the built executable. Each batch size is a real
// `tessera run` child (MLP0 on tpu-v1 takes a fraction of a second); the queue runs are kept
// short with --requests.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/run_cli.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using Result = tessera_test::CliResult;
using tessera_test::slurp;

Result tessera(const std::string& args) { return tessera_test::run_tessera(args); }
fs::path scratch(const std::string& name) { return tessera_test::scratch_dir("serve", name); }

const std::string kMlp0 = "-a configs/tpu-v1.yaml -w workloads/tpu/mlp0.yaml";

json serving(const fs::path& dir) { return json::parse(slurp(dir / "serving.json")); }

// One `tessera run` of MLP0 at batch b: the report the service table must agree with.
json run_report(const fs::path& dir, int64_t b, const std::string& extra = "") {
  const Result r = tessera("run -q " + kMlp0 + " -b " + std::to_string(b) + " --out " + dir.string() + " " + extra);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return json::parse(slurp(dir / "report.json"));
}

}  // namespace

TEST(ServeCli, WritesTheHeadlineFromSimulatedServiceTimes) {
  const fs::path dir = scratch("headline");
  const Result r = tessera("serve " + kMlp0 + " -b 200 --latency-bound-ms 7 --requests 20000 --curve 3 --out " +
                           (dir / "out").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* f : {"serving.json", "serving.csv", "curve.csv", "serving.md"}) EXPECT_TRUE(fs::exists(dir / "out" / f)) << f;
  const json s = serving(dir / "out");
  EXPECT_TRUE(s["feasible"].get<bool>());
  EXPECT_GT(s["max_throughput_per_s"].get<double>(), 0);
  EXPECT_EQ(s["batch"].get<int64_t>(), 200);
  for (const char* p : {"p50", "p90", "p99"}) EXPECT_GT(s["latency_ms"][p].get<double>(), 0) << p;
  EXPECT_LE(s["latency_ms"]["p99"].get<double>(), 7.0);
  EXPECT_LE(s["max_throughput_per_s"].get<double>(), s["platforms"][0]["max_capacity_per_s"].get<double>());
  EXPECT_LT(s["littles_law_max_relative_error"].get<double>(), 1e-9);

  // The service table is the SystemC run's: its latency and the PCIe transfers of the program.
  const json rep = run_report(dir / "run", 200);
  const json& svc = s["platforms"][0]["service"][0];
  EXPECT_EQ(svc["batch"].get<int64_t>(), 200);
  EXPECT_DOUBLE_EQ(svc["service_ms"].get<double>(), rep["summary"]["latency_s"].get<double>() * 1e3);
  EXPECT_DOUBLE_EQ(svc["pcie_bytes"].get<double>(), rep["summary"]["pcie_bytes_to_device"].get<double>() +
                                                        rep["summary"]["pcie_bytes_to_host"].get<double>());
  EXPECT_GT(svc["pcie_bytes"].get<double>(), 0);
  // curve.csv: a header and 3 points.
  const auto lines = tessera_test::text_lines(slurp(dir / "out" / "curve.csv"));
  EXPECT_EQ(lines.size(), 4u);
  EXPECT_NE(slurp(dir / "out" / "serving.md").find("## Results"), std::string::npos);
}

TEST(ServeCli, ByteIdenticalUnderASeedAndEachBatchSimulatedOnce) {
  const fs::path dir = scratch("determinism");
  const std::string common = "serve " + kMlp0 + " -b 64,200 --policy fixed,timeout --timeout-ms 0.5 --latency-bound-ms 7 "
                             "--requests 20000 --curve 2 --cache " + (dir / "cache").string() + " --out ";
  const Result a = tessera(common + (dir / "a").string());
  ASSERT_EQ(a.exit_code, 0) << a.output;
  // The timeout policy serves partial batches: 1, 2, 4, ..., 128 and 200 are simulated.
  EXPECT_NE(a.output.find("9 batch size(s) simulated, 0 from the cache"), std::string::npos) << a.output;
  const Result b = tessera(common + (dir / "b").string());
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_NE(b.output.find("0 batch size(s) simulated, 9 from the cache"), std::string::npos) << b.output;
  for (const char* f : {"serving.json", "serving.csv", "curve.csv", "serving.md"}) {
    EXPECT_EQ(slurp(dir / "a" / f), slurp(dir / "b" / f)) << f;
  }
  const Result c = tessera(common + (dir / "c").string() + " --seed 2");
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_NE(slurp(dir / "a" / "serving.json"), slurp(dir / "c" / "serving.json"));
  const json s = serving(dir / "a");
  ASSERT_EQ(s["results"].size(), 4u);  // 2 batches x 2 policies
  EXPECT_EQ(s["results"][1]["policy"], "timeout");
}

TEST(ServeCli, BaselinesAreServedFromTheSameRunsAndQueue) {
  const fs::path dir = scratch("baselines");
  const Result r = tessera("serve " + kMlp0 + " -b 16 --baseline haswell-e5-2699v3,k80 --replicas tpu-v1=4,k80=8 "
                           "--latency-bound-ms 7 --requests 20000 --curve 0 --out " + (dir / "out").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json s = serving(dir / "out");
  ASSERT_EQ(s["platforms"].size(), 3u);
  EXPECT_EQ(s["platforms"][1]["name"], "haswell-e5-2699v3");
  EXPECT_EQ(s["platforms"][2]["name"], "k80");
  EXPECT_EQ(s["platforms"][0]["replicas"], 4);
  EXPECT_EQ(s["platforms"][1]["replicas"], 1);
  EXPECT_EQ(s["platforms"][2]["replicas"], 8);
  const json rep = run_report(dir / "run", 16, "--baseline haswell-e5-2699v3,k80");
  for (int k = 0; k < 2; ++k) {
    const json& b = rep["baselines"][k];
    const json& svc = s["platforms"][k + 1]["service"][0];
    EXPECT_DOUBLE_EQ(svc["service_ms"].get<double>(), b["summary"]["latency_s"].get<double>() * 1e3);
    EXPECT_DOUBLE_EQ(svc["pcie_bytes"].get<double>(), b["host_link_transfers"]["to_device_bytes"].get<double>() +
                                                          b["host_link_transfers"]["to_host_bytes"].get<double>());
  }
  // N replicas serve N times the batches of one (no host model: nothing else limits them).
  const json& k80 = s["results"][2];
  EXPECT_EQ(k80["platform"], "k80");
  const double svc_s = s["platforms"][2]["service"][0]["service_ms"].get<double>() / 1e3;
  EXPECT_NEAR(k80["capacity_per_s"].get<double>(), 8 * 16 / svc_s, 1e-6 * k80["capacity_per_s"].get<double>());
}

TEST(ServeCli, CalibrationReproducesThePublishedRowAndSaysSo) {
  const fs::path dir = scratch("calibration");
  const Result r = tessera("serve " + kMlp0 + " -b 200,250 --host haswell-tpu-server --replicas 4 --calibrate-rate 900000 "
                           "--calibrate-latency-ms 7 --latency-bound-ms 7 --requests 20000 --curve 0 --out " +
                           (dir / "out").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json s = serving(dir / "out");
  const json& cal = s["calibration"];
  EXPECT_NEAR(cal["achieved_ms"].get<double>() / 7.0, 1.0, 0.01);
  EXPECT_LT(cal["device_only_ms"].get<double>(), 7.0);
  EXPECT_EQ(cal["per_replica_per_s"].get<double>(), 225000);
  EXPECT_EQ(cal["batch"], 200);
  EXPECT_EQ(s["host"]["scale_source"], "calibrated");
  EXPECT_DOUBLE_EQ(s["host"]["scale"].get<double>(), cal["scale"].get<double>());  // the file's scale is 1
  EXPECT_EQ(s["host"]["cores"], 36);
  // At batch 250 the host limits four TPUs: their capacity is below four times one TPU's.
  const json& svc = s["platforms"][0]["service"][1];
  ASSERT_EQ(svc["batch"], 250);
  EXPECT_LT(s["results"][1]["capacity_per_s"].get<double>(), 0.9 * 4 * svc["samples_per_s_idle"].get<double>());
  EXPECT_NE(slurp(dir / "out" / "serving.md").find("**calibrated**"), std::string::npos);
}

TEST(ServeCli, MlperfServerAppliesTheMinimumQueriesAndEarlyStopping) {
  const fs::path dir = scratch("mlperf-server");
  const Result r = tessera("serve " + kMlp0 + " -b 200 --mlperf server --latency-bound-ms 3 --min-duration-s 0.2 --out " +
                           (dir / "out").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json s = serving(dir / "out");
  const json& m = s["results"][0]["mlperf"];
  EXPECT_EQ(m["min_queries"], 270336);
  EXPECT_GE(m["queries"].get<int64_t>(), 270336);
  EXPECT_TRUE(m["early_stopping_passed"].get<bool>());
  EXPECT_GE(m["queries"].get<int64_t>(), m["queries_needed"].get<int64_t>());
  EXPECT_EQ(s["results"][0]["at_max"]["over_bound"], m["overlatency_queries"]);
  EXPECT_EQ(s["scenario"], "server");
}

TEST(ServeCli, MlperfSingleStreamAndOffline) {
  const fs::path dir = scratch("mlperf-other");
  Result r = tessera("serve " + kMlp0 + " --mlperf single-stream --min-duration-s 1 --out " + (dir / "ss").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json s = serving(dir / "ss");
  EXPECT_EQ(s["percentile"], 90.0);
  EXPECT_EQ(s["batch"], 1);
  const double service_ms = s["platforms"][0]["service"][0]["service_ms"].get<double>();
  EXPECT_NEAR(s["early_stopping_estimate_ms"].get<double>(), service_ms, 1e-9);  // one at a time, no host: no wait
  EXPECT_GE(s["results"][0]["mlperf"]["queries"].get<int64_t>(), 24576);

  r = tessera("serve " + kMlp0 + " -b 200 --mlperf offline --min-duration-s 0.1 --out " + (dir / "off").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  s = serving(dir / "off");
  const json& row = s["results"][0];
  EXPECT_GE(row["mlperf"]["queries"].get<int64_t>(), 24576);
  EXPECT_LE(row["run"]["samples_per_s"].get<double>(), row["capacity_per_s"].get<double>() * (1 + 1e-9));
  EXPECT_GT(row["run"]["samples_per_s"].get<double>(), 0.95 * row["capacity_per_s"].get<double>());
}

TEST(ServeCli, TraceArrivalsAtTheirOwnRate) {
  const fs::path dir = scratch("trace");
  {
    std::ofstream t(dir / "t.csv");
    t << "arrival_s,size\n";
    for (int k = 0; k < 1000; ++k) t << k * 1e-4 << "," << (k % 3 + 1) << "\n";
  }
  const Result r = tessera("serve " + kMlp0 + " -b 8 --policy timeout --trace " + (dir / "t.csv").string() +
                           " --curve 0 --out " + (dir / "out").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json s = serving(dir / "out");
  EXPECT_EQ(s["arrivals"]["kind"], "trace");
  const json& run = s["results"][0]["at_rate"];
  EXPECT_EQ(run["requests"], 1000);
  EXPECT_EQ(run["samples"], 1999);  // sizes 1, 2, 3 repeating
  EXPECT_NEAR(run["offered_per_s"].get<double>(), 1e4, 1e-6);
}

TEST(ServeCli, BadInputIsOneErrorNamingTheOptionAndWritesNothing) {
  const fs::path dir = scratch("errors");
  {
    std::ofstream h(dir / "h.yaml");
    h << "name: h\ncores: 4\nbatch_cpu: {fixed_us: 10, tail: {distribution: pareto, min_us: 1, alpha: 0.5}}\n";
    std::ofstream t(dir / "t.csv");
    t << "arrival_s\n0\n0.5\nx\n";
  }
  const std::string h = (dir / "h.yaml").string(), t = (dir / "t.csv").string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"-b 200", "nothing to compute"},
      {"-b 200 --latency-bound-ms 7 --policy fifo", "--policy: 'fifo'"},
      {"-b 0 --latency-bound-ms 7", "--batch: 0"},
      {"-b 8,8 --latency-bound-ms 7", "--batch: 8 is listed twice"},
      {"-b 200 --latency-bound-ms -1", "--latency-bound-ms"},
      {"-b 200 --latency-bound-ms 7 --arrivals gamma", "--cv"},
      {"-b 200 --latency-bound-ms 7 --cv 2", "--cv: only gamma and hyperexp"},
      {"-b 200 --latency-bound-ms 7 --arrivals hyperexp --cv 0.5", "--cv: hyperexp"},
      {"-b 200 --rate 1000 --policy deadline", "--deadline-ms"},
      {"-b 200 --latency-bound-ms 7 --host nosuch", "--host: no host model 'nosuch'"},
      {"-b 200 --latency-bound-ms 7 --calibrate-rate 9e5 --calibrate-latency-ms 7", "--calibrate-rate: calibration scales"},
      {"-b 200 --latency-bound-ms 7 --host haswell-tpu-server --calibrate-rate 9e5", "--calibrate-latency-ms"},
      {"-b 200 --latency-bound-ms 7 --host-scale 2", "--host-scale: there is no host model"},
      {"-b 200 --latency-bound-ms 7 --replicas k80=2", "--replicas: 'k80' is not a platform"},
      {"-b 200 --latency-bound-ms 7 --replicas 0", "--replicas: 0"},
      {"-b 200 --latency-bound-ms 7 --baseline nosuch", "--baseline: unknown baseline 'nosuch'"},
      {"-b 200 --latency-bound-ms 7 --baseline all", "--baseline: all"},
      {"-b 200 --mlperf server", "--mlperf server: give the benchmark's latency bound"},
      {"-b 200 --mlperf server --latency-bound-ms 7 --arrivals constant", "--arrivals: MLPerf's Server"},
      {"-b 8 --mlperf single-stream", "--batch: MLPerf SingleStream"},
      {"-b 200 --mlperf offline --latency-bound-ms 7", "--latency-bound-ms: --mlperf offline"},
      {"-b 200 --latency-bound-ms 7 --input-shape x=1,2", "--input-shape"},
      {"-b 200 --latency-bound-ms 7 --host " + h, "alpha"},
      {"-b 200 --trace " + t, "t.csv:4: arrival_s: 'x' is not a number"},
      {"-b 200 --latency-bound-ms 7 --arrivals trace", "--arrivals trace: give the trace file"},
  };
  for (const auto& [args, want] : cases) {
    const fs::path out = dir / "out";
    const Result r = tessera("serve " + kMlp0 + " " + args + " --out " + out.string());
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(want), std::string::npos) << args << "\n" << r.output;
    // One error line (CLI11 adds "Run with --help for more information." to its own).
    size_t lines = 0;
    for (const auto& l : tessera_test::text_lines(r.output)) lines += !l.empty() && l.rfind("Run with --help", 0) != 0;
    EXPECT_EQ(lines, 1u) << args << "\n" << r.output;
    EXPECT_FALSE(fs::exists(out)) << args;
  }
  // A bad value of the simulation itself (here the precision) comes back from the child run.
  const Result r = tessera("serve " + kMlp0 + " -b 200 --latency-bound-ms 7 -p int4 --out " + (dir / "p").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--precision 'int4'"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "p" / "serving.json"));
}

TEST(ServeCli, HelpTeaches) {
  const Result r = tessera("serve --help");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* want : {"--latency-bound-ms", "--calibrate-rate", "--replicas", "--mlperf", "Examples:", "serving.json",
                           "docs/serving.md"}) {
    EXPECT_NE(r.output.find(want), std::string::npos) << want;
  }
  EXPECT_NE(tessera("--help").output.find("tessera serve"), std::string::npos);
}
