// MLPerf Inference statistics against the rules (mlcommons/inference_policies,
// inference_rules.adoc) and LoadGen's own reports.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sim/serve/mlperf.h"

namespace tessera::serve::mlperf {
namespace {

TEST(MlperfRules, MinimumQueryCountsMatchTheRulesTable) {
  // inference_rules.adoc, "Scenarios": percentile, 99% confidence, margin, inferences, rounded.
  struct Row { double p, margin; uint64_t queries, rounded; };
  const Row rows[] = {{0.90, 0.0050, 23'886, 24'576},
                      {0.95, 0.0025, 50'425, 57'344},
                      {0.97, 0.0015, 85'811, 90'112},
                      {0.99, 0.0005, 262'742, 270'336}};
  for (const Row& r : rows) {
    EXPECT_EQ(min_queries(r.p, 0.99, r.margin), r.queries) << r.p;
    EXPECT_EQ(rounded_to_8192(min_queries(r.p, 0.99, r.margin)), r.rounded) << r.p;
  }
}

TEST(MlperfRules, NormalQuantile) {
  EXPECT_NEAR(normal_quantile(0.995), 2.5758293035489004, 1e-12);
  EXPECT_NEAR(normal_quantile(0.5), 0.0, 1e-15);
  EXPECT_NEAR(normal_quantile(0.025), -1.959963984540054, 1e-12);
  EXPECT_NEAR(normal_quantile(1e-10), -6.361340902404056, 1e-9);
}

TEST(MlperfEarlyStopping, NoOverlatencyQueryNeedsLnOneHundredthOverLnP) {
  // t = 0: I(p; h, 1) = p^h <= 0.01.
  EXPECT_EQ(min_passing_queries(0, 0.99), 459);
  EXPECT_EQ(min_passing_queries(0, 0.90), 44);
  // LoadGen's Server reports (mlcommons/inference, a PySUT at 18-19 QPS): "Processed 21
  // queries. Would need to run at least 438 more queries" and "Processed 300 queries ...
  // at least 159 more": 459 in both, with no query over the latency bound.
  EXPECT_EQ(server_early_stopping(21, 0, 0.99).queries_needed - 21, 438);
  EXPECT_EQ(server_early_stopping(300, 0, 0.99).queries_needed - 300, 159);
  EXPECT_FALSE(server_early_stopping(458, 0, 0.99).passed);
  EXPECT_TRUE(server_early_stopping(459, 0, 0.99).passed);
}

// An independent evaluation of P(at most t failures in n trials, failure prob 1 - p) by the
// pmf recurrence, for checking min_passing_queries at t > 0.
double binomial_cdf(int64_t n, int64_t t, double p) {
  double pmf = std::pow(p, static_cast<double>(n));  // 0 failures
  double sum = pmf;
  for (int64_t j = 1; j <= t; ++j) {
    pmf *= static_cast<double>(n - j + 1) / static_cast<double>(j) * (1 - p) / p;
    sum += pmf;
  }
  return sum;
}

TEST(MlperfEarlyStopping, MinPassingQueriesIsTheSmallestHWithTheBinomialTailAtMostOnePercent) {
  for (double p : {0.90, 0.99}) {
    for (int64_t t : {1, 2, 5, 20, 100}) {
      const int64_t h = min_passing_queries(t, p);
      EXPECT_LE(binomial_cdf(h + t, t, p), 0.01) << p << " " << t;
      EXPECT_GT(binomial_cdf(h - 1 + t, t, p), 0.01) << p << " " << t;
      EXPECT_NEAR(incomplete_beta_int(p, h, t + 1), binomial_cdf(h + t, t, p), 1e-12);
    }
  }
  // Many over-latency queries: the observed share must sit about 2.33 standard errors
  // below 1 - p; h + t grows roughly as t / (1 - p).
  const int64_t t = 2000, h = min_passing_queries(t, 0.99);
  EXPECT_GT(h + t, 200'000);
  EXPECT_LT(h + t, 240'000);
}

TEST(MlperfEarlyStopping, SingleStreamEstimateDiscardsTheSlowestAsLoadGenDoes) {
  std::vector<double> lat;
  // t = 1 at p = 0.90: P(Bin(h + 1, 0.1) <= 1) = 0.9^(h+1) + (h+1) 0.1 0.9^h <= 0.01 first at
  // h = 63 (0.0096; h = 62 gives 0.0106), so 64 queries are needed.
  for (int k = 1; k <= 63; ++k) lat.push_back(k);
  EXPECT_FALSE(early_stopping_estimate(lat, 0.90).ok);
  lat.push_back(64);
  EXPECT_TRUE(early_stopping_estimate(lat, 0.90).ok);
  lat.clear();
  for (int k = 1000; k >= 1; --k) lat.push_back(k * 1e-3);  // 1..1000 ms, unsorted
  const PercentileEstimate e = early_stopping_estimate(lat, 0.90);
  ASSERT_TRUE(e.ok);
  EXPECT_EQ(e.queries_needed, 64);
  // The largest t with h(t) + t <= 1000, found by scanning t as LoadGen does.
  int64_t t = 1;
  while (min_passing_queries(t + 1, 0.90) + t + 1 <= 1000) ++t;
  EXPECT_EQ(e.discarded, t - 1);
  EXPECT_DOUBLE_EQ(e.latency_s, static_cast<double>(1000 - t + 1) * 1e-3);
  EXPECT_GT(e.latency_s, 0.9);  // the estimate is above the plain 90th percentile (900 ms)
}

}  // namespace
}  // namespace tessera::serve::mlperf
