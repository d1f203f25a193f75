// The files of serve-llm from the study on a TinyTarget: the same seed gives byte-identical
// files, another seed other files; the headline of a rate search meets its SLOs.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "sim/common/error.h"
#include "sim/serve/llm/llm_report.h"
#include "sim/serve/llm/llm_study.h"
#include "tests/sim/serve/llm/tiny_target.h"

namespace {

using namespace tessera::serve::llm;

LlmStudySpec search_spec(uint64_t seed) {
  LlmStudySpec s;
  s.mode = LlmMode::kMaxRate;
  s.requests.requests = 300;
  s.requests.seed = seed;
  s.requests.prompt = parse_length_dist("lognormal:40:30:80", "--prompt-tokens");
  s.requests.output = parse_length_dist("uniform:1:15", "--output-tokens");
  s.sim.scheduler.max_batch_tokens = 64;
  s.sim.scheduler.block_tokens = 4;
  s.sim.slo_ttft_s = 0.2;
  s.sim.slo_tpot_s = 0.03;
  s.curve_points = 3;
  return s;
}

std::vector<std::string> files_of(const LlmStudySpec& spec) {
  tessera_test::TinyTarget t;
  t.capacity_tokens = 400;
  const LlmStudyResult r = run_llm_study(spec, t);
  LlmInputs in;
  in.target_name = t.name();
  in.target.model = "tiny";
  in.prompt_tokens = "lognormal:40:30:80";
  in.output_tokens = "uniform:1:15";
  in.seed = spec.requests.seed;
  in.usd_per_chip_hour = 2;
  return {llm_report_json(in, spec, r).dump(2), llm_requests_csv(r), llm_timeline_csv(r), llm_curve_csv(in, spec, r),
          llm_summary_md(in, spec, r)};
}

TEST(LlmFiles, SameSeedByteIdenticalFiles) {
  const auto a = files_of(search_spec(7)), b = files_of(search_spec(7)), c = files_of(search_spec(8));
  ASSERT_EQ(a.size(), 5u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << "file " << i;
  EXPECT_NE(a[1], c[1]);
  const auto j = nlohmann::json::parse(a[0]);
  EXPECT_TRUE(j["feasible"].get<bool>());
  EXPECT_LE(j["result"]["ttft_at_percentile_ms"].get<double>(), 200.0);
  EXPECT_LE(j["result"]["tpot_at_percentile_ms"].get<double>(), 30.0);
  EXPECT_GT(j["rate_per_s"].get<double>(), 0);
  EXPECT_LE(j["rate_per_s"].get<double>(), j["capacity_per_s"].get<double>());
  EXPECT_TRUE(j["result"].contains("usd_per_million_output_tokens"));
  // requests.csv: a header and 300 rows; curve.csv: a header and 3 points.
  EXPECT_EQ(std::count(a[1].begin(), a[1].end(), '\n'), 301);
  EXPECT_EQ(std::count(a[3].begin(), a[3].end(), '\n'), 4);
}

// The rate search's answer is the edge: a run at 1.01 x the rate found breaks an SLO
// (the bisection stops within 0.2%).
TEST(LlmFiles, SearchedRateIsTheEdge) {
  tessera_test::TinyTarget t;
  t.capacity_tokens = 400;
  LlmStudySpec s = search_spec(7);
  s.curve_points = 0;
  const LlmStudyResult r = run_llm_study(s, t);
  ASSERT_TRUE(r.feasible);
  LlmStudySpec at = s;
  at.mode = LlmMode::kAtRate;
  at.requests.arrivals.rate_per_s = r.rate_per_s * 1.01;
  const LlmResult above = run_llm_study(at, t).headline;
  EXPECT_TRUE(above.ttft_at_quantile_s > s.sim.slo_ttft_s || above.tpot_at_quantile_s > s.sim.slo_tpot_s);
}

// Cost per million output tokens: chip-hours x price + kWh x price, over millions of tokens.
TEST(LlmFiles, TokenCostFromChipHoursAndEnergy) {
  LlmResult r;
  r.output_tokens = 2'000'000;
  r.chip_s = 7200;        // 2 chip-hours
  r.energy_j = 3.6e6 * 4;  // 4 kWh
  LlmInputs in;
  in.usd_per_chip_hour = 1.5;
  in.usd_per_kwh = 0.25;
  const TokenCost c = token_cost(r, in);
  EXPECT_DOUBLE_EQ(c.energy_kwh_per_million, 2.0);
  EXPECT_DOUBLE_EQ(c.usd_per_million, (2 * 1.5 + 4 * 0.25) / 2);
  EXPECT_TRUE(c.priced);
  EXPECT_FALSE(token_cost(r, LlmInputs{}).priced);
}

}  // namespace

namespace {

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

std::string file_first_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

// analysis/fixtures/serve-llm feeds the plot tests: its CSV headers are the writers' own.
TEST(LlmFiles, PlotFixturesHaveTheWritersHeaders) {
  const auto files = files_of(search_spec(7));
  const std::string dir = std::string(TESSERA_SOURCE_DIR) + "/analysis/fixtures/serve-llm/x1/";
  EXPECT_EQ(file_first_line(dir + "requests.csv"), first_line(files[1]));
  EXPECT_EQ(file_first_line(dir + "timeline.csv"), first_line(files[2]));
  EXPECT_EQ(file_first_line(dir + "curve.csv"), first_line(files[3]));
}

}  // namespace

namespace {

// MLPerf Server on the TinyTarget with limits it can meet: the headline run passes early
// stopping, covers the minimum duration (rate x duration requests, at least --requests)
// and a run slightly above fails it. Offline: every request at t = 0.
TEST(LlmFiles, MlperfServerAndOffline) {
  tessera_test::TinyTarget t;
  t.capacity_tokens = 400;
  LlmStudySpec s = search_spec(3);
  s.mode = LlmMode::kMlperfServer;
  s.curve_points = 0;
  s.requests.requests = 500;
  s.min_duration_s = 100;
  s.mlperf = MlperfLlmLimits{"tiny", 0.3, 0.05, "test"};
  s.sim.slo_ttft_s = 0.3;
  s.sim.slo_tpot_s = 0.05;
  const LlmStudyResult r = run_llm_study(s, t);
  ASSERT_TRUE(r.feasible);
  ASSERT_TRUE(r.mlperf_check.has_value());
  EXPECT_TRUE(r.mlperf_check->passed);
  EXPECT_EQ(r.headline.requests, std::max<uint64_t>(500, static_cast<uint64_t>(std::ceil(r.rate_per_s * 100))));
  EXPECT_GE(r.mlperf_check->queries, 459);
  s.mode = LlmMode::kMlperfOffline;
  const LlmStudyResult o = run_llm_study(s, t);
  EXPECT_EQ(o.rate_per_s, 0);
  EXPECT_EQ(o.headline.requests, 500u);
  for (const auto& q : o.headline.per_request) EXPECT_EQ(q.arrival_s, 0);
  EXPECT_DOUBLE_EQ(o.capacity_per_s, o.headline.requests_per_s);
}

}  // namespace

namespace {

// The same study on a second target twice as fast per step: reported next to the first,
// with a higher highest rate; curve.csv holds both targets' points.
TEST(LlmFiles, ComparedTargetsSideBySide) {
  tessera_test::TinyTarget slow, fast;
  slow.capacity_tokens = fast.capacity_tokens = 400;
  fast.fixed_s = 0.005;
  fast.per_prefill_token_s = 0.0005;
  fast.per_decode_s = 0.0005;
  LlmStudySpec s = search_spec(7);
  const LlmStudyResult a = run_llm_study(s, slow);
  ComparedTarget c;
  c.in.target_name = "fast";
  c.in.chips_per_replica = 2;
  c.result = run_llm_study(s, fast);
  LlmInputs in;
  in.target_name = "slow";
  const auto j = llm_report_json(in, s, a, {c});
  ASSERT_EQ(j["compared"].size(), 1u);
  EXPECT_EQ(j["compared"][0]["target"]["name"], "fast");
  EXPECT_GT(j["compared"][0]["rate_per_s"].get<double>(), j["rate_per_s"].get<double>());
  EXPECT_EQ(j["simulated_requests"].get<uint64_t>(), a.simulated_requests + c.result.simulated_requests);
  const std::string md = llm_summary_md(in, s, a, {c});
  EXPECT_NE(md.find("| slow x 1 | 1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| fast x 1 | 2 |"), std::string::npos) << md;
  const std::string curve = llm_curve_csv(in, s, a, {c});
  EXPECT_EQ(std::count(curve.begin(), curve.end(), '\n'), 1 + 3 + 3);
  EXPECT_NE(curve.find("\nfast,1,"), std::string::npos);
}

}  // namespace

// The pre-check covers every request a run may draw: an MLPerf Server search draws up to
// max_requests, at rates found only by the search. With prompts uniform in 1-100 and one output
// token on a 100-token context, a request of 100 prompt tokens cannot fit (1 in 100): the
// spec's own 20 fit (seed 2), so a run at a rate is checked clean, while the Server search is
// refused before any run, at the first such request beyond them (the 52nd).
TEST(LlmStudy, PreCheckCoversEveryRequestAServerSearchDraws) {
  tessera_test::TinyTarget t;
  LlmStudySpec s;
  s.requests.requests = 20;
  s.requests.seed = 2;
  s.requests.arrivals.rate_per_s = 10;
  s.requests.prompt = parse_length_dist("uniform:1:100", "--prompt-tokens");
  s.requests.output = parse_length_dist("fixed:1", "--output-tokens");
  s.max_requests = 2000;
  EXPECT_NO_THROW(check_study_requests(s, t));
  s.mode = LlmMode::kMlperfServer;
  try {
    check_study_requests(s, t);
    ADD_FAILURE() << "no error";
  } catch (const tessera::InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("(prompt 100 + output 1 tokens) is longer than the model's context window of 100"), std::string::npos) << m;
    const size_t at = m.find("request ");
    ASSERT_NE(at, std::string::npos) << m;
    EXPECT_EQ(std::stoul(m.substr(at + 8)), 52u) << m;
  }
}
