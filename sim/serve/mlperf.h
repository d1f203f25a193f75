#pragma once
// MLPerf Inference's statistics (mlcommons/inference_policies, inference_rules.adoc:
// "Scenarios" and the appendix "Early Stopping Criterion"; the way LoadGen applies it is
// in mlcommons/inference loadgen/results.cc, PerformanceSummary::EarlyStopping).
#include <cstdint>
#include <vector>

namespace tessera::serve::mlperf {

// The standard normal quantile (inverse CDF), |error| < 1e-12 over (1e-300, 1 - 1e-16).
double normal_quantile(double p);

// The rules' minimum query count for a tail percentile at a confidence and margin of error
// (the table under "Scenarios"): round(z^2 p (1 - p) / margin^2), z = normal_quantile((1 + c) / 2).
// 0.90 / 0.99 / 0.005 -> 23,886; 0.95 / 0.0025 -> 50,425; 0.97 / 0.0015 -> 85,811; 0.99 / 0.0005 -> 262,742.
uint64_t min_queries(double percentile, double confidence, double margin);
// ... rounded up to a multiple of 2^13, as the table's last column (24,576 ... 270,336).
uint64_t rounded_to_8192(uint64_t queries);

// The regularized incomplete beta function I(x; a, b) for integer a >= 1, b >= 1, as the
// binomial tail it equals: P(at most b - 1 failures in a + b - 1 trials, success prob x).
double incomplete_beta_int(double x, int64_t a, int64_t b);

// The early-stopping criterion with tolerance d and confidence c (the rules use d = 0,
// c = 0.99): the fewest under-latency queries h such that I(p - d; h, t + 1) <= 1 - c,
// given t over-latency queries. t = 0, p = 0.99: 459; p = 0.90: 44.
int64_t min_passing_queries(int64_t overlatency, double p, double d = 0, double c = 0.99);

// Server: a run with `queries` queries of which `overlatency` exceeded the bound passes
// early stopping when queries >= min_passing_queries(t) + t.
struct ServerCheck {
  bool passed = false;
  int64_t overlatency = 0;
  int64_t queries_needed = 0;  // min_passing_queries(t) + t
};
ServerCheck server_early_stopping(int64_t queries, int64_t overlatency, double p);

// SingleStream (and MultiStream): the percentile estimate of a run, LoadGen's way: the
// largest t with min_passing_queries(t) + t <= queries; the t - 1 slowest queries are
// discarded and the slowest remaining one is the estimate. Too few queries (not even
// t = 1 passes): ok = false and queries_needed says how many would do.
struct PercentileEstimate {
  bool ok = false;
  int64_t queries_needed = 0;  // min_passing_queries(1) + 1
  int64_t discarded = 0;       // t - 1
  double latency_s = 0;
};
// `latencies` is sorted in place.
PercentileEstimate early_stopping_estimate(std::vector<double>& latencies, double p);

// Scenario facts from the rules (2024-01 datacenter table; durations from "Scenarios").
inline constexpr double kMinDurationS = 600;          // every scenario
inline constexpr uint64_t kOfflineMinSamples = 24576;  // "At least 24,576" samples in the query
inline constexpr double kServerPercentile = 0.99;
inline constexpr double kSingleStreamPercentile = 0.90;

}  // namespace tessera::serve::mlperf
