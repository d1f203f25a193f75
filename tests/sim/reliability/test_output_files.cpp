// D10, D13, D16, D18 of the reliability audit: a run's outputs (report.json, layers.csv,
// summary.md and the --trace file) appear as one set or not at all; a failed run keeps
// every file that was there before; an output that is a FIFO, a socket or a directory is
// refused at once (a FIFO used to block forever); temporaries a killed run left behind
// are removed by the next write of the same file.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <string>

#include "hostile.h"
#include "sim/common/atomic_file.h"
#include "sim/common/error.h"

using namespace hostile;

namespace {

const std::string kRun = "run -q -a configs/tpu-v1.yaml -w workloads/tpu/mlp1.yaml ";

CliResult run_to(const fs::path& out, const std::string& extra = "") {
  return cli(kRun + "-o " + out.string() + " " + extra, 30);
}

// Names in `dir` that contain ".tmp.": temporaries left behind.
std::vector<std::string> temporaries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (contains(e.path().filename().string(), ".tmp.")) out.push_back(e.path().string());
  }
  return out;
}

std::string host_tag() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  std::string out;
  for (const char* p = buf; *p && out.size() < 32; ++p) out += (std::isalnum(static_cast<unsigned char>(*p)) || *p == '-') ? *p : '-';
  return out.empty() ? "host" : out;
}

}  // namespace

// ---------------------------------------------------------------- D10: one set or none

// The audit's reproducer: summary.md a directory used to leave report.json and layers.csv.
TEST(OutputFiles, DirectoryInPlaceOfTheLastReportFileWritesNone) {
  const fs::path dir = scratch("set-summary-dir");
  fs::create_directories(dir / "out" / "summary.md");
  const CliResult r = run_to(dir / "out");
  HOSTILE_SKIP_ON_ASAN_FALSE_POSITIVE(r);
  expect_input_error(r, "summary.md: cannot write output file: it is a directory");
  EXPECT_FALSE(fs::exists(dir / "out" / "report.json"));
  EXPECT_FALSE(fs::exists(dir / "out" / "layers.csv"));
  EXPECT_TRUE(temporaries(dir).empty());
}

// The middle file, with an earlier run's set in place: the earlier set stays whole.
TEST(OutputFiles, FailedRunKeepsTheEarlierSetByteIdentical) {
  const fs::path dir = scratch("set-keep-earlier");
  ASSERT_EQ(run_to(dir / "out").exit_code, 0);
  const std::string json = tessera_test::slurp(dir / "out" / "report.json");
  const std::string md = tessera_test::slurp(dir / "out" / "summary.md");
  fs::remove(dir / "out" / "layers.csv");
  fs::create_directories(dir / "out" / "layers.csv");
  const CliResult r = cli("run -q -a configs/tpu-v1.yaml -w workloads/tpu/mlp0.yaml -o " + (dir / "out").string());
  HOSTILE_SKIP_ON_ASAN_FALSE_POSITIVE(r);
  expect_input_error(r, "layers.csv: cannot write output file: it is a directory");
  EXPECT_EQ(tessera_test::slurp(dir / "out" / "report.json"), json);  // mlp1's, not mlp0's
  EXPECT_EQ(tessera_test::slurp(dir / "out" / "summary.md"), md);
  EXPECT_TRUE(temporaries(dir).empty());
}

// A write failure (file-size limit: the trace, the biggest, fails) with an earlier set in place.
TEST(OutputFiles, WriteFailureKeepsEveryEarlierFile) {
  const fs::path dir = scratch("set-write-failure");
  write(dir / "trace.json", "{\"old\":1}");
  ASSERT_EQ(run_to(dir / "out").exit_code, 0);
  const std::string json = tessera_test::slurp(dir / "out" / "report.json");
  const CliResult r = tessera_test::run_shell("trap '' XFSZ; ulimit -f 40 && " + exe() + " " + kRun + "-o " +
                                              (dir / "out").string() + " --trace " + (dir / "trace.json").string());
  expect_input_error(r, "cannot write output file: File too large");
  EXPECT_EQ(tessera_test::slurp(dir / "trace.json"), "{\"old\":1}");
  EXPECT_EQ(tessera_test::slurp(dir / "out" / "report.json"), json);
  EXPECT_TRUE(temporaries(dir).empty());
}

// ---------------------------------------------------------------- D13: the trace

// The audit's reproducer: report.json a directory; the earlier trace.json used to be deleted.
TEST(OutputFiles, FailedRunKeepsTheEarlierTrace) {
  const fs::path dir = scratch("trace-kept");
  fs::create_directories(dir / "o" / "report.json");
  write(dir / "trace.json", "{\"old\":1}");
  const CliResult r = run_to(dir / "o", "--trace " + (dir / "trace.json").string());
  HOSTILE_SKIP_ON_ASAN_FALSE_POSITIVE(r);
  expect_input_error(r, "report.json: cannot write output file: it is a directory");
  EXPECT_EQ(tessera_test::slurp(dir / "trace.json"), "{\"old\":1}");
}

// --trace naming an input by mistake: refused, the input intact.
TEST(OutputFiles, TraceOverAnInputIsRefused) {
  const fs::path dir = scratch("trace-input");
  const std::string cfg = tessera_test::slurp(kSrc / "configs/tpu-v1.yaml");
  const fs::path arch = write(dir / "arch.yaml", cfg);
  CliResult r = cli("run -q -a " + arch.string() + " -w workloads/tpu/mlp1.yaml -o " + (dir / "o").string() +
                        " --trace " + arch.string());
  HOSTILE_SKIP_ON_ASAN_FALSE_POSITIVE(r);
  expect_input_error(r, "is the --arch input of this run");
  EXPECT_EQ(tessera_test::slurp(arch), cfg);
  EXPECT_FALSE(fs::exists(dir / "o" / "report.json"));
  // The listing of `compile -o` likewise (through another spelling of the path).
  const fs::path wl = write(dir / "g.yaml", tessera_test::slurp(kSrc / "workloads/tpu/mlp1.yaml"));
  r = cli("compile -a configs/tpu-v1.yaml -w " + wl.string() + " -o " + (dir / "." / "g.yaml").string());
  expect_input_error(r, "is the --workload input of this run");
}

// ---------------------------------------------------------------- D16: special files

// The audit's reproducer: a FIFO at DIR/report.json blocked the run forever.
TEST(OutputFiles, FifoAsReportFileIsRefusedNotWaitedOn) {
  const fs::path dir = scratch("fifo-report");
  fs::create_directories(dir / "out");
  ASSERT_EQ(mkfifo((dir / "out" / "report.json").c_str(), 0644), 0);
  const auto start = std::chrono::steady_clock::now();
  const CliResult r = run_to(dir / "out");
  HOSTILE_SKIP_ON_ASAN_FALSE_POSITIVE(r);
  expect_input_error(r, "report.json: cannot write output file: it is a FIFO");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(25));
  EXPECT_FALSE(fs::exists(dir / "out" / "layers.csv"));
}

// The same through a symlink, as --trace, and as the compile listing.
TEST(OutputFiles, FifoVariantsAreRefused) {
  const fs::path dir = scratch("fifo-variants");
  ASSERT_EQ(mkfifo((dir / "pipe").c_str(), 0644), 0);
  fs::create_directories(dir / "out");
  fs::create_symlink(dir / "pipe", dir / "out" / "layers.csv");
  CliResult r = run_to(dir / "out");
  HOSTILE_SKIP_ON_ASAN_FALSE_POSITIVE(r);
  expect_input_error(r, "layers.csv: cannot write output file: it is a FIFO (named pipe) (through a symlink)");
  r = run_to(dir / "o2", "--trace " + (dir / "pipe").string());
  HOSTILE_SKIP_ON_ASAN_FALSE_POSITIVE(r);
  expect_input_error(r, "pipe: cannot write output file: it is a FIFO");
  expect_input_error(cli("compile -a configs/tpu-v1.yaml -w workloads/tpu/mlp1.yaml -o " + (dir / "pipe").string(), 30),
                     "it is a FIFO");
  EXPECT_FALSE(fs::exists(dir / "o2" / "report.json"));
}

// Character devices stay usable for the outputs named as files.
TEST(OutputFiles, CharacterDeviceTraceStillWorks) {
  const fs::path dir = scratch("dev-null-trace");
  const CliResult r = run_to(dir / "out", "--trace /dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir / "out" / "report.json"));
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

// ... but not as a report file, which belongs to a set that must be replaceable.
TEST(OutputFiles, CharacterDeviceAsReportFileIsRefused) {
  const fs::path dir = scratch("dev-report");
  fs::create_directories(dir / "out");
  fs::create_symlink("/dev/null", dir / "out" / "summary.md");
  const CliResult r = run_to(dir / "out");
  HOSTILE_SKIP_ON_ASAN_FALSE_POSITIVE(r);
  expect_input_error(r, "summary.md: cannot write output file: it is a device (through a symlink)");
}

// ---------------------------------------------------------------- D18: stale temporaries

TEST(OutputFiles, StaleTemporariesOfDeadWritersAreRemoved) {
  const fs::path dir = scratch("stale-tmp");
  fs::create_directories(dir / "out");
  const std::string host = host_tag();
  // A writer that is gone (no such pid), one that is alive (this test), another host's.
  const fs::path dead = write(dir / "out" / ("report.json.tmp.999999999@" + host + ".aB3dE9"), "partial");
  const fs::path live = write(dir / "out" / ("report.json.tmp." + std::to_string(getpid()) + "@" + host + ".Zz9yX8"), "x");
  const fs::path other = write(dir / "out" / "report.json.tmp.12@another-host.Qw1eR2", "x");
  // Written by an earlier version (no owner recorded): removed once an hour old.
  const fs::path old_style = write(dir / "trace.json.tmp.Ab12Cd", "partial");
  const fs::path fresh_old_style = write(dir / "trace.json.tmp.Ef34Gh", "partial");
  const auto two_hours_ago = fs::file_time_type::clock::now() - std::chrono::hours(2);
  fs::last_write_time(old_style, two_hours_ago);
  const CliResult r = run_to(dir / "out", "--trace " + (dir / "trace.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(other));
  EXPECT_FALSE(fs::exists(old_style));
  EXPECT_TRUE(fs::exists(fresh_old_style));
}

// A run killed with SIGKILL while writing: the next run of the same outputs cleans up.
TEST(OutputFiles, KilledWriterLeavesNothingAfterTheNextRun) {
  const fs::path dir = scratch("kill9");
  const std::string host = host_tag();
  // A child that dies at once stands for the killed writer: its pid is then free.
  const pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  fs::create_directories(dir / "out");
  write(dir / "out" / ("summary.md.tmp." + std::to_string(child) + "@" + host + ".k9k9k9"), "partial");
  write(dir / ("trace.json.tmp." + std::to_string(child) + "@" + host + ".k9k9k9"), "partial");
  ASSERT_EQ(run_to(dir / "out", "--trace " + (dir / "trace.json").string()).exit_code, 0);
  EXPECT_TRUE(temporaries(dir).empty());
}

// ---------------------------------------------------------------- the library call

TEST(OutputFiles, LibraryWritesAllOrNone) {
  const fs::path dir = scratch("lib-set");
  write(dir / "a.txt", "old a");
  std::vector<tessera::OutputFile> files{{dir / "a.txt", "new a"}, {dir / "missing-dir" / "b.txt", "new b"}};
  EXPECT_THROW(tessera::write_files_atomically(files), tessera::InputError);
  EXPECT_EQ(tessera_test::slurp(dir / "a.txt"), "old a");
  EXPECT_TRUE(temporaries(dir).empty());
  files[1].path = dir / "b.txt";
  tessera::write_files_atomically(files);
  EXPECT_EQ(tessera_test::slurp(dir / "a.txt"), "new a");
  EXPECT_EQ(tessera_test::slurp(dir / "b.txt"), "new b");
  EXPECT_TRUE(temporaries(dir).empty());
}
