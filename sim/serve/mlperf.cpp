#include "sim/serve/mlperf.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tessera::serve::mlperf {

double normal_quantile(double p) {
  if (!(p > 0 && p < 1)) throw std::invalid_argument("normal_quantile: p must be in (0, 1)");
  // Start from Acklam's rational approximation (relative error 1.15e-9), then two Newton
  // steps on erfc bring it to double precision.
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  const double plow = 0.02425;
  double x;
  if (p < plow) {
    const double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p <= 1 - plow) {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {
    const double q = std::sqrt(-2 * std::log(1 - p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  for (int k = 0; k < 2; ++k) {
    const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
    const double u = e * std::sqrt(2 * M_PI) * std::exp(0.5 * x * x);
    x -= u / (1 + 0.5 * x * u);  // Halley's step
  }
  return x;
}

uint64_t min_queries(double percentile, double confidence, double margin) {
  const double z = normal_quantile((1 + confidence) / 2);
  return static_cast<uint64_t>(std::llround(z * z * percentile * (1 - percentile) / (margin * margin)));
}

uint64_t rounded_to_8192(uint64_t queries) { return (queries + 8191) / 8192 * 8192; }

double incomplete_beta_int(double x, int64_t a, int64_t b) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  // I(x; a, b) = sum_{j=0}^{b-1} C(n, j) x^(n-j) (1-x)^j with n = a + b - 1, summed in logs.
  const int64_t n = a + b - 1;
  const double lx = std::log(x), l1x = std::log1p(-x);
  const double lgn = std::lgamma(static_cast<double>(n) + 1);
  double max_term = -INFINITY;
  std::vector<double> terms;
  terms.reserve(static_cast<size_t>(b));
  for (int64_t j = 0; j < b; ++j) {
    const double t = lgn - std::lgamma(static_cast<double>(j) + 1) - std::lgamma(static_cast<double>(n - j) + 1) +
                     static_cast<double>(n - j) * lx + static_cast<double>(j) * l1x;
    terms.push_back(t);
    max_term = std::max(max_term, t);
  }
  double sum = 0;
  for (double t : terms) sum += std::exp(t - max_term);
  return std::min(1.0, std::exp(max_term) * sum);
}

int64_t min_passing_queries(int64_t overlatency, double p, double d, double c) {
  const double q = p - d;
  if (!(q > 0 && q < 1) || !(c > 0 && c < 1) || overlatency < 0) {
    throw std::invalid_argument("min_passing_queries: need 0 < p - d < 1, 0 < c < 1, t >= 0");
  }
  auto passes = [&](int64_t h) { return incomplete_beta_int(q, h, overlatency + 1) <= 1 - c; };
  // I(q; h, t + 1) falls as h grows: find a passing h by doubling, then bisect.
  int64_t lo = 0;  // h = 0 never passes (no under-latency query)
  int64_t hi = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::log(1 - c) / std::log(q))));
  while (!passes(hi)) {
    lo = hi;
    hi *= 2;
  }
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (passes(mid)) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return hi;
}

ServerCheck server_early_stopping(int64_t queries, int64_t overlatency, double p) {
  ServerCheck s;
  s.overlatency = overlatency;
  s.queries_needed = min_passing_queries(overlatency, p) + overlatency;
  s.passed = queries >= s.queries_needed;
  return s;
}

PercentileEstimate early_stopping_estimate(std::vector<double>& latencies, double p) {
  PercentileEstimate e;
  const int64_t n = static_cast<int64_t>(latencies.size());
  e.queries_needed = min_passing_queries(1, p) + 1;
  if (n < e.queries_needed) return e;
  // min_passing_queries(t) + t grows with t: the largest t that still fits in n, by bisection.
  auto fits = [&](int64_t t) { return min_passing_queries(t, p) + t <= n; };
  int64_t lo = 1, hi = 2;
  while (hi <= n && fits(hi)) {
    lo = hi;
    hi *= 2;
  }
  hi = std::min(hi, n + 1);
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (fits(mid)) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  std::sort(latencies.begin(), latencies.end());
  e.ok = true;
  e.discarded = lo - 1;
  e.latency_s = latencies[static_cast<size_t>(n - lo)];
  return e;
}

}  // namespace tessera::serve::mlperf
