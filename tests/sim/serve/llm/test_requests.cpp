// Request streams: length distributions, the CSV trace (errors located to the line), the
// empirical distribution of a column, and the same requests under the same seed.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "sim/common/error.h"
#include "sim/serve/llm/requests.h"

namespace {

using namespace tessera::serve::llm;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const tessera::InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(LlmRequests, ParsesLengthDistributions) {
  EXPECT_EQ(parse_length_dist("fixed:128", "--prompt-tokens").fixed, 128);
  const LengthDist u = parse_length_dist("uniform:16:32", "--prompt-tokens");
  EXPECT_EQ(u.lo, 16);
  EXPECT_EQ(u.hi, 32);
  const LengthDist l = parse_length_dist("lognormal:1020:800:4000", "--prompt-tokens");
  EXPECT_DOUBLE_EQ(l.mean, 1020);
  EXPECT_DOUBLE_EQ(l.sd, 800);
  EXPECT_EQ(l.max_tokens, 4000);
  EXPECT_EQ(error_of([] { parse_length_dist("fixed:0", "--output-tokens"); }),
            "--output-tokens: fixed: N must be an integer in [1, 16777216] tokens, got '0'");
  EXPECT_EQ(error_of([] { parse_length_dist("uniform:9:3", "--prompt-tokens"); }),
            "--prompt-tokens: uniform: HI (3) must be at least LO (9)");
  EXPECT_EQ(error_of([] { parse_length_dist("lognormal:100:nan", "--prompt-tokens"); }),
            "--prompt-tokens: lognormal: SD must be a number in (0, 1000 x MEAN] tokens, got 'nan'");
  EXPECT_NE(error_of([] { parse_length_dist("zipf:3", "--prompt-tokens"); }).find("is not a length distribution"), std::string::npos);
}

// Sample moments of 200,000 draws against the distribution's: the lognormal's mean and sd
// are those of the tokens (to rounding), the uniform's mean (lo + hi) / 2.
TEST(LlmRequests, LognormalHasTheGivenMeanAndSd) {
  RequestSpec spec;
  spec.requests = 200000;
  spec.arrivals.rate_per_s = 10;
  spec.prompt = parse_length_dist("lognormal:1000:500", "p");
  spec.output = parse_length_dist("uniform:1:99", "o");
  const auto reqs = generate_requests(spec);
  double s = 0, s2 = 0, o = 0;
  for (const auto& r : reqs) {
    s += static_cast<double>(r.prompt_tokens);
    s2 += static_cast<double>(r.prompt_tokens) * static_cast<double>(r.prompt_tokens);
    o += static_cast<double>(r.output_tokens);
  }
  const double n = static_cast<double>(reqs.size());
  const double mean = s / n, sd = std::sqrt(s2 / n - mean * mean);
  EXPECT_NEAR(mean, 1000, 5);  // standard error 500 / sqrt(2e5) = 1.1
  EXPECT_NEAR(sd, 500, 10);
  EXPECT_NEAR(o / n, 50, 0.3);
  EXPECT_EQ(reqs.front().arrival_s, 0);
  EXPECT_NEAR(reqs.back().arrival_s / (n - 1), 0.1, 0.001);  // Poisson at 10/s
}

TEST(LlmRequests, SameSeedSameRequests) {
  RequestSpec spec;
  spec.requests = 1000;
  spec.arrivals.rate_per_s = 3;
  spec.prompt = parse_length_dist("lognormal:500:300", "p");
  spec.output = parse_length_dist("lognormal:200:100", "o");
  const auto a = generate_requests(spec), b = generate_requests(spec);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].arrival_s, b[i].arrival_s);
    EXPECT_EQ(a[i].prompt_tokens, b[i].prompt_tokens);
    EXPECT_EQ(a[i].output_tokens, b[i].output_tokens);
  }
  spec.seed = 2;
  EXPECT_NE(generate_requests(spec)[5].prompt_tokens, a[5].prompt_tokens);
}

TEST(LlmRequests, TraceRowsAndLocatedErrors) {
  const LlmTrace t = parse_llm_trace_csv("# a trace\narrival_s,prompt_tokens,output_tokens\n0,10,2\n0.5,20,3 # c\n\n1.5,5,1\n", "t.csv");
  ASSERT_EQ(t.requests.size(), 3u);
  EXPECT_DOUBLE_EQ(t.requests[1].arrival_s, 0.5);
  EXPECT_EQ(t.requests[1].prompt_tokens, 20);
  EXPECT_EQ(t.requests[2].output_tokens, 1);
  EXPECT_EQ(error_of([] { parse_llm_trace_csv("0,10,2\n0.5,20,0\n", "t.csv"); }),
            "t.csv:2: output_tokens: must be an integer in [1, 16777216], got '0'");
  EXPECT_EQ(error_of([] { parse_llm_trace_csv("0,10,2\n0.5,20\n", "t.csv"); }),
            "t.csv:2: expected 3 columns (arrival_s,prompt_tokens,output_tokens), got 2");
  EXPECT_EQ(error_of([] { parse_llm_trace_csv("1,10,2\n0.5,20,1\n", "t.csv"); }),
            "t.csv:2: arrival_s: 0.5 is before the previous request's (arrivals must not decrease)");
  EXPECT_EQ(error_of([] { parse_llm_trace_csv("0,10,2\n\nnan,1,1\n", "t.csv"); }), "t.csv:3: arrival_s: 'nan' is not a finite number");
  EXPECT_EQ(error_of([] { parse_llm_trace_csv("arrival,prompt,output\n", "t.csv"); }),
            "t.csv:1: header: expected 'arrival_s,prompt_tokens,output_tokens', got 'arrival,prompt,output'");
}

// A trace at twice its own rate: the arrivals halve, the lengths stay.
TEST(LlmRequests, TraceScaledToARate) {
  RequestSpec spec;
  spec.trace = std::make_shared<LlmTrace>(parse_llm_trace_csv("0,10,2\n1,20,3\n2,5,1\n", "t.csv"));
  spec.arrivals.kind = tessera::serve::ArrivalKind::kTrace;
  spec.arrivals.rate_per_s = 2;  // its own: 2 gaps in 2 s, 1 request/s
  const auto reqs = generate_requests(spec);
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_DOUBLE_EQ(reqs[1].arrival_s, 0.5);
  EXPECT_DOUBLE_EQ(reqs[2].arrival_s, 1.0);
  EXPECT_EQ(reqs[1].prompt_tokens, 20);
}

TEST(LlmRequests, EmpiricalColumnOfACsv) {
  const auto dir = std::filesystem::temp_directory_path() / ("llm-req-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto f = dir / "lengths.csv";
  std::ofstream(f) << "id,prompt_tokens\n1,7\n2,7\n3,9\n";
  const LengthDist d = parse_length_dist("csv:" + f.string() + ":prompt_tokens", "--prompt-tokens");
  ASSERT_EQ(d.values->size(), 3u);
  EXPECT_NEAR(d.mean_tokens(), 23.0 / 3, 1e-12);
  tessera::serve::Rng rng(1);
  for (int i = 0; i < 100; ++i) {
    const int64_t v = d.sample(rng);
    EXPECT_TRUE(v == 7 || v == 9);
  }
  std::ofstream(f) << "id,prompt_tokens\n1,7\n2,x\n";
  EXPECT_EQ(error_of([&] { parse_length_dist("csv:" + f.string() + ":prompt_tokens", "--prompt-tokens"); }),
            "--prompt-tokens: " + f.string() + ":3: prompt_tokens: must be an integer in [1, 16777216] tokens, got 'x'");
  std::filesystem::remove_all(dir);
}

}  // namespace

TEST(LlmRequests, ShippedTraceLoads) {
  const LlmTrace t = load_llm_trace_csv(std::string(TESSERA_SOURCE_DIR) + "/workloads/llm/traces/conversation-1k.csv");
  ASSERT_EQ(t.requests.size(), 1000u);
  EXPECT_EQ(t.requests[0].prompt_tokens, 1660);
  EXPECT_EQ(t.requests[0].output_tokens, 134);
}
