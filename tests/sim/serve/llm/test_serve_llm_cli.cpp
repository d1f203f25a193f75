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

// Refused before anything is simulated or written: not even --out is created.
void expect_refused(const std::string& args, const std::string& message, const fs::path& out) {
  const CliResult r = tessera(args + " --out " + out.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
  for (const char* f : {"report.json", "requests.csv", "timeline.csv", "curve.csv", "summary.md"}) EXPECT_FALSE(fs::exists(out / f)) << f;
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

TEST(ServeLlmCli, DtypeTheChipCannotMultiplyIsRefusedBeforeAnyRun) {
  // tpu-v4's MXU has no fp8 mode (configs/tpu-v4.yaml): refused before the cost table's runs.
  const fs::path d = scratch("bad-dtype");
  const std::string llm = "serve-llm -a configs/tpu-v4.yaml -m workloads/llm/llama-3-8b.yaml --rate 1 --requests 5";
  expect_refused(llm + " --weight-dtype fp8",
                 "--weight-dtype: Llama-3-8B would multiply fp8_e4m3 by fp8_e4m3, but tpu-v4 (configs/tpu-v4.yaml) has no such "
                 "entry in array.mac_modes (it has: bf16 x bf16, int8 x int8, bf16 x int8, fp16 x fp16)",
                 d / "w");
  expect_refused(llm + " --kv-dtype fp8", "--kv-dtype: Llama-3-8B would multiply fp8_e4m3 by fp8_e4m3", d / "kv");
}

TEST(ServeLlmCli, MalformedTraceLocatedToTheLine) {
  const fs::path d = scratch("bad-trace");
  const fs::path t = d / "t.csv";
  std::ofstream(t) << "arrival_s,prompt_tokens,output_tokens\n0,10,2\n0.5,20,0\n";
  expect_refused(kTarget + " --trace " + t.string(), t.string() + ":3: output_tokens: must be an integer in [1, 16777216], got '0'",
                 d / "out");
  std::ofstream(t) << "0,10,2\n0.5,20,3\n";
  expect_refused(kTarget + " --trace " + t.string() + " --arrivals poisson",
                 "--arrivals poisson: give the rate with --rate", d / "out");
  std::ofstream(t) << "0,10,2\n0.5,x,3\n";
  expect_refused(kTarget + " --trace " + t.string(), t.string() + ":2: prompt_tokens:", d / "out");
}

}  // namespace

namespace {

// End to end on a real simulated target (make_serving_target: the tiny model on the small
// chip of test_llm_cost.cpp, so that CI can afford its cost table; Llama-3-8B on tpu-v6e is
// bench/ and docs/serving.md): the same seed gives byte-identical files; a prompt longer
// than the model's 512-token context is refused, exit 2, nothing written.
TEST(ServeLlmCli, EndToEndOnARealTarget) {
  const fs::path d = scratch("end-to-end");
  const std::string common = "serve-llm -a tests/sim/serve/llm/tiny-chip.yaml -m tests/sim/serve/llm/tiny-llm.yaml --rate 2 "
                             "--requests 40 --prompt-tokens uniform:16:256 --output-tokens uniform:1:64 --curve 2 --cache " +
                             (d / "cache").string() + " --out ";
  const CliResult a = tessera(common + (d / "a").string());
  ASSERT_EQ(a.exit_code, 0) << a.output;
  const CliResult b = tessera(common + (d / "b").string());
  ASSERT_EQ(b.exit_code, 0) << b.output;
  for (const char* f : {"report.json", "requests.csv", "timeline.csv", "curve.csv", "summary.md"}) {
    EXPECT_EQ(tessera_test::slurp(d / "a" / f), tessera_test::slurp(d / "b" / f)) << f;
  }
  // Checked before the cost table is built: no cost-cache in --out, nothing at all.
  expect_refused("serve-llm -a tests/sim/serve/llm/tiny-chip.yaml -m tests/sim/serve/llm/tiny-llm.yaml --rate 2 --requests 5 "
                 "--prompt-tokens fixed:600",
                 "is longer than the model's context window of 512 tokens", d / "long");
}

}  // namespace
