// `tessera serve-llm` with the built executable: bad input is one clear error, exit 2, and
// nothing written. (End-to-end runs need make_serving_target's targets: tests of llm-cost.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/run_cli.h"

namespace fs = std::filesystem;

namespace {

using tessera_test::CliResult;
CliResult tessera(const std::string& args) { return tessera_test::run_tessera(args); }
fs::path scratch(const std::string& name) { return tessera_test::scratch_dir("serve-llm", name); }

const std::string kTarget = "serve-llm -a configs/tpu-v1.yaml -m configs/tpu-v1.yaml";

void expect_refused(const std::string& args, const std::string& message, const fs::path& out) {
  const CliResult r = tessera(args + " --out " + out.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out / "report.json"));
  EXPECT_FALSE(fs::exists(out)) << "nothing is created for bad input";
}

TEST(ServeLlmCli, HelpTeachesWithExamples) {
  const CliResult r = tessera("serve-llm --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("Examples:"), std::string::npos);
  EXPECT_NE(r.output.find("--slo-ttft-ms"), std::string::npos);
}

TEST(ServeLlmCli, RefusesBadRatesAndLengths) {
  const fs::path d = scratch("bad-numbers");
  expect_refused(kTarget + " --rate nan", "--rate: must be in [0.001, 1e+09] requests/s, got 'nan'", d / "a");
  expect_refused(kTarget + " --rate -2", "--rate: must be in [0.001, 1e+09] requests/s, got '-2'", d / "b");
  expect_refused(kTarget + " --rate 1 --output-tokens fixed:0", "--output-tokens: fixed: N must be an integer in [1, 16777216] tokens, got '0'",
                 d / "c");
  expect_refused(kTarget + " --slo-ttft-ms -5", "--slo-ttft-ms: must be in", d / "d");
  expect_refused(kTarget, "nothing to compute", d / "e");
  expect_refused(kTarget + " --rate 1 --baseline nope", "--baseline: 'nope' is neither a file nor a baseline in", d / "f");
  expect_refused(kTarget + " --rate 1 --baseline h100-sxm:0", "--baseline h100-sxm:0: TP must be an integer in [1, 4096], got '0'",
                 d / "g");
  expect_refused(kTarget + " --rate 1 --baseline h100-sxm:2:nan", "USD_PER_CHIP_HOUR must be a number in [0, 1e6], got 'nan'",
                 d / "h");
}

TEST(ServeLlmCli, MalformedTraceLocatedToTheLine) {
  const fs::path d = scratch("bad-trace");
  const fs::path t = d / "t.csv";
  std::ofstream(t) << "arrival_s,prompt_tokens,output_tokens\n0,10,2\n0.5,20,0\n";
  expect_refused(kTarget + " --trace " + t.string(), t.string() + ":3: output_tokens: must be an integer in [1, 16777216], got '0'",
                 d / "out");
  std::ofstream(t) << "0,10,2\n0.5,x,3\n";
  expect_refused(kTarget + " --trace " + t.string(), t.string() + ":2: prompt_tokens:", d / "out");
}

}  // namespace
