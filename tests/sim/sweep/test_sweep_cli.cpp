// Integration tests: real sweeps with the built `tessera` (and `tessera-mpi` under mpirun).
// Each point is a `tessera run` process, so the experiments here are tiny (MLP1, MLP0).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include "tests/support/run_cli.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string kSrc = TESSERA_SOURCE_DIR;
const std::string kBin = std::string(TESSERA_BINARY_DIR) + "/tessera";

using Result = tessera_test::CliResult;
using tessera_test::slurp;
using tessera_test::text_lines;

Result sh(const std::string& cmd) { return tessera_test::run_shell(cmd); }

fs::path scratch(const std::string& name) { return tessera_test::scratch_dir("sweep", name); }

// An experiment file in `dir` (base and workload paths absolute).
fs::path write_experiment(const fs::path& dir, const std::string& body) {
  const fs::path p = dir / "exp.yaml";
  std::ofstream(p) << "base: " << kSrc << "/configs/tpu-v1.yaml\n" << body;
  return p;
}

// The rows of DIR/results.jsonl, in expansion order.
std::vector<json> rows_by_index(const fs::path& out) {
  std::vector<json> rows;
  for (const auto& l : text_lines(slurp(out / "results.jsonl"))) rows.push_back(json::parse(l));
  std::sort(rows.begin(), rows.end(), [](const json& a, const json& b) { return a["index"] < b["index"]; });
  return rows;
}

// A tiny ONNX model: x [batch, sequence, 64] -> MatMul W [64, 64] -> Relu -> y, with the
// sequence a named dynamic dimension (as in BERT's input_ids [batch, sequence]).
fs::path write_tiny_onnx(const fs::path& dir) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("tiny");
  auto* x = g->add_input();
  x->set_name("x");
  auto* t = x->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto_DataType_FLOAT);
  t->mutable_shape()->add_dim()->set_dim_param("batch");
  t->mutable_shape()->add_dim()->set_dim_param("sequence");
  t->mutable_shape()->add_dim()->set_dim_value(64);
  auto* w = g->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto_DataType_FLOAT);
  w->add_dims(64);
  w->add_dims(64);
  w->set_raw_data(std::string(64 * 64 * 4, '\0'));
  auto* mm = g->add_node();
  mm->set_op_type("MatMul");
  mm->set_name("proj");
  mm->add_input("x");
  mm->add_input("W");
  mm->add_output("h");
  auto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->set_name("act");
  relu->add_input("h");
  relu->add_output("y");
  auto* y = g->add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto_DataType_FLOAT);
  const fs::path p = dir / "tiny.onnx";
  std::ofstream f(p, std::ios::binary);
  m.SerializeToOstream(&f);
  return p;
}

std::vector<std::string> sorted_lines(const fs::path& p, bool skip_header = false) {
  auto l = text_lines(slurp(p));
  if (skip_header && !l.empty()) l.erase(l.begin());
  std::sort(l.begin(), l.end());
  return l;
}

}  // namespace

TEST(SweepCli, SmokeRecordsFailedPointAndFinishes) {
  const fs::path out = scratch("smoke");
  const Result r = sh(kBin + " sweep experiments/smoke.yaml -j 2 --out " + out.string());
  // Failed points end the sweep with exit 4 and a summary of the distinct errors (issue 33).
  ASSERT_EQ(r.exit_code, 4) << r.output;
  EXPECT_NE(r.output.find("10/10 done, 2 failed"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("sweep smoke: 2 of 10 points failed (exit 4); 1 distinct error(s), each in full in "
                          "results.jsonl:\n  2 x exit 2: tessera: error: points/<point>/config.yaml:"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("array.dataflow: 'diagonal' is not one of: ws, os, is"), std::string::npos) << r.output;
  const auto rows = text_lines(slurp(out / "results.jsonl"));
  ASSERT_EQ(rows.size(), 10u);
  std::set<std::string> ids;
  int ok = 0, failed = 0;
  for (const auto& line : rows) {
    const json row = json::parse(line);
    ids.insert(row["point"].get<std::string>());
    EXPECT_EQ(row["workload"], "mlp1");
    EXPECT_TRUE(row["batch"] == 8 || row["batch"] == 64);
    EXPECT_EQ(row["params"]["array.cols"], row["params"]["array.rows"]);  // derived
    if (row["status"] == "ok") {
      ++ok;
      EXPECT_TRUE(row["error"].is_null());
      EXPECT_GT(row["metrics"]["summary.latency_s"].get<double>(), 0);
      const int64_t cols = row["params"]["array.cols"];
      EXPECT_EQ(row["metrics"]["sram_bytes"].get<int64_t>(), (24 << 20) + 4096 * cols * 4);
      // Without --keep-reports an ok point leaves its row and nothing else (issue 35).
      EXPECT_FALSE(fs::exists(out / "points" / row["point"].get<std::string>()));
    } else {
      ++failed;
      EXPECT_EQ(row["params"]["array.dataflow"], "diagonal");
      const std::string err = row["error"];
      EXPECT_NE(err.find("exit 2: tessera: error: points/" + row["point"].get<std::string>() + "/config.yaml:"),
                std::string::npos)
          << err;
      EXPECT_NE(err.find("array.dataflow: 'diagonal' is not one of: ws, os, is"), std::string::npos) << err;
      EXPECT_TRUE(row["metrics"]["summary.latency_s"].is_null());
      // The config its error names is there, and nothing else.
      const fs::path dir = out / "points" / row["point"].get<std::string>();
      EXPECT_TRUE(fs::exists(dir / "config.yaml"));
      EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
    }
  }
  EXPECT_EQ(ok, 8);
  EXPECT_EQ(failed, 2);
  EXPECT_EQ(ids.size(), 10u);
  const auto csv = text_lines(slurp(out / "results.csv"));
  ASSERT_EQ(csv.size(), 11u);
  EXPECT_EQ(csv[0],
            "point,index,workload,batch,status,error,array.rows,weight_memory.bandwidth_gb_per_s,array.dataflow,"
            "unified_buffer.capacity,array.cols,unified_buffer.read_bytes_per_cycle,"
            "unified_buffer.write_bytes_per_cycle,vector_unit.lanes,summary.latency_s,summary.tops,"
            "summary.utilization,summary.cycles.weight_stall,sram_bytes");

  // A finished sweep is not rerun by accident, and --resume has nothing left to do.
  const Result again = sh(kBin + " sweep experiments/smoke.yaml --out " + out.string());
  EXPECT_EQ(again.exit_code, 2) << again.output;
  EXPECT_NE(again.output.find("--resume"), std::string::npos) << again.output;
  const Result resumed = sh(kBin + " sweep experiments/smoke.yaml --resume --out " + out.string());
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("10 already done"), std::string::npos) << resumed.output;
  EXPECT_EQ(text_lines(slurp(out / "results.jsonl")).size(), 10u);

  // Summary: the Pareto front over latency and SRAM per workload and batch.
  const Result sum = sh(kBin + " sweep experiments/smoke.yaml --summarize --out " + out.string());
  ASSERT_EQ(sum.exit_code, 0) << sum.output;
  EXPECT_NE(sum.output.find("10 points: 8 ok, 2 failed, 0 not run yet"), std::string::npos) << sum.output;
  EXPECT_NE(sum.output.find("## mlp1, batch 8:"), std::string::npos) << sum.output;
  EXPECT_NE(sum.output.find("## mlp1, batch 64:"), std::string::npos) << sum.output;
  EXPECT_NE(sum.output.find("'diagonal' is not one of"), std::string::npos) << sum.output;
  EXPECT_TRUE(fs::exists(out / "summary.md"));
}

TEST(SweepCli, SameRowsForOneAndTwoJobs) {
  const fs::path a = scratch("j1"), b = scratch("j2");
  ASSERT_EQ(sh(kBin + " sweep experiments/smoke.yaml -j 1 -q --out " + a.string()).exit_code, 4);  // 2 points fail
  ASSERT_EQ(sh(kBin + " sweep experiments/smoke.yaml -j 2 -q --out " + b.string()).exit_code, 4);
  const auto ra = sorted_lines(a / "results.jsonl"), rb = sorted_lines(b / "results.jsonl");
  ASSERT_EQ(ra.size(), 10u);
  EXPECT_EQ(ra, rb);
  EXPECT_EQ(sorted_lines(a / "results.csv", true), sorted_lines(b / "results.csv", true));
}

TEST(SweepCli, MpiRowsMatchLocal) {
#ifndef TESSERA_MPIRUN
  GTEST_SKIP() << "tessera-mpi not built (install libboost-mpi-dev openmpi-bin)";
#else
  const fs::path local = scratch("mpi-local"), mpi = scratch("mpi");
  ASSERT_EQ(sh(kBin + " sweep experiments/smoke.yaml -j 2 -q --out " + local.string()).exit_code, 4);  // 2 points fail
  const std::string launcher = tessera_test::mpi_launcher(2);
  const Result r = sh(launcher + " " + kBin + " sweep experiments/smoke.yaml --mpi --out " + mpi.string());
  ASSERT_EQ(r.exit_code, 4) << r.output;
  EXPECT_NE(r.output.find("MPI: 2 ranks x 1 at a time"), std::string::npos) << r.output;
  const auto rl = sorted_lines(local / "results.jsonl"), rm = sorted_lines(mpi / "results.jsonl");
  ASSERT_EQ(rm.size(), 10u);
  EXPECT_EQ(rl, rm);
  EXPECT_EQ(sorted_lines(local / "results.csv", true), sorted_lines(mpi / "results.csv", true));
  // The ranks ran their points in process, as a local sweep does (issue 35 item 4): an ok point
  // left no directory (`tessera run` executed per point writes its config and reports there).
  for (const auto& l : rm) {
    const json row = json::parse(l);
    EXPECT_EQ(fs::exists(mpi / "points" / row["point"].get<std::string>()), row["status"] != "ok") << l;
  }
  // Resume through MPI: nothing left, nothing duplicated.
  const Result again = sh(launcher + " " + kBin + " sweep experiments/smoke.yaml --mpi --resume --out " + mpi.string());
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(sorted_lines(mpi / "results.jsonl"), rm);
  // Rank 0's refusal reaches every rank: no hang, exit 2.
  const Result refused = sh(launcher + " " + kBin + " sweep experiments/smoke.yaml --mpi --out " + mpi.string());
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  EXPECT_NE(refused.output.find("--resume"), std::string::npos) << refused.output;
#endif
}

TEST(SweepCli, ResumeAfterKill9LosesNothingRepeatsNothing) {
  const fs::path dir = scratch("kill");
  // 36 points of MLP0 at -j 1: a few seconds, so the kill lands mid-way.
  const fs::path exp = write_experiment(dir,
                                        "workloads: [" + kSrc + "/workloads/tpu/mlp0.yaml]\n"
                                        "parameters:\n"
                                        "  grid:\n"
                                        "    array.rows: [64, 128, 256]\n"
                                        "    weight_memory.bandwidth_gb_per_s: [20, 34, 68, 136]\n"
                                        "    clock_mhz: [500, 700, 1050]\n"
                                        "derived: {array.cols: '${array.rows}'}\n"
                                        "metrics: [summary.latency_s, summary.cycles.total]\n");
  const fs::path out = dir / "out";
  const Result listed = sh(kBin + " sweep " + exp.string() + " --list");
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  std::set<std::string> expected;
  for (const auto& l : text_lines(listed.output)) {
    if (!l.empty() && l[0] == '{') expected.insert(json::parse(l)["point"].get<std::string>());
  }
  ASSERT_EQ(expected.size(), 36u);

  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string e = exp.string(), o = out.string();
    execl(kBin.c_str(), kBin.c_str(), "sweep", e.c_str(), "-j", "1", "-q", "--out", o.c_str(), (char*)nullptr);
    _exit(127);
  }
  size_t before = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    before = text_lines(slurp(out / "results.jsonl")).size();
    if (before >= 4) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(pid, SIGKILL);
  int st = 0;
  ::waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFSIGNALED(st)) << "the sweep finished before it could be killed";
  ASSERT_GE(before, 4u);
  const size_t at_kill = text_lines(slurp(out / "results.jsonl")).size();
  ASSERT_LT(at_kill, 36u) << "the sweep finished before it could be killed";
  // And as if the kill had landed inside a write: a torn last line.
  { std::ofstream(out / "results.jsonl", std::ios::app) << "{\"point\":\"0123456789abcdef\",\"ind"; }

  const Result r = sh(kBin + " sweep " + exp.string() + " -j 2 --resume --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("dropped 1 incomplete line"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(" + std::to_string(at_kill) + " already done)"), std::string::npos) << r.output;
  std::multiset<std::string> got;
  for (const auto& l : text_lines(slurp(out / "results.jsonl"))) {
    const json row = json::parse(l);  // every line complete
    EXPECT_EQ(row["status"], "ok") << l;
    got.insert(row["point"].get<std::string>());
  }
  EXPECT_EQ(got.size(), 36u);
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), expected);
  EXPECT_EQ(text_lines(slurp(out / "results.csv")).size(), 37u);
}

TEST(SweepCli, BadExperimentIsExit2WithLocation) {
  const fs::path dir = scratch("bad");
  const fs::path exp = write_experiment(dir,
                                        "workloads: [" + kSrc + "/workloads/tpu/mlp1.yaml]\n"
                                        "parameters:\n"
                                        "  grid:\n"
                                        "    array.rows: [64]\n"
                                        "metrics: [summary.latency_s]\n"
                                        "metric: [oops]\n");
  const Result r = sh(kBin + " sweep " + exp.string() + " --out " + (dir / "out").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("exp.yaml:7:1: metric: unknown key"), std::string::npos) << r.output;
}

TEST(SweepCli, PrecisionSweepInt16SlowerAndInvalidPrecisionFailsOnePoint) {
  const fs::path dir = scratch("precision");
  // Compute-bound on TPU v1: four 3x3 convolutions of 256 channels on 32x32 maps.
  std::ofstream(dir / "convs.yaml") << "name: convs\nbatch: 2\ndtype: int8\n"
                                       "inputs:\n  - {name: x, shape: [32, 32, 256]}\nlayers:\n"
                                       "  - {name: c1, op: conv2d, filters: 256, kernel: 3, padding: same, activation: relu}\n"
                                       "  - {name: c2, op: conv2d, filters: 256, kernel: 3, padding: same, activation: relu}\n"
                                       "  - {name: c3, op: conv2d, filters: 256, kernel: 3, padding: same, activation: relu}\n"
                                       "  - {name: c4, op: conv2d, filters: 256, kernel: 3, padding: same}\n"
                                       "outputs: [c4]\n";
  fs::create_directories(dir / "policies");
  std::ofstream(dir / "policies/wide-weights.yaml") << "name: wide-weights\ndefault: {activations: int8, weights: int16}\n";
  const fs::path exp = write_experiment(dir,
                                        "workloads: [convs.yaml]\n"
                                        "parameters:\n"
                                        "  grid:\n"
                                        "    precision: [int8, int16, int4, policies/wide-weights.yaml]\n"
                                        "metrics: [summary.latency_s, summary.cycles.array_active, summary.peak_tops,\n"
                                        "          workload.precision]\n");
  const fs::path out = dir / "out";
  const Result r = sh(kBin + " sweep " + exp.string() + " -j 2 --out " + out.string());
  ASSERT_EQ(r.exit_code, 4) << r.output;  // the failed point does not stop the sweep; it sets the exit code
  EXPECT_NE(r.output.find("4/4 done, 1 failed"), std::string::npos) << r.output;
  const auto rows = rows_by_index(out);
  ASSERT_EQ(rows.size(), 4u);
  for (size_t i : {0, 1, 3}) ASSERT_EQ(rows[i]["status"], "ok") << rows[i].dump();
  const json& int8 = rows[0]["metrics"];
  const json& int16 = rows[1]["metrics"];
  const json& wide = rows[3]["metrics"];
  EXPECT_EQ(rows[1]["params"]["precision"], "int16");
  EXPECT_EQ(int8["workload.precision"], "int8");
  EXPECT_EQ(int16["workload.precision"], "int16");
  // The policy file, resolved against the experiment's directory (the report names the spec it ran).
  EXPECT_EQ(wide["workload.precision"], (dir / "policies/wide-weights.yaml").string());
  // Quarter-rate MACs for int16 x int16, half rate for int8 x int16 (tpu-v1 mac_modes).
  EXPECT_GT(int16["summary.latency_s"].get<double>(), 2 * int8["summary.latency_s"].get<double>());
  EXPECT_GT(wide["summary.latency_s"].get<double>(), int8["summary.latency_s"].get<double>());
  // (Streaming cycles scale by 1/rate; the fill and drain of each tile do not.)
  const double int16_ratio = int16["summary.cycles.array_active"].get<double>() / int8["summary.cycles.array_active"].get<double>();
  const double wide_ratio = wide["summary.cycles.array_active"].get<double>() / int8["summary.cycles.array_active"].get<double>();
  EXPECT_GT(int16_ratio, 3.5);
  EXPECT_LE(int16_ratio, 4.0);
  EXPECT_GT(wide_ratio, 1.75);
  EXPECT_LE(wide_ratio, 2.0);
  EXPECT_NEAR(int16["summary.peak_tops"].get<double>() / int8["summary.peak_tops"].get<double>(), 0.25, 1e-9);
  // A policy tessera run refuses (int4 is for weights only): one failed row with its message.
  EXPECT_EQ(rows[2]["status"], "failed");
  EXPECT_EQ(rows[2]["params"]["precision"], "int4");
  const std::string err = rows[2]["error"];
  EXPECT_NE(err.find("exit 2: "), std::string::npos) << err;
  EXPECT_NE(err.find("--precision 'int4': int4 is for weights only"), std::string::npos) << err;
  EXPECT_NE(slurp(out / "results.csv").find(",precision,"), std::string::npos);
}

TEST(SweepCli, OnnxWorkloadWithSweptInputShape) {
  const fs::path dir = scratch("onnx");
  write_tiny_onnx(dir);
  const fs::path exp = write_experiment(dir,
                                        "workloads:\n"
                                        "  - {path: tiny.onnx, batch: 1, input_shapes: {x: [1, 32, 64]}, name: tiny32}\n"
                                        "  - {path: tiny.onnx, batch: [1, 2], name: tiny}\n"
                                        "parameters:\n"
                                        "  - grid:\n"
                                        "      input_shape.sequence: [16, 64]\n"
                                        "  - points:\n"
                                        "      - {input_shape.nope: 3}\n"
                                        "metrics: [summary.latency_s, summary.macs]\n"
                                        "keep_reports: true\n");
  const fs::path out = dir / "out";
  const Result r = sh(kBin + " sweep " + exp.string() + " -j 2 --out " + out.string());
  ASSERT_EQ(r.exit_code, 4) << r.output;  // some bindings fail by design
  const auto rows = rows_by_index(out);
  // tiny32: its own binding and the swept sequence disagree (16, 64) or the input is unknown (nope);
  // tiny at batch 1 and 2: sequence 16 and 64 run, nope fails.
  ASSERT_EQ(rows.size(), 9u);
  std::map<std::pair<int64_t, int64_t>, double> macs;  // (batch, sequence) -> MACs
  for (const auto& row : rows) {
    const std::string err = row["error"].is_null() ? "" : row["error"].get<std::string>();
    if (row["workload"] == "tiny32") {
      EXPECT_EQ(row["status"], "failed") << row.dump();
    } else if (row["params"]["input_shape.nope"].is_null()) {
      ASSERT_EQ(row["status"], "ok") << row.dump();
      macs[{row["batch"], row["params"]["input_shape.sequence"]}] = row["metrics"]["summary.macs"].get<double>();
    } else {
      EXPECT_EQ(row["status"], "failed");
      EXPECT_NE(err.find("'nope', which is neither a graph input (x) nor a named dimension (batch, sequence)"),
                std::string::npos)
          << err;
    }
  }
  ASSERT_EQ(macs.size(), 4u);
  EXPECT_EQ((macs[{1, 16}]), 16 * 64 * 64);
  EXPECT_EQ((macs[{1, 64}]), 64 * 64 * 64);
  EXPECT_EQ((macs[{2, 64}]), 2 * 64 * 64 * 64);
  // The point's command line is in its generated config's header.
  const std::string cfg = slurp(out / "points" / rows[3]["point"].get<std::string>() / "config.yaml");
  EXPECT_NE(cfg.find("run with: --input-shape sequence="), std::string::npos) << cfg;
}

// A metric path the report does not have is exit 2 before any point runs, naming the closest
// paths (issue 33 item 3).
TEST(SweepCli, UnknownMetricPathIsExit2BeforeAnyPoint) {
  const fs::path dir = scratch("metric-typo");
  fs::create_directories(dir);
  const fs::path exp = write_experiment(dir, "name: typo\nworkloads:\n  - path: " + kSrc +
                                                 "/workloads/tpu/mlp1.yaml\n    batch: [8]\n"
                                                 "parameters:\n  grid:\n    array.rows: [128, 256]\n"
                                                 "metrics: [summary.latency_s, summary.inferences_per_sec]\n");
  const Result r = sh(kBin + " sweep " + exp.string() + " --out " + (dir / "out").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("metric 'summary.inferences_per_sec': report.json has no 'summary.inferences_per_sec'; "
                          "closest: summary.inferences_per_s"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir / "out" / "results.jsonl"));
  // Computed metrics' names are checked too; list indices are numbers.
  const fs::path exp2 = write_experiment(dir, "name: typo2\nworkloads:\n  - path: " + kSrc +
                                                  "/workloads/tpu/mlp1.yaml\n    batch: [8]\n"
                                                  "parameters:\n  grid:\n    array.rows: [128]\n"
                                                  "metrics:\n  - layers.0.latency_s\n"
                                                  "  - {name: x, expr: \"summary.latency_s * summary.tokens_per_s\"}\n");
  const Result r2 = sh(kBin + " sweep " + exp2.string() + " --out " + (dir / "out2").string());
  EXPECT_EQ(r2.exit_code, 2) << r2.output;
  EXPECT_NE(r2.output.find("metric 'x': report.json has no 'summary.tokens_per_s'"), std::string::npos) << r2.output;
}

// The 36 points of the kill test: 3 array sizes x 4 weight bandwidths x 3 clocks of MLP0.
const char* const kThirtySixPoints =
    "parameters:\n"
    "  grid:\n"
    "    array.rows: [64, 128, 256]\n"
    "    weight_memory.bandwidth_gb_per_s: [20, 34, 68, 136]\n"
    "    clock_mhz: [500, 700, 1050]\n"
    "derived: {array.cols: '${array.rows}'}\n"
    "metrics: [summary.latency_s, summary.cycles.total, summary.utilization, arch.clock_mhz]\n";

TEST(SweepCli, SharedProgramsKeptReportsAndOwnProgramsGiveTheSameRows) {
  // Bandwidth and clock are keys the compiler does not read (sim/compiler/config_keys.h): the
  // 36 points run 3 programs, compiled once each in the sweep process. Rows are the same with
  // every point compiling its own program, and with the reports kept.
  const fs::path dir = scratch("sharing");
  const fs::path exp = write_experiment(dir, "workloads: [" + kSrc + "/workloads/tpu/mlp0.yaml]\n" + kThirtySixPoints);
  const fs::path shared = dir / "shared", own = dir / "own", kept = dir / "kept";
  ASSERT_EQ(sh(kBin + " sweep " + exp.string() + " -j 2 -q --out " + shared.string()).exit_code, 0);
  ASSERT_EQ(sh(kBin + " sweep " + exp.string() + " -j 2 -q --no-shared-programs --out " + own.string()).exit_code, 0);
  ASSERT_EQ(sh(kBin + " sweep " + exp.string() + " -j 1 -q --keep-reports --out " + kept.string()).exit_code, 0);
  const auto rows = sorted_lines(shared / "results.csv", true);
  ASSERT_EQ(rows.size(), 36u);
  EXPECT_EQ(rows, sorted_lines(own / "results.csv", true));
  EXPECT_EQ(rows, sorted_lines(kept / "results.csv", true));
  EXPECT_EQ(sorted_lines(shared / "results.jsonl"), sorted_lines(own / "results.jsonl"));
  EXPECT_NE(slurp(shared / "sweep.log").find("programs compiled in the sweep process (shared by its points): 3\n"),
            std::string::npos) << slurp(shared / "sweep.log");
  EXPECT_NE(slurp(own / "sweep.log").find("programs compiled in the sweep process (shared by its points): 0\n"),
            std::string::npos);
  // Only the rows without --keep-reports; every report with it, the same as `tessera run` writes.
  EXPECT_TRUE(fs::is_empty(shared / "points"));
  const json row = json::parse(text_lines(slurp(kept / "results.jsonl"))[5]);
  const std::string id = row["point"];
  for (const char* f : {"config.yaml", "report.json", "layers.csv", "summary.md"}) {
    EXPECT_TRUE(fs::exists(kept / "points" / id / f)) << f;
  }
  const fs::path alone = dir / "alone";
  const Result run = sh("cd " + kept.string() + " && " + kBin + " run -a points/" + id + "/config.yaml -w " + kSrc +
                        "/workloads/tpu/mlp0.yaml --batch " + std::to_string(row["batch"].get<int64_t>()) + " -q -o " + alone.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(slurp(alone / "report.json"), slurp(kept / "points" / id / "report.json"));
}

TEST(SweepCli, PointsWhoseMetricsReadNoCycleBreakdownGiveTheRowsOfTheWholeReport) {
  // Metrics that read no key of the cycle breakdown: the points are simulated without it
  // (engine::SimulateOptions::cycle_breakdown, issue 35), and their rows are those of the
  // whole report (--keep-reports simulates with it).
  const fs::path dir = scratch("no-breakdown");
  std::string points = kThirtySixPoints;
  points.replace(points.find("metrics:"), std::string::npos,
                 "metrics: [summary.latency_s, summary.utilization, summary.energy_j, summary.busy_cycles.array]\n");
  const fs::path exp = write_experiment(dir, "workloads: [" + kSrc + "/workloads/tpu/mlp0.yaml]\n" + points);
  const fs::path lean = dir / "lean", kept = dir / "kept";
  ASSERT_EQ(sh(kBin + " sweep " + exp.string() + " -j 2 -q --out " + lean.string()).exit_code, 0);
  ASSERT_EQ(sh(kBin + " sweep " + exp.string() + " -j 2 -q --keep-reports --out " + kept.string()).exit_code, 0);
  const auto rows = sorted_lines(lean / "results.csv", true);
  ASSERT_EQ(rows.size(), 36u);
  EXPECT_EQ(rows, sorted_lines(kept / "results.csv", true));
  EXPECT_EQ(sorted_lines(lean / "results.jsonl"), sorted_lines(kept / "results.jsonl"));
}

TEST(SweepCli, GroupSyncedResultsSurviveKill9) {
  // No fsync at all before the kill (--sync-interval 3600): the rows a killed sweep wrote
  // are all there, none torn or doubled, and the resume runs exactly the rest.
  const fs::path dir = scratch("kill-group");
  const fs::path exp = write_experiment(dir, "workloads: [" + kSrc + "/workloads/tpu/mlp0.yaml]\n" + kThirtySixPoints);
  const fs::path out = dir / "out";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string e = exp.string(), o = out.string();
    execl(kBin.c_str(), kBin.c_str(), "sweep", e.c_str(), "-j", "2", "-q", "--sync-interval", "3600", "--out", o.c_str(),
          (char*)nullptr);
    _exit(127);
  }
  size_t before = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    before = text_lines(slurp(out / "results.jsonl")).size();
    if (before >= 6) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(pid, SIGKILL);
  int st = 0;
  ::waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFSIGNALED(st)) << "the sweep finished before it could be killed";
  const auto at_kill = text_lines(slurp(out / "results.jsonl"));
  ASSERT_GE(at_kill.size(), before);
  ASSERT_LT(at_kill.size(), 36u) << "the sweep finished before it could be killed";
  std::set<std::string> done_at_kill;
  for (const auto& l : at_kill) done_at_kill.insert(json::parse(l)["point"].get<std::string>());  // every line complete
  EXPECT_EQ(done_at_kill.size(), at_kill.size());

  const Result r = sh(kBin + " sweep " + exp.string() + " -j 2 --resume --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(" + std::to_string(at_kill.size()) + " already done)"), std::string::npos) << r.output;
  const auto all = text_lines(slurp(out / "results.jsonl"));
  std::multiset<std::string> got;
  for (const auto& l : all) got.insert(json::parse(l)["point"].get<std::string>());
  EXPECT_EQ(got.size(), 36u);
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()).size(), 36u);  // none twice
  // The rows written before the kill are kept as they were, first.
  for (size_t i = 0; i < at_kill.size(); ++i) EXPECT_EQ(all[i], at_kill[i]);
}
