#include "sim/serve/study.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sim/common/error.h"
#include "sim/serve/mlperf.h"

namespace tessera::serve {

const char* scenario_name(Scenario s) {
  switch (s) {
    case Scenario::kNone: return "none";
    case Scenario::kServer: return "server";
    case Scenario::kSingleStream: return "single-stream";
    case Scenario::kOffline: return "offline";
  }
  return "?";
}

uint64_t mlperf_min_queries(double quantile) {
  // The rules' table uses a 99% confidence and a margin of (1 - p) / 20: 0.005 at p90,
  // 0.0025 at p95, 0.0015 at p97, 0.0005 at p99.
  return mlperf::rounded_to_8192(mlperf::min_queries(quantile, 0.99, (1 - quantile) / 20));
}

SimConfig study_config(const StudySpec& spec, const ServiceTables& tables, size_t platform, int64_t batch,
                       Policy policy, const HostModel& host) {
  SimConfig c;
  c.arrivals = spec.arrivals;
  c.arrivals.rate_per_s = 0;
  c.policy.kind = policy;
  c.policy.max_batch = batch;
  c.policy.timeout_s = spec.timeout_s;
  c.policy.deadline_s = spec.deadline_s;
  c.host = host;
  c.service = tables.platforms.at(platform).table;
  c.replicas = spec.replicas.at(platform);
  c.dispatch = spec.dispatch;
  c.requests = spec.requests;
  c.seed = spec.seed;
  c.target_quantile = spec.quantile;
  c.latency_bound_s = spec.bound_s;
  return c;
}

namespace {

std::string rate_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

uint64_t clamp_requests(double wanted, const StudySpec& spec, MlperfOutcome& m) {
  const double n = std::ceil(wanted);
  if (n > static_cast<double>(spec.max_requests)) {
    m.capped = true;
    return spec.max_requests;
  }
  return std::max<uint64_t>(1, static_cast<uint64_t>(n));
}

void run_server(const StudySpec& spec, SimConfig base, StudyRow& row, uint64_t& simulated) {
  const double q = spec.quantile;
  const uint64_t min_q = mlperf_min_queries(q);
  RateSearch search;
  search.requests_at = [&](double rate) {
    MlperfOutcome m;
    const uint64_t n = clamp_requests(std::max(static_cast<double>(min_q), rate * spec.min_duration_s), spec, m);
    simulated += n;
    return n;
  };
  const Requirement ok = [q](const SimResult& r) {
    return mlperf::server_early_stopping(static_cast<int64_t>(r.requests), static_cast<int64_t>(r.over_bound), q).passed;
  };
  MaxRate m = max_rate(base, ok, search);
  row.searched = true;
  row.feasible = m.feasible;
  row.max_rate_per_s = m.rate_per_s;
  row.evaluations = m.evaluations;
  row.at_max = std::move(m.at_max);
  MlperfOutcome& o = row.mlperf;
  o.min_queries = min_q;
  if (m.feasible) {
    const SimResult& r = row.at_max;
    o.queries = r.requests;
    o.duration_s = r.span_s;
    o.overlatency = static_cast<int64_t>(r.over_bound);
    const auto check = mlperf::server_early_stopping(static_cast<int64_t>(r.requests), o.overlatency, q);
    o.queries_needed = check.queries_needed;
    o.early_stopping_passed = check.passed;
    // The run at the maximum: was it cut short?
    MlperfOutcome probe;
    clamp_requests(std::max(static_cast<double>(min_q), row.max_rate_per_s * spec.min_duration_s), spec, probe);
    o.capped = probe.capped;
    o.meets_duration = !probe.capped && o.queries >= min_q;
  }
}

void run_single_stream(const StudySpec& spec, SimConfig c, StudyRow& row, uint64_t& simulated) {
  c.arrivals.kind = ArrivalKind::kClosedLoop;
  c.arrivals.rate_per_s = 0;
  c.latency_bound_s = 0;
  c.keep_latencies = true;
  MlperfOutcome& o = row.mlperf;
  o.min_queries = mlperf_min_queries(spec.quantile);
  // One query at a time: the expected latency of one decides how many fill the duration.
  const double mean = c.service.service_at(1) + c.host.request_cpu.mean_s(1) + c.host.batch_cpu.mean_s(1);
  c.requests = clamp_requests(std::max(static_cast<double>(o.min_queries), 1.01 * spec.min_duration_s / mean), spec, o);
  simulated += c.requests;
  row.scenario_run = simulate(c);
  row.has_scenario_run = true;
  const SimResult& r = row.scenario_run;
  o.queries = r.requests;
  o.duration_s = r.span_s;
  o.meets_duration = r.span_s >= spec.min_duration_s && o.queries >= o.min_queries;
  std::vector<double> lat = r.latencies_s;
  const auto est = mlperf::early_stopping_estimate(lat, spec.quantile);
  o.early_stopping_passed = est.ok;
  o.queries_needed = est.queries_needed;
  o.estimate_s = est.latency_s;
  o.discarded = est.discarded;
  row.scenario_run.latencies_s.clear();
  row.scenario_run.latencies_s.shrink_to_fit();
  row.feasible = est.ok;
}

void run_offline(const StudySpec& spec, SimConfig c, StudyRow& row, uint64_t& simulated) {
  c.arrivals.kind = ArrivalKind::kAllAtOnce;
  c.arrivals.rate_per_s = 0;
  c.latency_bound_s = 0;
  MlperfOutcome& o = row.mlperf;
  o.min_queries = mlperf::kOfflineMinSamples;
  c.requests = clamp_requests(std::max(static_cast<double>(o.min_queries), 1.01 * row.capacity_per_s * spec.min_duration_s),
                              spec, o);
  simulated += c.requests;
  row.scenario_run = simulate(c);
  row.has_scenario_run = true;
  o.queries = row.scenario_run.requests;
  o.duration_s = row.scenario_run.span_s;
  o.meets_duration = o.duration_s >= spec.min_duration_s && o.queries >= o.min_queries;
  row.feasible = true;
}

double row_score(const StudySpec& spec, const StudyRow& r) {
  switch (spec.scenario) {
    case Scenario::kSingleStream: return -r.mlperf.estimate_s;
    case Scenario::kOffline: return r.scenario_run.samples_per_s;
    default: break;
  }
  if (r.searched) return r.max_rate_per_s;
  return -r.at_rate.latency_at_target_s;
}

}  // namespace

StudyResult run_study(const StudySpec& spec, const ServiceTables& tables) {
  StudyResult out;
  out.host = spec.host;
  if (spec.replicas.size() != tables.platforms.size()) throw std::logic_error("serve: one replica count per platform");

  if (spec.calibration) {
    const CalibrationSpec& cs = *spec.calibration;
    SimConfig base = study_config(spec, tables, 0, cs.batch, Policy::kFixed, spec.host);
    base.arrivals.rate_per_s = cs.rate_per_s;
    base.latency_bound_s = 0;
    const double device_cap = static_cast<double>(base.replicas) / base.service.service_at(cs.batch) * static_cast<double>(cs.batch);
    if (cs.rate_per_s >= device_cap) {
      throw InputError("--calibrate-rate: " + rate_text(cs.rate_per_s) + " requests/s is at or above what " +
                       tables.platforms[0].name + " x" + std::to_string(base.replicas) + " can serve at batch " +
                       std::to_string(cs.batch) + " even with no host time (" + rate_text(device_cap) + "/s)");
    }
    try {
      out.calibration = calibrate_host_scale(base, cs.latency_s);
    } catch (const InputError& e) {
      std::string msg = e.what();
      if (msg.rfind("serve: calibration: ", 0) == 0) msg.erase(0, 20);
      throw InputError("--calibrate-latency-ms: " + msg + " (" + tables.platforms[0].name + " x" +
                       std::to_string(base.replicas) + ", batch " + std::to_string(cs.batch) + ", " +
                       rate_text(cs.rate_per_s) + " requests/s)");
    }
    out.simulated_requests += static_cast<uint64_t>(out.calibration->evaluations) * base.requests;
    out.host = spec.host.scaled(out.calibration->scale);
  }

  const bool mlperf_run = spec.scenario != Scenario::kNone;
  for (size_t p = 0; p < tables.platforms.size(); ++p) {
    std::vector<int64_t> batches = spec.batches;
    std::vector<Policy> policies = spec.policies;
    if (spec.scenario == Scenario::kSingleStream) {
      batches = {1};
      policies = {Policy::kFixed};
    } else if (spec.scenario == Scenario::kOffline) {
      policies = {Policy::kFixed};
    }
    for (int64_t b : batches) {
      for (Policy pol : policies) {
        StudyRow row;
        row.platform = p;
        row.batch = b;
        row.policy = pol;
        row.replicas = spec.replicas[p];
        SimConfig base = study_config(spec, tables, p, b, pol, out.host);
        row.capacity_per_s = capacity(base);
        switch (spec.scenario) {
          case Scenario::kServer: run_server(spec, base, row, out.simulated_requests); break;
          case Scenario::kSingleStream: run_single_stream(spec, base, row, out.simulated_requests); break;
          case Scenario::kOffline: run_offline(spec, base, row, out.simulated_requests); break;
          case Scenario::kNone: {
            if (spec.bound_s > 0) {
              MaxRate m = max_rate(base, quantile_at_most(spec.bound_s));
              row.searched = true;
              row.feasible = m.feasible;
              row.max_rate_per_s = m.rate_per_s;
              row.evaluations = m.evaluations;
              row.at_max = std::move(m.at_max);
              out.simulated_requests += static_cast<uint64_t>(m.evaluations) * base.requests;
            }
            if (spec.rate_per_s > 0 || spec.at_trace_rate) {
              SimConfig c = base;
              c.arrivals.rate_per_s = spec.rate_per_s;  // 0: a trace at its own rate
              row.has_at_rate = true;
              row.at_rate = simulate(c);
              row.at_rate_per_s = row.at_rate.offered_rate_per_s;
              if (spec.rate_per_s > 0) row.at_rate_per_s = spec.rate_per_s;
              out.simulated_requests += row.at_rate.requests;
              if (spec.bound_s <= 0) row.feasible = true;
            }
            break;
          }
        }
        if (!mlperf_run && spec.curve_points > 0) {
          row.curve = latency_curve(base, default_curve_fractions(spec.curve_points));
          for (const auto& pt : row.curve) out.simulated_requests += pt.result.requests;
        }
        out.rows.push_back(std::move(row));
      }
    }
  }
  for (size_t k = 0; k < out.rows.size(); ++k) {
    const StudyRow& r = out.rows[k];
    if (r.platform != 0 || !r.feasible) continue;
    if (out.best < 0 || row_score(spec, r) > row_score(spec, out.rows[static_cast<size_t>(out.best)])) {
      out.best = static_cast<int>(k);
    }
  }
  return out;
}

}  // namespace tessera::serve
