// Issue 34, the two CI-sized property tests:
//  - concurrent writers of one output directory (item 2): after every round of concurrent
//    `tessera run -o SAME --trace SAME/trace.json` (and `tessera serve -o SAME`), every file on
//    disk comes from one and the same run, byte for byte;
//  - non-finite figures (item 1): every real-valued serve option at {its min, its max, 1e-300,
//    1e300, the smallest subnormal} ends in finite outputs or exit 2, nothing else.
// Each case is bounded (a few rounds, short runs): well under 30 s on an idle core.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "hostile.h"

using namespace hostile;

namespace {

std::string files_of(const fs::path& dir, const std::vector<std::string>& names) {
  std::string all;
  for (const auto& n : names) all += "== " + n + "\n" + (fs::exists(dir / n) ? tessera_test::slurp(dir / n) : "<missing>") + "\n";
  return all;
}

const std::vector<std::string> kRunSet = {"report.json", "layers.csv", "summary.md", "trace.json"};
const std::vector<std::string> kServeSet = {"serving.json", "serving.csv", "curve.csv", "serving.md"};

std::string run_args(int batch, const fs::path& out) {
  return "run -q -a configs/tpu-v1.yaml -w workloads/tpu/mlp1.yaml -b " + std::to_string(batch) + " -o " + out.string() +
         " --trace " + (out / "trace.json").string();
}

// `n` shell commands at once; each one's exit code must be 0.
void run_concurrently(const std::vector<std::string>& commands) {
  std::string script;
  for (size_t i = 0; i < commands.size(); ++i) {
    script += "( out=$(" + commands[i] + " 2>&1); echo \"rc" + std::to_string(i) + "=$? $out\" ) & ";
  }
  script += "wait";
  // One subshell: run_shell's `cd SOURCE &&` must hold for every background writer.
  const CliResult r = tessera_test::run_shell("( " + script + " )");
  for (size_t i = 0; i < commands.size(); ++i) {
    EXPECT_TRUE(contains(r.output, "rc" + std::to_string(i) + "=0")) << commands[i] << "\n" << r.output;
  }
}

}  // namespace

// The loop: four `tessera run -b {1..4} -o SAME` at once left report.json and
// layers.csv of one run next to summary.md of another (5 of 40 races). Now the directory is
// locked for the whole publish: after each round the four files are one reference set.
TEST(Trust3Concurrency, ConcurrentRunsIntoOneDirectoryLeaveOneWholeSet) {
  const fs::path dir = scratch("t3-race-run");
  std::map<std::string, int> reference;  // the set's bytes -> batch
  for (int b = 1; b <= 4; ++b) {
    const fs::path ref = dir / ("ref" + std::to_string(b));
    fs::create_directories(ref);  // --trace does not create its directory
    // The trace names no output path, so a reference written elsewhere has the same bytes.
    const CliResult r = cli(run_args(b, ref), 60);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    reference[files_of(ref, kRunSet)] = b;
  }
  ASSERT_EQ(reference.size(), 4u) << "the four batches must give four different sets";
  const fs::path same = dir / "same";
  fs::create_directories(same);  // --trace does not create its directory
  for (int round = 0; round < 6; ++round) {
    std::vector<std::string> writers;
    for (int b = 1; b <= 4; ++b) writers.push_back("timeout -s KILL 60 " + exe() + " " + run_args(b, same));
    run_concurrently(writers);
    const std::string on_disk = files_of(same, kRunSet);
    EXPECT_EQ(reference.count(on_disk), 1u) << "round " << round << ": the files on disk mix runs";
  }
  // No temporaries left behind by the losers of each race.
  for (const auto& e : fs::directory_iterator(same)) EXPECT_FALSE(contains(e.path().string(), ".tmp.")) << e.path();
}

// The same for serve: three rates into one --out, each with its own warm service cache.
TEST(Trust3Concurrency, ConcurrentServesIntoOneDirectoryLeaveOneWholeSet) {
  const fs::path dir = scratch("t3-race-serve");
  const std::string rates[] = {"500", "1000", "2000"};
  auto args = [&](int i, const fs::path& out) {
    return "serve -q -a configs/tpu-v1.yaml -w workloads/tpu/mlp1.yaml -b 8 --requests 2000 --curve 3 --rate " + rates[i] +
           " --cache " + (dir / ("cache" + std::to_string(i))).string() + " -o " + out.string();
  };
  std::map<std::string, int> reference;
  for (int i = 0; i < 3; ++i) {
    const CliResult r = cli(args(i, dir / ("ref" + std::to_string(i))), 120);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    reference[files_of(dir / ("ref" + std::to_string(i)), kServeSet)] = i;
  }
  ASSERT_EQ(reference.size(), 3u);
  const fs::path same = dir / "same";
  for (int round = 0; round < 4; ++round) {
    std::vector<std::string> writers;
    for (int i = 0; i < 3; ++i) writers.push_back("timeout -s KILL 60 " + exe() + " " + args(i, same));
    run_concurrently(writers);
    EXPECT_EQ(reference.count(files_of(same, kServeSet)), 1u) << "round " << round << ": the files on disk mix runs";
  }
}

// ---------------------------------------------------------------- non-finite property

namespace {

struct Option {
  std::string flag;
  double min, max;
  std::string context;  // the other flags the option needs
};

// "finite": exit 0 and no nan/inf/null anywhere in the outputs; "refused": exit 2 naming the flag.
void expect_finite_or_refused(const CliResult& r, const fs::path& out, const std::string& flag, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_FALSE(contains(r.output, "internal error")) << r.output;
  if (r.exit_code == 2) return;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* f : {"serving.csv", "curve.csv"}) {
    if (!fs::exists(out / f)) continue;
    const std::string text = tessera_test::slurp(out / f);
    for (const char* bad : {",nan", ",-nan", ",inf", ",-inf"}) EXPECT_FALSE(contains(text, bad)) << f << ": " << text;
  }
  EXPECT_EQ(null_figures(nlohmann::json::parse(tessera_test::slurp(out / "serving.json"))), "");
  (void)flag;
}

void sweep_options(const std::string& name, const std::vector<Option>& options) {
  const fs::path dir = scratch(name);
  const std::string base = "serve -q -a configs/tpu-v1.yaml -w workloads/tpu/mlp1.yaml -b 8 --requests 2000 --curve 2 --cache " +
                           (dir / "cache").string();
  for (const Option& o : options) {
    char text[5][40];
    const double values[5] = {o.min, o.max, 1e-300, 1e300, 4.9e-324};
    for (int k = 0; k < 5; ++k) {
      std::snprintf(text[k], sizeof text[k], "%.17g", values[k]);
      const fs::path out = dir / "out";
      fs::remove_all(out);
      const std::string what = o.flag + " " + text[k] + " " + o.context;
      const CliResult r = cli(base + " " + o.context + " " + o.flag + " " + text[k] + " -o " + out.string(), 120);
      expect_finite_or_refused(r, out, o.flag, what);
    }
  }
}

const std::string kHost = "--host haswell-tpu-server";

}  // namespace

TEST(Trust3NonFiniteProperty, RateAndLatencyOptionsGiveFiniteFiguresOrExitTwo) {
  sweep_options("t3-prop-a", {
                                 {"--rate", 1e-3, 1e12, ""},
                                 {"--latency-bound-ms", 1e-6, 1e6, ""},
                                 {"--timeout-ms", 0, 1e6, "--rate 1000 --policy timeout"},
                                 {"--deadline-ms", 1e-6, 1e6, "--rate 1000 --policy deadline"},
                                 {"--percentile", 1, 99.999, "--latency-bound-ms 7"},
                             });
}

TEST(Trust3NonFiniteProperty, ArrivalHostAndMlperfOptionsGiveFiniteFiguresOrExitTwo) {
  sweep_options("t3-prop-b", {
                                 {"--cv", 0.01, 100, "--rate 1000 --arrivals gamma"},
                                 {"--cv", 1, 100, "--rate 1000 --arrivals hyperexp"},
                                 {"--host-scale", 1e-6, 1e6, "--rate 1000 " + kHost},
                                 {"--calibrate-rate", 1e-3, 1e12, "--rate 1000 --calibrate-latency-ms 7 " + kHost},
                                 {"--calibrate-latency-ms", 1e-6, 1e6, "--rate 1000 --calibrate-rate 100000 " + kHost},
                                 {"--min-duration-s", 1e-3, 1e7, "--mlperf server --latency-bound-ms 7 --max-requests 20000"},
                             });
}
