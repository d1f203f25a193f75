// Determinism: the same inputs give byte-identical report files across runs, across
// `tessera sweep -j` values and across MPI rank counts. Every file a design point leaves
// (its generated config.yaml, report.json, layers.csv, summary.md) is compared byte for
// byte, not just the result rows. The measured `host` baseline is the one deliberate
// exception (a wall-clock measurement) and is not used here.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/run_cli.h"

namespace fs = std::filesystem;
using tessera_test::run_shell;
using tessera_test::run_tessera;
using tessera_test::slurp;

namespace {

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::path(TESSERA_BINARY_DIR) / "test-out" / "determinism" / name;
  fs::remove_all(dir);
  fs::create_directories(dir.parent_path());
  return dir;
}

// Every file under dir/points, by path relative to dir, with its bytes.
std::map<std::string, std::string> point_files(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir / "points")) {
    if (e.is_regular_file()) out[fs::relative(e.path(), dir).string()] = slurp(e.path());
  }
  return out;
}

std::vector<std::string> sorted_lines(const fs::path& p) {
  std::vector<std::string> out;
  std::istringstream in(slurp(p));
  for (std::string l; std::getline(in, l);) out.push_back(l);
  std::sort(out.begin(), out.end());
  return out;
}

void expect_same_sweep(const fs::path& a, const fs::path& b) {
  const auto fa = point_files(a), fb = point_files(b);
  ASSERT_FALSE(fa.empty());
  ASSERT_EQ(fa.size(), fb.size()) << a << " vs " << b;
  for (const auto& [name, bytes] : fa) {
    ASSERT_TRUE(fb.count(name)) << name << " missing in " << b;
    EXPECT_TRUE(bytes == fb.at(name)) << name << " differs between " << a << " and " << b;
  }
  EXPECT_EQ(sorted_lines(a / "results.jsonl"), sorted_lines(b / "results.jsonl"));
  EXPECT_EQ(sorted_lines(a / "results.csv"), sorted_lines(b / "results.csv"));
}

}  // namespace

TEST(Determinism, SweepPointFilesIdenticalForOneAndTwoJobs) {
  const fs::path j1 = scratch("j1"), j2 = scratch("j2");
  // experiments/smoke.yaml has failing points by design: a sweep with failed points exits 4.
  auto r = run_tessera("sweep experiments/smoke.yaml -j 1 -q --keep-reports --out " + j1.string());
  ASSERT_EQ(r.exit_code, 4) << r.output;
  r = run_tessera("sweep experiments/smoke.yaml -j 2 -q --keep-reports --out " + j2.string());
  ASSERT_EQ(r.exit_code, 4) << r.output;
  expect_same_sweep(j1, j2);
  // At least the nine valid points left full reports.
  size_t reports = 0;
  for (const auto& [name, bytes] : point_files(j1)) reports += name.ends_with("/report.json");
  EXPECT_GE(reports, 8u);
}

TEST(Determinism, SweepPointFilesIdenticalAcrossMpiRankCounts) {
#ifndef TESSERA_MPIRUN
  GTEST_SKIP() << "tessera-mpi not built (install libboost-mpi-dev openmpi-bin)";
#else
  const fs::path local = scratch("local");
  auto r = run_tessera("sweep experiments/smoke.yaml -j 2 -q --keep-reports --out " + local.string());
  ASSERT_EQ(r.exit_code, 4) << r.output;  // failing points by design
  for (int ranks : {2, 3}) {
    const fs::path mpi = scratch("mpi-" + std::to_string(ranks));
    const std::string launcher = tessera_test::mpi_launcher(ranks);
    r = run_shell(launcher + " " + tessera_test::tessera_path() + " sweep experiments/smoke.yaml --mpi -q --keep-reports --out " +
                  mpi.string());
    ASSERT_EQ(r.exit_code, 4) << r.output;
    expect_same_sweep(local, mpi);
  }
#endif
}

TEST(Determinism, OnnxRunWithBaselinesAndTraceIsByteIdentical) {
  const fs::path model = fs::path(TESSERA_BINARY_DIR) / "workloads" / "onnx" / "bert_base.onnx";
  if (!fs::exists(model)) GTEST_SKIP() << model << " not generated (needs python3-onnx)";
  std::map<std::string, std::string> first;
  for (int run = 0; run < 2; ++run) {
    const fs::path out = scratch("bert-" + std::to_string(run));
    const auto r = run_tessera("run -q -a configs/tpu-v1.yaml -w " + model.string() +
                               " --input-shape input_ids=1,128 --baseline k80,h100-sxm -o " + out.string() +
                               " --trace " + out.string() + "-trace.json");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::map<std::string, std::string> files;
    for (const char* f : {"report.json", "layers.csv", "summary.md"}) files[f] = slurp(out / f);
    files["trace.json"] = slurp(out.string() + "-trace.json");
    for (const auto& [name, bytes] : files) ASSERT_FALSE(bytes.empty()) << name;
    if (run == 0) {
      first = files;
    } else {
      for (const auto& [name, bytes] : files) EXPECT_TRUE(bytes == first.at(name)) << name << " differs between runs";
    }
  }
}
