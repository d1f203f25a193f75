#include "sim/serve/llm/llm_study.h"

#include <algorithm>
#include <cmath>

#include "sim/common/error.h"
#include "sim/serve/search.h"

namespace tessera::serve::llm {

const char* llm_mode_name(LlmMode m) {
  switch (m) {
    case LlmMode::kAtRate: return "at-rate";
    case LlmMode::kMaxRate: return "max-rate";
    case LlmMode::kMlperfServer: return "mlperf-server";
    case LlmMode::kMlperfOffline: return "mlperf-offline";
  }
  return "?";
}

namespace {

std::string requests_origin(const LlmStudySpec& spec) {
  return spec.requests.trace ? "--trace " + spec.requests.trace->source : std::string("the generated requests");
}

struct Runner {
  const LlmStudySpec& spec;
  const ServingTarget& target;
  LlmStudyResult& out;

  // One run of `n` requests at `rate` (0: all at once; < 0: the spec's own arrivals); the
  // requests are checked first.
  LlmResult run(double rate, uint64_t n, bool keep) {
    RequestSpec rs = spec.requests;
    rs.requests = n;
    if (rate == 0) {
      rs.arrivals.kind = ArrivalKind::kAllAtOnce;
    } else if (rate > 0) {
      rs.arrivals.rate_per_s = rate;
    }
    const auto reqs = generate_requests(rs);
    check_requests_fit(reqs, target, spec.sim, origin());
    LlmSimConfig c = spec.sim;
    c.keep_timeline = keep;
    c.inter_token = keep;  // the search and the curve read no inter-token gaps
    LlmResult r = simulate_llm(reqs, target, c);
    out.simulated_requests += reqs.size();
    if (!keep) {
      r.per_request.clear();
      r.per_request.shrink_to_fit();
    }
    return r;
  }
  LlmResult run_keeping_requests(double rate, uint64_t n) {
    RequestSpec rs = spec.requests;
    rs.requests = n;
    rs.arrivals.rate_per_s = rate;
    const auto reqs = generate_requests(rs);
    check_requests_fit(reqs, target, spec.sim, origin());
    out.simulated_requests += reqs.size();
    LlmSimConfig c = spec.sim;
    c.inter_token = false;
    return simulate_llm(reqs, target, c);
  }
  std::string origin() const { return requests_origin(spec); }
  uint64_t mlperf_requests(double rate) const {
    const double n = std::ceil(rate * spec.min_duration_s);
    const uint64_t lo = std::min(spec.requests.requests, spec.max_requests);
    return std::clamp<uint64_t>(static_cast<uint64_t>(std::min(n, 1e18)), lo, spec.max_requests);
  }
};

bool meets_slos(const LlmResult& r, const LlmSimConfig& c) {
  return (c.slo_ttft_s <= 0 || r.ttft_at_quantile_s <= c.slo_ttft_s) && (c.slo_tpot_s <= 0 || r.tpot_at_quantile_s <= c.slo_tpot_s);
}

}  // namespace

void check_study_requests(const LlmStudySpec& spec, const ServingTarget& target) {
  // Every run draws the same requests in the same order (lengths from their own streams, not
  // the arrivals'), up to its count: the most any run draws covers them all. An MLPerf Server
  // run draws up to max_requests (rate x min_duration_s, at rates not known before the search).
  RequestSpec rs = spec.requests;
  if (spec.mode == LlmMode::kMlperfServer) rs.requests = std::max(rs.requests, spec.max_requests);
  check_requests_fit(generate_requests(rs), target, spec.sim, requests_origin(spec));
}

LlmStudyResult run_llm_study(const LlmStudySpec& spec, const ServingTarget& target) {
  LlmStudyResult out;
  Runner run{spec, target, out};
  const uint64_t n = spec.requests.requests;
  // The capacity: every request waiting from t = 0 (MLPerf's Offline), requests / span.
  LlmResult saturated = run.run(0, n, spec.mode == LlmMode::kMlperfOffline);
  out.capacity_per_s = saturated.requests_per_s;
  if (spec.mode == LlmMode::kMlperfOffline) {
    out.headline = std::move(saturated);
    out.rate_per_s = 0;
  } else if (spec.mode == LlmMode::kAtRate) {
    out.rate_per_s = spec.requests.arrivals.rate_per_s;
    out.headline = run.run(out.rate_per_s > 0 ? out.rate_per_s : -1, n, true);
    if (out.rate_per_s <= 0) out.rate_per_s = out.headline.offered_rate_per_s;  // a trace at its own rate
  } else {
    const bool mlperf = spec.mode == LlmMode::kMlperfServer;
    auto meets = [&](double rate) {
      if (!mlperf) return meets_slos(run.run(rate, n, false), spec.sim);
      const LlmResult r = run.run_keeping_requests(rate, run.mlperf_requests(rate));
      std::vector<double> ttft, tpot;
      for (const auto& q : r.per_request) {
        ttft.push_back(q.ttft_s());
        if (q.output_tokens > 1) tpot.push_back(q.tpot_s());
      }
      return mlperf_llm_server_check(ttft, tpot, spec.mlperf).passed;
    };
    // The all-at-once throughput is no strict ceiling for a finite run (its last requests
    // drain with a small batch): while the capacity itself meets the requirement, the
    // ceiling doubles, up to kMaxCeiling x the capacity (every rate above it meets it too:
    // the search's answer is then that ceiling).
    constexpr double kMaxCeiling = 64;
    double ceiling = out.capacity_per_s;
    int probes = 0;
    while (ceiling < kMaxCeiling * out.capacity_per_s && (++probes, meets(ceiling))) ceiling *= 2;
    const RateFound found = highest_rate_meeting(ceiling, 0.002, meets);
    out.evaluations = found.evaluations + probes;
    out.feasible = found.rate_per_s > 0;
    // The headline: the run at the highest rate found (at the lowest scanned when none met it).
    out.rate_per_s = out.feasible ? found.rate_per_s : 0.001 * out.capacity_per_s;
    out.headline = run.run(out.rate_per_s, mlperf ? run.mlperf_requests(out.rate_per_s) : n, true);
    if (mlperf) {
      std::vector<double> ttft, tpot;
      for (const auto& q : out.headline.per_request) {
        ttft.push_back(q.ttft_s());
        if (q.output_tokens > 1) tpot.push_back(q.tpot_s());
      }
      out.mlperf_check = mlperf_llm_server_check(ttft, tpot, spec.mlperf);
    }
  }
  for (int i = 0; i < spec.curve_points; ++i) {
    // Evenly spaced fractions of the capacity in (0, 1]: 1/k ... 1.
    const double f = static_cast<double>(i + 1) / static_cast<double>(spec.curve_points);
    LlmCurvePoint p;
    p.rate_per_s = f * out.capacity_per_s;
    p.result = run.run(p.rate_per_s, n, false);
    out.curve.push_back(std::move(p));
  }
  return out;
}

}  // namespace tessera::serve::llm
