// MLPerf Inference's LLM limits and the Server check (early stopping on TTFT and TPOT).
#include <gtest/gtest.h>

#include "sim/common/error.h"
#include "sim/serve/llm/llm_mlperf.h"
#include "sim/serve/mlperf.h"

namespace {

using namespace tessera::serve::llm;

TEST(LlmMlperf, LimitsOfTheRules) {
  const auto l = mlperf_llm_limits("llama-2-70b");
  EXPECT_EQ(l.benchmark, "llama2-70b");
  EXPECT_DOUBLE_EQ(l.ttft_s, 2.0);
  EXPECT_DOUBLE_EQ(l.tpot_s, 0.2);
  const auto i = mlperf_llm_limits("Llama2-70B", true);
  EXPECT_DOUBLE_EQ(i.ttft_s, 0.45);
  EXPECT_DOUBLE_EQ(i.tpot_s, 0.04);
  EXPECT_DOUBLE_EQ(mlperf_llm_limits("llama-3.1-8b").tpot_s, 0.1);
  EXPECT_DOUBLE_EQ(mlperf_llm_limits("mixtral-8x7b").ttft_s, 2.0);
  EXPECT_THROW(mlperf_llm_limits("mixtral-8x7b", true), tessera::InputError);
  try {
    mlperf_llm_limits("gpt-j-6b");
    FAIL();
  } catch (const tessera::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no LLM benchmark for model 'gpt-j-6b'"), std::string::npos);
  }
}

// With no request over the limits, early stopping at p99 needs 459 queries (mlperf.h):
// 459 pass, 458 do not. One TPOT over the limit raises the count TPOT needs.
TEST(LlmMlperf, ServerCheckIsEarlyStoppingOnBothLatencies) {
  const MlperfLlmLimits l = mlperf_llm_limits("llama2-70b");
  std::vector<double> ttft(459, 1.0), tpot(459, 0.1);
  MlperfLlmCheck c = mlperf_llm_server_check(ttft, tpot, l);
  EXPECT_TRUE(c.passed);
  EXPECT_EQ(c.ttft_queries_needed, 459);
  ttft.pop_back();
  tpot.pop_back();
  c = mlperf_llm_server_check(ttft, tpot, l);
  EXPECT_FALSE(c.passed);
  EXPECT_FALSE(c.ttft_passed);
  ttft.assign(600, 1.0);
  tpot.assign(600, 0.1);
  tpot[7] = 0.25;
  c = mlperf_llm_server_check(ttft, tpot, l);
  EXPECT_TRUE(c.ttft_passed);
  EXPECT_EQ(c.tpot_over, 1);
  EXPECT_EQ(c.tpot_queries_needed, tessera::serve::mlperf::min_passing_queries(1, 0.99) + 1);
  EXPECT_EQ(c.tpot_passed, 600 >= c.tpot_queries_needed);
  // TTFT exactly at the limit is within it.
  ttft.assign(600, 2.0);
  EXPECT_EQ(mlperf_llm_server_check(ttft, tpot, l).ttft_over, 0);
}

}  // namespace
