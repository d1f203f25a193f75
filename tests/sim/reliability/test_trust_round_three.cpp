// Issue 34 ("Trust, round three"): each class with the reproducer and variants of
// our own, through the real `tessera` executable. Rows in docs/errors.md.
//   1 non-finite serving results      -> Trust3NonFinite.*
//   3 an output naming another output -> Trust3OutputOverlap.*
//   4 output directories              -> Trust3OutputDirectory.*
//   5 unbounded readers and memory    -> Trust3Bounds.*
//   7 misleading messages             -> Trust3Messages.*
// The concurrency stress test (item 2) and the non-finite property test are in
// test_trust_round_three_stress.cpp.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "hostile.h"

using namespace hostile;

namespace {

const std::string kServeBase = "serve -q -a configs/tpu-v1.yaml -w workloads/tpu/mlp1.yaml -b 8 ";
const std::string kServe = kServeBase + "--requests 5000 ";
const std::string kRun = "run -q -a configs/tpu-v1.yaml -w workloads/tpu/mlp1.yaml ";

// `serve` with its own warm cache (each test case is its own process under ctest -j).
CliResult serve(const fs::path& dir, const std::string& extra) {
  return cli(kServe + "--cache " + (dir / "cache").string() + " -o " + (dir / "out").string() + " " + extra, 120);
}

void expect_nothing_written(const fs::path& out) {
  for (const char* f : {"serving.json", "serving.csv", "curve.csv", "serving.md", "report.json", "layers.csv", "summary.md"}) {
    EXPECT_FALSE(fs::exists(out / f)) << (out / f);
  }
}

}  // namespace

// ---------------------------------------------------------------- 1: no NaN or inf in serving results

// The reproducers: each used to exit 0 with nan/inf latencies and `feasible: true`.
TEST(Trust3NonFinite, ReproducersAreRefusedAtTheEdge) {
  const fs::path dir = scratch("t3-nonfinite");
  CliResult r = serve(dir, "--rate 1e-305");
  expect_input_error(r, "--rate: must be in [0.001, 1e+12] requests/s, got '1e-305'");
  r = serve(dir, "--rate 1000 --arrivals gamma --cv 1e300");
  expect_input_error(r, "--cv: must be in [0.01, 100], got '1e300'");
  r = serve(dir, "--rate 1000 --arrivals gamma --cv 1e-300");
  expect_input_error(r, "--cv: must be in [0.01, 100], got '1e-300'");
  r = serve(dir, "--rate 1000 --arrivals hyperexp --cv 1e300");
  expect_input_error(r, "--cv: must be in [0.01, 100]");
  r = serve(dir, "--rate 1000 --host haswell-tpu-server --host-scale 1e308");
  expect_input_error(r, "--host-scale: must be in [1e-06, 1e+06], got '1e308'");
  write(dir / "t.csv", "arrival_s\n0\n1e308\n");
  r = serve(dir, "--trace " + (dir / "t.csv").string());
  expect_input_error(r, "t.csv:3: arrival_s: must be in [0, 1e9] seconds (31.7 years), got '1e308'");
  expect_nothing_written(dir / "out");
}

// Variants: every other real-valued option, infinities and NaN spelled out, subnormals.
TEST(Trust3NonFinite, EveryRealOptionHasAFiniteRange) {
  const fs::path dir = scratch("t3-ranges");
  const std::pair<std::string, std::string> cases[] = {
      {"--latency-bound-ms 1e300", "--latency-bound-ms: must be in [1e-06, 1e+06] ms"},
      {"--rate 1000 --policy timeout --timeout-ms 1e308", "--timeout-ms: must be in [0, 1e+06] ms"},
      {"--rate 1000 --policy deadline --deadline-ms 4.9e-324", "--deadline-ms: must be in [1e-06, 1e+06] ms"},
      {"--rate inf", "--rate: must be in [0.001, 1e+12] requests/s, got 'inf'"},
      {"--rate nan", "--rate: must be in [0.001, 1e+12] requests/s, got 'nan'"},
      {"--rate 1e13", "--rate: must be in [0.001, 1e+12]"},
      {"--rate 1000 --percentile 1e-320", "--percentile: must be in [1, 99.999]"},
      {"--mlperf server --latency-bound-ms 7 --min-duration-s 1e-320", "--min-duration-s: must be in [0.001, 1e+07] s"},
      {"--rate 1000 --host haswell-tpu-server --calibrate-rate 1e300 --calibrate-latency-ms 7",
       "--calibrate-rate: must be in [0.001, 1e+12]"},
      {"--rate 1000 --host haswell-tpu-server --calibrate-rate 1000 --calibrate-latency-ms 1e-300",
       "--calibrate-latency-ms: must be in [1e-06, 1e+06] ms"},
      {"--rate 1000 --host-scale 0x1p-1074 --host haswell-tpu-server", "--host-scale: must be in [1e-06, 1e+06]"},
  };
  for (const auto& [flags, phrase] : cases) {
    SCOPED_TRACE(flags);
    expect_input_error(serve(dir, flags), phrase);
  }
  expect_nothing_written(dir / "out");
}

// Variants in the files: a trace past the bound by a little, a host file's root complex and a
// baseline spec's peak far below any device (both used to give infinite times).
TEST(Trust3NonFinite, FileValuesHaveFiniteRanges) {
  const fs::path dir = scratch("t3-files");
  write(dir / "t.csv", "0\n1000000000.5\n");
  expect_input_error(serve(dir, "--trace " + (dir / "t.csv").string()), "t.csv:2: arrival_s: must be in [0, 1e9] seconds");
  const std::string host = tessera_test::slurp(kSrc / "configs/hosts/haswell-tpu-server.yaml");
  std::string slow = host;
  slow.replace(slow.find("pcie_root_gb_per_s: 78.8"), 24, "pcie_root_gb_per_s: 1e-300");
  write(dir / "h.yaml", slow);
  expect_input_error(serve(dir, "--rate 1000 --host " + (dir / "h.yaml").string()),
                     "pcie_root_gb_per_s: must be 0 (no shared root complex) or in [0.001, 1e+06] GB/s, got 1e-300");
  std::string spec = tessera_test::slurp(kSrc / "configs/baselines/k80.yaml");
  spec.replace(spec.find("fp32: 2.8"), 9, "fp32: 1e-300");
  write(dir / "k80-slow.yaml", spec);
  expect_input_error(cli(kRun + "-o " + (dir / "out").string() + " --baseline " + (dir / "k80-slow.yaml").string(), 60),
                     "peak_tops.fp32: must be in [1e-06, 1000000], got 1e-300");
  expect_nothing_written(dir / "out");
}

// Within the ranges the study's figures are finite; a subnormal trace arrival is a valid time.
TEST(Trust3NonFinite, ExtremeValidInputsGiveFiniteFigures) {
  const fs::path dir = scratch("t3-valid-extremes");
  write(dir / "t.csv", "arrival_s\n0\n4.9e-324\n1e-300\n1e9\n");
  CliResult r = serve(dir, "--trace " + (dir / "t.csv").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string csv = tessera_test::slurp(dir / "out" / "serving.csv");
  EXPECT_FALSE(contains(csv, "nan")) << csv;
  EXPECT_FALSE(contains(csv, "inf")) << csv;
  EXPECT_EQ(null_figures(nlohmann::json::parse(tessera_test::slurp(dir / "out" / "serving.json"))), "");
}

// ---------------------------------------------------------------- 3: an output naming another output

// The reproducer: `--trace D/report.json` with `-o D` wrote only the report.
TEST(Trust3OutputOverlap, TraceOverAReportFileIsRefusedNamingBoth) {
  const fs::path dir = scratch("t3-overlap");
  const fs::path d = dir / "D";
  CliResult r = cli(kRun + "-o " + d.string() + " --trace " + (d / "report.json").string(), 60);
  HOSTILE_SKIP_ON_ASAN_FALSE_POSITIVE(r);
  expect_input_error(r, "report.json: is both the --trace output and the --out (report.json) output of this run");
  expect_nothing_written(d);
  // Variants: another report file, a path with `.` and `..` in it, a symlinked alias of D.
  r = cli(kRun + "-o " + d.string() + " --trace " + (d / "sub" / ".." / "summary.md").string(), 60);
  expect_input_error(r, "is both the --trace output and the --out (summary.md) output");
  r = cli(kRun + "-o " + d.string() + " --trace " + (d / "." / "layers.csv").string(), 60);
  expect_input_error(r, "is both the --trace output and the --out (layers.csv) output");
  fs::create_directories(d);
  fs::create_directory_symlink(d, dir / "alias");
  r = cli(kRun + "-o " + d.string() + " --trace " + (dir / "alias" / "report.json").string(), 60);
  expect_input_error(r, "is both the --trace output and the --out (report.json) output");
  expect_nothing_written(d);
}

// ---------------------------------------------------------------- 4: one output-directory routine

// The case was serve under a read-only mount (exit 1, "filesystem error"); a test
// cannot mount, so every command meets directories that cannot be made: under a file, under
// a character device, a name too long; all exit 2 with the same message.
TEST(Trust3OutputDirectory, EveryCommandReportsAnUnmakeableDirectoryAsInputError) {
  const fs::path dir = scratch("t3-outdir");
  write(dir / "file", "x");
  const std::string under_file = (dir / "file" / "s").string();
  const std::string too_long = (dir / std::string(300, 'n')).string();
  for (const std::string& out : {under_file, std::string("/dev/null/s"), too_long}) {
    SCOPED_TRACE(out);
    // serve with the cache elsewhere reached the throwing create_directories (exit 1).
    CliResult r = cli(kServe + "--rate 1000 --cache " + (dir / "cache").string() + " --out " + out, 120);
    expect_input_error(r, "cannot create output directory");
    r = cli(kRun + "-o " + out, 60);
    HOSTILE_SKIP_ON_ASAN_FALSE_POSITIVE(r);
    expect_input_error(r, "cannot create output directory");
    r = cli("sweep experiments/smoke.yaml -q --out " + out, 60);
    expect_input_error(r, "cannot create output directory");
  }
  CliResult r = cli(kRun + "-o " + (dir / "o").string() + " --trace " + under_file + "/t.json", 60);
  expect_input_error(r, "--trace " + under_file + "/t.json: cannot create directory ");
}

// ---------------------------------------------------------------- 5: bounded readers, memory from --requests

TEST(Trust3Bounds, EndlessTraceLineIsRefusedNamingTheFileAndTheBound) {
  const fs::path dir = scratch("t3-trace-bound");
  // The reproducer: /dev/zero used to grow one line without end.
  CliResult r = serve(dir, "--trace /dev/zero");
  expect_input_error(r, "--trace /dev/zero:1: line longer than the 64 KiB allowed in a request trace");
  // Variants: a 1 MB one-line file (the was 200 MB, 1.4 GB RSS), a long comment after good rows.
  write(dir / "one-line.csv", "0" + std::string(1 << 20, '1') + "\n");
  r = serve(dir, "--trace " + (dir / "one-line.csv").string());
  expect_input_error(r, "one-line.csv:1: line longer than the 64 KiB allowed in a request trace");
  write(dir / "comment.csv", "0\n0.5\n# " + std::string(70000, 'c') + "\n1\n");
  r = serve(dir, "--trace " + (dir / "comment.csv").string());
  expect_input_error(r, "comment.csv:3: line longer than the 64 KiB");
}

TEST(Trust3Bounds, EveryYamlReaderIsBounded) {
  const fs::path dir = scratch("t3-yaml-bound");
  // A config, a workload, a policy, an experiment and a host spec read from /dev/zero.
  CliResult r = cli("run -q -a /dev/zero -w workloads/tpu/mlp1.yaml -o " + (dir / "o").string(), 60);
  expect_input_error(r, "/dev/zero:1: line longer than the 16 MiB allowed in a YAML file");
  r = cli("run -q -a configs/tpu-v1.yaml -w /dev/zero -o " + (dir / "o").string(), 60);
  expect_input_error(r, "line longer than the 16 MiB allowed in a YAML file");
  r = cli("sweep /dev/zero --list", 60);
  expect_input_error(r, "line longer than the 16 MiB allowed in a YAML file");
  // A file of many short lines past 64 MiB: the file bound.
  {
    std::ofstream big(dir / "big.yaml", std::ios::binary);
    const std::string line = "# " + std::string(1020, 'x') + "\n";
    for (int i = 0; i < 66 * 1024; ++i) big << line;
  }
  r = cli("run -q -a " + (dir / "big.yaml").string() + " -w workloads/tpu/mlp1.yaml -o " + (dir / "o").string(), 60);
  expect_input_error(r, "big.yaml: the YAML file is 69138432 bytes, more than the 64 MiB allowed");
  fs::remove(dir / "big.yaml");
  r = serve(dir, "--rate 1000 --host /dev/zero");
  expect_input_error(r, "--host /dev/zero: cannot read the host model: it is a character device");
  expect_nothing_written(dir / "o");
}

// The memory a serve run needs comes from --requests before anything is allocated.
TEST(Trust3Bounds, RequestsBeyondMemoryAreRefusedNamingTheOption) {
  const fs::path dir = scratch("t3-requests-memory");
  const std::string limit = "ulimit -v 4000000; ";
  CliResult r = tessera_test::run_shell(limit + "timeout -s KILL 120 " + exe() + " " + kServeBase + "--requests 2147483648 --rate 1000 --cache " +
                                        (dir / "cache").string() + " -o " + (dir / "out").string());
  expect_input_error(r, "--requests 2147483648: a simulation of 2147483648 requests needs about 96.0 GiB");
  r = tessera_test::run_shell(limit + "timeout -s KILL 120 " + exe() + " " + kServeBase + "--requests 1000 --mlperf server --latency-bound-ms 7 " +
                              "--max-requests 2147483648 --cache " + (dir / "cache").string() + " -o " + (dir / "out").string());
  expect_input_error(r, "--max-requests 2147483648: a simulation of 2147483648 requests needs about");
  EXPECT_FALSE(contains(r.output, "this workload (at this batch"));
  expect_nothing_written(dir / "out");
}

// ---------------------------------------------------------------- 7: messages that say what is wrong

TEST(Trust3Messages, BaselineAndHostPathsThatAreNoFilesSayWhatTheyAre) {
  const fs::path dir = scratch("t3-baseline-kinds");
  fs::create_directories(dir / "spec.yaml");
  ASSERT_EQ(::mkfifo((dir / "fifo.yaml").c_str(), 0644), 0);
  const std::pair<std::string, std::string> cases[] = {
      {(dir / "spec.yaml").string(), "it is a directory"},
      {"/dev/zero", "it is a character device"},
      {(dir / "fifo.yaml").string(), "it is a FIFO (named pipe)"},
      {(dir / "missing.yaml").string(), "it does not exist"},
  };
  for (const auto& [path, kind] : cases) {
    SCOPED_TRACE(path);
    CliResult r = cli(kRun + "-o " + (dir / "o").string() + " --baseline " + path, 30);
    HOSTILE_SKIP_ON_ASAN_FALSE_POSITIVE(r);
    expect_input_error(r, "--baseline " + path + ": cannot read the baseline spec file: " + kind);
    r = serve(dir, "--rate 1000 --baseline " + path);
    expect_input_error(r, "--baseline " + path + ": cannot read the baseline spec file: " + kind);
  }
  CliResult r = serve(dir, "--rate 1000 --host " + (dir / "spec.yaml").string());
  expect_input_error(r, "cannot read the host model: it is a directory");
}

TEST(Trust3Messages, SubnormalsAreNumbersAndHugeLiteralsSayTheBound) {
  const fs::path dir = scratch("t3-subnormal");
  write(dir / "sub.yaml", tpu_with("toggle_fraction: 0.5", "toggle_fraction: 1e-320"));
  CliResult r = cli("run -q -a " + (dir / "sub.yaml").string() + " -w workloads/tpu/mlp1.yaml -o " + (dir / "o").string(), 60);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  write(dir / "big.yaml", tpu_with("toggle_fraction: 0.5", "toggle_fraction: 1e400"));
  r = cli("run -q -a " + (dir / "big.yaml").string() + " -w workloads/tpu/mlp1.yaml -o " + (dir / "o2").string(), 60);
  expect_input_error(r, "toggle_fraction: must be at most 1, got 1e400");
  write(dir / "neg.yaml", tpu_with("toggle_fraction: 0.5", "toggle_fraction: -1e400"));
  r = cli("run -q -a " + (dir / "neg.yaml").string() + " -w workloads/tpu/mlp1.yaml -o " + (dir / "o3").string(), 60);
  expect_input_error(r, "toggle_fraction: must be at least 0, got -1e400");
}

TEST(Trust3Messages, BaselineBusyPowerBelowIdleIsRefused) {
  const fs::path dir = scratch("t3-busy-idle");
  std::string spec = tessera_test::slurp(kSrc / "configs/baselines/k80.yaml");
  const std::string busy = spec.substr(spec.find("busy_w: 98"), 10);
  spec.replace(spec.find(busy), busy.size(), "busy_w: 20");
  write(dir / "k80-busy.yaml", spec);
  CliResult r = cli(kRun + "-o " + (dir / "o").string() + " --baseline " + (dir / "k80-busy.yaml").string(), 60);
  HOSTILE_SKIP_ON_ASAN_FALSE_POSITIVE(r);
  expect_input_error(r, "power: busy_w 20 W is below idle_w 25 W; the running power must be at least the idle power");
  // Variant: no busy_w, a TDP below idle.
  std::string tdp = tessera_test::slurp(kSrc / "configs/baselines/k80.yaml");
  tdp.replace(tdp.find(busy), busy.size(), "");
  tdp.replace(tdp.find("tdp_w: 150"), 10, "tdp_w: 10");
  write(dir / "k80-tdp.yaml", tdp);
  r = cli(kRun + "-o " + (dir / "o").string() + " --baseline " + (dir / "k80-tdp.yaml").string(), 60);
  HOSTILE_SKIP_ON_ASAN_FALSE_POSITIVE(r);
  expect_input_error(r, "tdp_w (the running power) 10 W is below idle_w 25 W");
  expect_nothing_written(dir / "o");
}

TEST(Trust3Messages, CalibrationMessagesPrintPercentilesAndTinyTargets) {
  const fs::path dir = scratch("t3-calibration");
  CliResult r = serve(dir, "--rate 1000 --host haswell-tpu-server --calibrate-rate 1000 --calibrate-latency-ms 1e-6");
  expect_input_error(r, "--calibrate-latency-ms: the p99 latency is already ");
  EXPECT_TRUE(contains(r.output, "above the target 1e-06 ms")) << r.output;
  EXPECT_FALSE(contains(r.output, "p99.000000")) << r.output;
  r = serve(dir, "--rate 1000 --percentile 95.5 --host haswell-tpu-server --calibrate-rate 1000 --calibrate-latency-ms 0.001");
  expect_input_error(r, "--calibrate-latency-ms: the p95.5 latency is already ");
  EXPECT_TRUE(contains(r.output, "above the target 0.001 ms")) << r.output;
}
