// Hostile input and environments through the real `tessera sweep` (docs/reliability.md, audit
// classes D3, D5, D7, D9, D15, D18, D20, D21): each with the audit's reproducer and variants.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

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

fs::path scratch_dir(const std::string& name) { return tessera_test::scratch_dir("sweep-hostile", name); }

// Two quick MLP1 points.
// With its points' reports kept (keep_reports: true): the files a point writes are what these
// tests attack (without it, an ok point writes none, issue 35).
fs::path tiny_experiment(const fs::path& dir, const std::string& extra = "") {
  const fs::path p = dir / "exp.yaml";
  std::ofstream(p) << "base: " << kSrc << "/configs/tpu-v1.yaml\nworkloads: [" << kSrc
                   << "/workloads/tpu/mlp1.yaml]\nmetrics: [summary.latency_s]\n"
                      "parameters: {grid: {array.rows: [64, 128]}}\n"
                   << extra << "keep_reports: true\n";
  return p;
}

std::vector<std::string> point_ids(const fs::path& exp) {
  std::vector<std::string> ids;
  for (const auto& l : text_lines(sh(kBin + " sweep " + exp.string() + " --list").output)) {
    if (!l.empty() && l[0] == '{') ids.push_back(json::parse(l)["point"].get<std::string>());
  }
  return ids;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  for (size_t k = 0; k < n; ++k) out += s;
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------- D3, D5 end to end

TEST(SweepHostileCli, DeepParenthesesAndEndlessPowerEndCleanly) {
  const fs::path dir = scratch_dir("expr");
  // The audit's reproducers: SIGSEGV (139) and an endless loop (timeout 124) before.
  std::ofstream(dir / "paren.yaml") << "base: " << kSrc << "/configs/tpu-v1.yaml\nworkloads: [" << kSrc
                                    << "/workloads/tpu/mlp1.yaml]\nmetrics: [summary.latency_s]\nconstraints:\n  - "
                                    << repeat("(", 10000) << "1 == 1" << repeat(")", 10000) << "\n";
  Result r = sh("timeout 60 " + kBin + " sweep " + (dir / "paren.yaml").string() + " --list");
  EXPECT_EQ(r.exit_code, 2) << r.output.substr(0, 400);
  EXPECT_TRUE(has(r.output, "paren.yaml:5:5: constraints[0]: constraint: column 258: ")) << r.output.substr(0, 400);
  EXPECT_TRUE(has(r.output, "nested more than 256 levels")) << r.output.substr(0, 400);
  std::ofstream(dir / "neg.yaml") << "base: " << kSrc << "/configs/tpu-v1.yaml\nworkloads: [" << kSrc
                                  << "/workloads/tpu/mlp1.yaml]\nmetrics: [summary.latency_s]\nconstraints:\n  - \""
                                  << repeat("not ", 200000) << "true\"\n";
  r = sh("timeout 60 " + kBin + " sweep " + (dir / "neg.yaml").string() + " --list");
  EXPECT_EQ(r.exit_code, 2) << r.output.substr(0, 400);
  std::ofstream(dir / "pow.yaml") << "base: " << kSrc << "/configs/tpu-v1.yaml\nworkloads: [" << kSrc
                                  << "/workloads/tpu/mlp1.yaml]\nmetrics: [summary.latency_s]\n"
                                     "constraints: [\"1 ** 9223372036854775807 == 1\", \"(-1) ** 9223372036854775807 == -1\"]\n";
  r = sh("timeout 20 " + kBin + " sweep " + (dir / "pow.yaml").string() + " --list");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "1 points (1 candidates, 0 pruned")) << r.output;
}

// ---------------------------------------------------------------------------------------- D9

TEST(SweepHostileCli, NonUtf8ExperimentIsExit2NotAnInternalError) {
  const fs::path dir = scratch_dir("utf8");
  const fs::path exp = tiny_experiment(dir, "name: caf\xe9\n");
  for (const std::string& mode : {std::string(" --list"), " -q --out " + (dir / "out").string()}) {
    const Result r = sh(kBin + " sweep " + exp.string() + mode);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_TRUE(has(r.output, "exp.yaml:5:7: not valid UTF-8 (byte 0xe9 at offset 3")) << r.output;
  }
  EXPECT_FALSE(fs::exists(dir / "out" / "results.jsonl"));
}

// ---------------------------------------------------------------------------------------- D7

// The audit's reproducer: a link planted at points/<id>/config.yaml made the sweep overwrite
// its target. Now the link is replaced and the target keeps its contents.
TEST(SweepHostileCli, PlantedConfigLinkIsReplacedNotFollowed) {
  const fs::path dir = scratch_dir("link-config");
  const fs::path exp = tiny_experiment(dir);
  const auto ids = point_ids(exp);
  ASSERT_EQ(ids.size(), 2u);
  std::ofstream(dir / "victim") << "precious\n";
  const fs::path out = dir / "out";
  fs::create_directories(out / "points" / ids[0]);
  fs::create_symlink(dir / "victim", out / "points" / ids[0] / "config.yaml");
  // And the files of the point's run (report.json etc. are written by tessera run by rename).
  fs::create_symlink(dir / "victim", out / "points" / ids[0] / "report.json");
  fs::create_symlink(dir / "victim", out / "points" / ids[0] / "layers.csv");
  // Whole-file outputs of the sweep itself: replaced as well.
  for (const char* f : {"results.csv", "sweep.json"}) fs::create_symlink(dir / "victim", out / f);
  const Result r = sh(kBin + " sweep " + exp.string() + " -j 2 -q --out " + out.string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(slurp(dir / "victim"), "precious\n");
  EXPECT_FALSE(fs::is_symlink(out / "points" / ids[0] / "config.yaml"));
  EXPECT_FALSE(fs::is_symlink(out / "results.csv"));
  EXPECT_FALSE(fs::is_symlink(out / "sweep.json"));
  EXPECT_EQ(text_lines(slurp(out / "results.jsonl")).size(), 2u);
}

// Files the sweep reads before it writes them (results.jsonl), appends to or locks (sweep.log,
// .lock) and directories it writes into
// (points/, points/<id>/) cannot be replaced: a link there stops the sweep, exit 2, naming it.
TEST(SweepHostileCli, LinksWhereTheSweepAppendsOrDescendStopIt) {
  const fs::path base = scratch_dir("link-stop");
  std::ofstream(base / "victim") << "precious\n";
  fs::create_directories(base / "victim-dir");
  struct Case {
    std::string name;
    std::string link;  // relative to the output directory; "{id}" = the first point's id
    fs::path target;
  };
  const std::vector<Case> cases = {{"log", "sweep.log", base / "victim"},
                                   {"results", "results.jsonl", base / "victim"},
                                   {"lock", ".lock", base / "victim"},
                                   {"points", "points", base / "victim-dir"},
                                   {"point", "points/{id}", base / "victim-dir"}};
  for (const auto& c : cases) {
    const fs::path dir = base / c.name;
    fs::create_directories(dir);
    const fs::path exp = tiny_experiment(dir);
    const auto ids = point_ids(exp);
    ASSERT_EQ(ids.size(), 2u);
    std::string rel = c.link;
    if (rel.find("{id}") != std::string::npos) rel.replace(rel.find("{id}"), 4, ids[0]);
    const fs::path out = dir / "out";
    fs::create_directories((out / rel).parent_path());
    fs::create_symlink(c.target, out / rel);
    const Result r = sh(kBin + " sweep " + exp.string() + " -j 1 -q --out " + out.string());
    EXPECT_EQ(r.exit_code, 2) << c.name << ": " << r.output;
    EXPECT_TRUE(has(r.output, (out / rel).string() + ": is a symbolic link")) << c.name << ": " << r.output;
    EXPECT_EQ(slurp(base / "victim"), "precious\n") << c.name;
    EXPECT_TRUE(fs::is_empty(base / "victim-dir")) << c.name;
  }
  // The output directory itself may be the user's own link (out -> /scratch/...).
  const fs::path dir = base / "own";
  fs::create_directories(dir / "real");
  const fs::path exp = tiny_experiment(dir);
  fs::create_symlink(dir / "real", dir / "out");
  const Result r = sh(kBin + " sweep " + exp.string() + " -j 2 -q --out " + (dir / "out").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(text_lines(slurp(dir / "real" / "results.jsonl")).size(), 2u);
}

// The same links under an MPI sweep: rank 0 finds them while descending into the output
// directory, and the job ends with the local sweep's message and exit 2, not an internal error.
TEST(SweepHostileCli, LinksWhereAnMpiSweepDescendsStopItWithExit2) {
#ifndef TESSERA_MPIRUN
  GTEST_SKIP() << "tessera-mpi not built (install libboost-mpi-dev openmpi-bin)";
#else
  const fs::path base = scratch_dir("mpi-link-stop");
  std::ofstream(base / "victim") << "precious\n";
  fs::create_directories(base / "victim-dir");
  struct Case {
    std::string name;
    std::string link;  // relative to the output directory; "{id}" = the first point's id
    fs::path target;
  };
  const std::vector<Case> cases = {{"log", "sweep.log", base / "victim"},
                                   {"points", "points", base / "victim-dir"},
                                   {"point", "points/{id}", base / "victim-dir"}};
  for (const auto& c : cases) {
    const fs::path dir = base / c.name;
    fs::create_directories(dir);
    const fs::path exp = tiny_experiment(dir);
    const auto ids = point_ids(exp);
    ASSERT_EQ(ids.size(), 2u);
    std::string rel = c.link;
    if (rel.find("{id}") != std::string::npos) rel.replace(rel.find("{id}"), 4, ids[0]);
    const fs::path out = dir / "out";
    fs::create_directories((out / rel).parent_path());
    fs::create_symlink(c.target, out / rel);
    const Result r =
        sh(tessera_test::mpi_launcher(2) + " " + kBin + " sweep " + exp.string() + " --mpi -j 1 -q --out " + out.string());
    EXPECT_EQ(r.exit_code, 2) << c.name << ": " << r.output;
    EXPECT_TRUE(has(r.output, "tessera: error: " + (out / rel).string() + ": is a symbolic link"))
        << c.name << ": " << r.output;
    EXPECT_EQ(slurp(base / "victim"), "precious\n") << c.name;
    EXPECT_TRUE(fs::is_empty(base / "victim-dir")) << c.name;
  }
#endif
}

// ---------------------------------------------------------------------------------------- D18

// Temporary files of a killed write (`NAME.tmp.XXXXXX`, kill -9 between create and rename) are
// removed by the next run or --resume, in the output directory and in every point directory.
TEST(SweepHostileCli, StrayTemporariesAreRemovedByTheNextRun) {
  const fs::path dir = scratch_dir("tmp");
  const fs::path exp = tiny_experiment(dir);
  const auto ids = point_ids(exp);
  ASSERT_EQ(ids.size(), 2u);
  const fs::path out = dir / "out";
  ASSERT_EQ(sh(kBin + " sweep " + exp.string() + " -j 2 -q --out " + out.string()).exit_code, 0);
  const std::vector<fs::path> stray = {out / "results.jsonl.tmp.AbC123", out / "sweep.json.tmp.x1y2z3",
                                       out / "points" / ids[0] / "report.json.tmp.Zz9Yy8",
                                       out / "points" / ids[1] / "summary.md.tmp.000000"};
  for (const auto& p : stray) std::ofstream(p) << "partial";
  std::ofstream(out / "notes.tmp.txt") << "mine";            // not a temporary name
  fs::create_directories(out / "keep.tmp.abcdef");           // a directory of that shape is not ours
  fs::create_symlink(dir / "exp.yaml", out / "link.tmp.qwerty");  // a link: removed, target kept
  const Result r = sh(kBin + " sweep " + exp.string() + " --resume --out " + out.string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "removed 5 temporary file(s) left by a killed write")) << r.output;
  for (const auto& p : stray) EXPECT_FALSE(fs::exists(fs::symlink_status(p))) << p;
  EXPECT_FALSE(fs::exists(fs::symlink_status(out / "link.tmp.qwerty")));
  EXPECT_TRUE(fs::exists(dir / "exp.yaml"));
  EXPECT_TRUE(fs::exists(out / "notes.tmp.txt"));
  EXPECT_TRUE(fs::is_directory(out / "keep.tmp.abcdef"));

  // A fresh run in a directory a killed sweep left without rows cleans up too.
  const fs::path out2 = dir / "out2";
  fs::create_directories(out2 / "points" / ids[1]);
  std::ofstream(out2 / "results.csv.tmp.abcdef") << "partial";
  std::ofstream(out2 / "points" / ids[1] / "config.yaml.tmp.abcdef") << "partial";
  const Result r2 = sh(kBin + " sweep " + exp.string() + " -q --out " + out2.string());
  EXPECT_EQ(r2.exit_code, 0) << r2.output;
  EXPECT_FALSE(fs::exists(out2 / "results.csv.tmp.abcdef"));
  EXPECT_FALSE(fs::exists(out2 / "points" / ids[1] / "config.yaml.tmp.abcdef"));
}

// ---------------------------------------------------------------------------------------- D20

TEST(SweepHostileCli, PolicyPathOutsideTheExperimentIsRefusedBeforeAnythingRuns) {
  const fs::path dir = scratch_dir("leak");
  const fs::path exp = dir / "leak.yaml";
  // The audit's reproducer.
  std::ofstream(exp) << "base: " << kSrc << "/configs/tpu-v1.yaml\nworkloads: [" << kSrc
                     << "/workloads/tpu/mlp1.yaml]\nmetrics: [summary.latency_s]\n"
                        "parameters: {grid: {precision: [../../../../../../../etc/shadow]}}\n";
  const Result r = sh(kBin + " sweep " + exp.string() + " -j 1 -q --out " + (dir / "out").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "precision: '../../../../../../../etc/shadow' names a policy file outside")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "out" / "results.jsonl"));
  // `out:` naming another place.
  fs::remove_all("/tmp/tessera-hostile-elsewhere");  // (left by a run of an older binary)
  const fs::path exp2 = tiny_experiment(dir, "out: /tmp/tessera-hostile-elsewhere\n");
  const Result r2 = sh(kBin + " sweep " + exp2.string() + " -q");
  EXPECT_EQ(r2.exit_code, 2) << r2.output;
  EXPECT_TRUE(has(r2.output, "out: '/tmp/tessera-hostile-elsewhere': an experiment file may only name")) << r2.output;
  EXPECT_FALSE(fs::exists("/tmp/tessera-hostile-elsewhere"));
}

// ---------------------------------------------------------------------------------------- D21

// A point whose run hits the environment (here a file-size limit, as a full disk would) is
// recorded, the sweep ends with exit 3 saying so, and --resume runs exactly those points again.
TEST(SweepHostileCli, EnvironmentFailuresAreRetriedByResume) {
  const fs::path dir = scratch_dir("env");
  const fs::path exp = tiny_experiment(dir);
  const fs::path out = dir / "out";
  // report.json is ~20 KB; results.jsonl, sweep.log and config.yaml stay under 8 KiB.
  const Result r = sh("ulimit -f 16 && " + kBin + " sweep " + exp.string() + " -j 1 -q --out " + out.string());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_TRUE(has(r.output, "2 of the failures are the environment's")) << r.output;
  auto rows = text_lines(slurp(out / "results.jsonl"));
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& l : rows) EXPECT_EQ(json::parse(l)["status"], "failed") << l;
  const Result again = sh(kBin + " sweep " + exp.string() + " --resume --out " + out.string());
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_TRUE(has(again.output, "2 point(s) that failed for reasons of the environment run again")) << again.output;
  rows = text_lines(slurp(out / "results.jsonl"));
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& l : rows) EXPECT_EQ(json::parse(l)["status"], "ok") << l;
}

// ---------------------------------------------------------------------------------------- D15

#ifdef TESSERA_MPIRUN
namespace {
// The pid of the tessera-mpi process of MPI rank `rank` under `sweep_dir`, or -1.
pid_t find_rank(int rank, const std::string& out_dir) {
  for (const auto& ent : fs::directory_iterator("/proc")) {
    const std::string name = ent.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string cmd = slurp(ent.path() / "cmdline");
    if (cmd.find("tessera-mpi") == std::string::npos || cmd.find(out_dir) == std::string::npos) continue;
    const std::string env = slurp(ent.path() / "environ");
    if (env.find("OMPI_COMM_WORLD_RANK=" + std::to_string(rank) + '\0') != std::string::npos) return std::stoi(name);
  }
  return -1;
}
}  // namespace
#endif

// The audit's reproducer: a stopped rank (kill -STOP) kept the sweep waiting forever. Rank 0
// now gives each handed-out point --rank-timeout seconds: the point is recorded as failed
// (an environment failure), the job ends with exit 3, and --resume completes the sweep.
TEST(SweepHostileCli, StalledMpiRankDoesNotStallTheSweep) {
#ifndef TESSERA_MPIRUN
  GTEST_SKIP() << "tessera-mpi not built (install libboost-mpi-dev openmpi-bin)";
#else
  const fs::path dir = scratch_dir("mpi-stall");
  const fs::path exp = dir / "exp.yaml";
  std::ofstream(exp) << "base: " << kSrc << "/configs/tpu-v1.yaml\nworkloads: [" << kSrc
                     << "/workloads/tpu/mlp0.yaml]\nmetrics: [summary.latency_s]\n"
                        "parameters: {grid: {array.rows: [64, 128, 256], clock_mhz: [500, 700, 900, 1050]}}\n";
  const fs::path out = dir / "out";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string cmd = tessera_test::mpi_launcher(2) + " " + kBin + " sweep " + exp.string() +
                            " --mpi --rank-timeout 3 -q --out " + out.string() + " > " + (dir / "log.txt").string() +
                            " 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), (char*)nullptr);
    _exit(127);
  }
  // Stop rank 1 once the sweep is under way.
  pid_t rank1 = -1;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < until) {
    rank1 = find_rank(1, out.string());
    if (rank1 > 0 && fs::exists(out / "results.jsonl") && !slurp(out / "results.jsonl").empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GT(rank1, 0) << slurp(dir / "log.txt");
  ::kill(rank1, SIGSTOP);
  int st = 0;
  pid_t done = 0;
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while ((done = ::waitpid(pid, &st, WNOHANG)) == 0 && std::chrono::steady_clock::now() < limit) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(rank1, SIGKILL);
  ::kill(rank1, SIGCONT);
  if (done == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &st, 0);
    FAIL() << "the sweep still waits for the stopped rank after 120 s: " << slurp(dir / "log.txt");
  }
  const std::string log = slurp(dir / "log.txt");
  ASSERT_TRUE(WIFEXITED(st)) << log;
  EXPECT_NE(WEXITSTATUS(st), 0) << log;
  EXPECT_TRUE(has(log, "MPI rank 1 ")) << log;
  // Every point has exactly one row; rank 1's unfinished ones say why.
  std::set<std::string> ids;
  size_t timed_out = 0;
  for (const auto& l : text_lines(slurp(out / "results.jsonl"))) {
    const json row = json::parse(l);
    EXPECT_TRUE(ids.insert(row["point"].get<std::string>()).second) << l;
    if (row["status"] == "failed") {
      EXPECT_TRUE(has(row["error"].get<std::string>(), "no result from MPI rank 1 within 3 s (--rank-timeout)")) << l;
      ++timed_out;
    }
  }
  EXPECT_EQ(ids.size(), 12u) << log;
  // --resume (here the local runner) runs the given-up points again.
  const Result again = sh(kBin + " sweep " + exp.string() + " --resume --out " + out.string());
  EXPECT_EQ(again.exit_code, 0) << again.output;
  if (timed_out) {
    EXPECT_TRUE(has(again.output, std::to_string(timed_out) + " point(s) that failed for reasons of the environment"))
        << again.output;
  }
  for (const auto& l : text_lines(slurp(out / "results.jsonl"))) EXPECT_EQ(json::parse(l)["status"], "ok") << l;
#endif
}
