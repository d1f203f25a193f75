#include "sim/serve/serving_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace tessera::serve {
namespace {

using json = nlohmann::ordered_json;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// CSV cells: 6 significant digits, the same text for the same double everywhere.
std::string num(double v) { return fmt("%.6g", v); }

// Thousands separators for rates in the summary: 225,000.
std::string rate_text(double v) {
  const long long n = std::llround(v);
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t k = 0; k < digits.size(); ++k) {
    if (k && (digits.size() - k) % 3 == 0) out += ',';
    out += digits[k];
  }
  return (n < 0 ? "-" : "") + out;
}

std::string ms_text(double s) { return fmt(s * 1e3 >= 100 ? "%.1f" : "%.3f", s * 1e3); }

std::string percentile_text(double q) {
  std::string s = fmt("%.10g", q * 100);
  return s;
}

const SimResult* main_run(const StudyRow& r) {
  if (r.searched) return r.feasible ? &r.at_max : nullptr;
  if (r.has_at_rate) return &r.at_rate;
  if (r.has_scenario_run) return &r.scenario_run;
  return nullptr;
}

double headline_rate(const StudySpec& spec, const StudyRow& r) {
  if (r.searched) return r.max_rate_per_s;
  if (r.has_scenario_run) return spec.scenario == Scenario::kOffline ? r.scenario_run.samples_per_s : r.scenario_run.throughput_per_s;
  return r.at_rate.throughput_per_s;
}

json latency_json(const SimResult& r, const StudySpec& spec) {
  json j;
  j["p50"] = r.latency_s.p50 * 1e3;
  j["p90"] = r.latency_s.p90 * 1e3;
  j["p95"] = r.latency_s.p95 * 1e3;
  j["p99"] = r.latency_s.p99 * 1e3;
  j["p99.9"] = r.latency_s.p999 * 1e3;
  j["at_percentile"] = r.latency_at_target_s * 1e3;
  j["mean"] = r.latency_mean_s * 1e3;
  j["max"] = r.latency_max_s * 1e3;
  return j;
}

json run_json(const SimResult& r, const StudySpec& spec) {
  json j;
  j["requests"] = r.requests;
  j["samples"] = r.samples;
  j["batches"] = r.batches;
  j["offered_per_s"] = r.offered_rate_per_s;
  j["throughput_per_s"] = r.throughput_per_s;
  j["samples_per_s"] = r.samples_per_s;
  j["span_s"] = r.span_s;
  j["mean_batch"] = r.mean_batch;
  j["latency_ms"] = latency_json(r, spec);
  j["over_bound"] = spec.bound_s > 0 ? json(r.over_bound) : json(nullptr);
  j["wait_ms"] = {{"batch_fill", r.fill_wait_mean_s * 1e3},
                  {"host_core", r.host_wait_mean_s * 1e3},
                  {"replica", r.replica_wait_mean_s * 1e3}};
  j["utilization"] = {{"replicas", r.replica_utilization},
                      {"per_replica", r.replica_utilizations},
                      {"host_cores", r.host_utilization},
                      {"pcie_root", r.pcie_root_utilization}};
  j["queue"] = {{"mean_in_system", r.mean_in_system},
                {"max_in_system", r.max_in_system},
                {"mean_batching", r.mean_batching_queue},
                {"mean_host", r.mean_host_queue},
                {"mean_replica", r.mean_replica_queue}};
  j["littles_law"] = {{"L", r.mean_in_system}, {"lambda_W", r.littles_lambda_w}, {"relative_error", r.littles_relative_error}};
  return j;
}

json tail_json(const Tail& t) {
  json j;
  j["distribution"] = tail_kind_name(t.kind);
  switch (t.kind) {
    case Tail::Kind::kNone: break;
    case Tail::Kind::kExponential: j["mean_us"] = t.scale_s * 1e6; break;
    case Tail::Kind::kLognormal:
      j["median_us"] = t.scale_s * 1e6;
      j["sigma"] = t.shape;
      break;
    case Tail::Kind::kPareto:
      j["min_us"] = t.scale_s * 1e6;
      j["alpha"] = t.shape;
      break;
  }
  return j;
}

json time_json(const HostTime& h) {
  return {{"fixed_us", h.fixed_s * 1e6}, {"per_sample_us", h.per_sample_s * 1e6}, {"tail", tail_json(h.tail)},
          {"mean_us_one_sample", h.mean_s(1) * 1e6}};
}

json host_json(const ServeInputs& in, const StudySpec& spec, const StudyResult& res) {
  const HostModel& h = res.host;
  json j;
  j["name"] = h.name;
  j["file"] = in.host_file.empty() ? json(nullptr) : json(in.host_file);
  j["cores"] = h.cores;
  j["pcie_root_gb_per_s"] = h.pcie_root_bytes_per_s / 1e9;
  j["request_cpu"] = time_json(h.request_cpu);
  j["batch_cpu"] = time_json(h.batch_cpu);
  j["scale"] = h.scale;
  j["scale_source"] = in.host_scale_source;
  // Which numbers are whose: the file gives the shape (cores, root complex, the times'
  // ratios and tail shapes); calibration (or --host-scale) one factor on every CPU time.
  json given = json::array();
  for (const char* k : {"cores", "pcie_root_gb_per_s", "request_cpu (shape)", "batch_cpu (shape)"}) given.push_back(k);
  j["from_file"] = given;
  json scaled = json::array();
  if (res.calibration) scaled.push_back("scale (calibrated: every request_cpu and batch_cpu time)");
  if (in.host_scale_flag != 1) scaled.push_back("scale (--host-scale)");
  j["set_by_this_run"] = scaled;
  return j;
}

std::string policy_label(const StudySpec& spec, Policy p) {
  switch (p) {
    case Policy::kFixed: return "fixed";
    case Policy::kTimeout: return "timeout " + ms_text(spec.timeout_s) + " ms";
    case Policy::kDeadline: return "deadline " + ms_text(spec.deadline_s) + " ms";
  }
  return "?";
}

// serving.json "calibration": the published point the host scale was fitted to, and the fit.
json calibration_json(const StudySpec& spec, const ServiceTables& tables, const StudyResult& res) {
  if (!res.calibration || !spec.calibration) return nullptr;
  return {{"platform", tables.platforms[0].name},
          {"batch", spec.calibration->batch},
          {"policy", "fixed"},
          {"replicas", spec.replicas[0]},
          {"rate_per_s", spec.calibration->rate_per_s},
          {"per_replica_per_s", spec.calibration->rate_per_s / static_cast<double>(spec.replicas[0])},
          {"percentile", spec.quantile * 100},
          {"target_ms", spec.calibration->latency_s * 1e3},
          {"achieved_ms", res.calibration->achieved_s * 1e3},
          {"device_only_ms", res.calibration->device_only_s * 1e3},
          {"scale", res.calibration->scale},
          {"simulations", res.calibration->evaluations}};
}

// serving.json "platforms": each platform's replicas, simulated service times and capacity.
json platforms_json(const StudySpec& spec, const ServiceTables& tables, const StudyResult& res) {
  json plats = json::array();
  for (size_t p = 0; p < tables.platforms.size(); ++p) {
    const PlatformService& ps = tables.platforms[p];
    json pj;
    pj["name"] = ps.name;
    pj["display_name"] = ps.display_name;
    pj["kind"] = ps.kind;
    pj["replicas"] = spec.replicas[p];
    json svc = json::array();
    for (size_t k = 0; k < ps.table.batches.size(); ++k) {
      const double s = ps.table.service_s[k];
      svc.push_back({{"batch", ps.table.batches[k]},
                     {"service_ms", s * 1e3},
                     {"pcie_bytes", ps.table.pcie_bytes[k]},
                     {"samples_per_s_idle", static_cast<double>(ps.table.batches[k]) / s}});
    }
    pj["service"] = svc;
    double max_cap = 0;
    for (const auto& r : res.rows) {
      if (r.platform == p) max_cap = std::max(max_cap, r.capacity_per_s);
    }
    pj["max_capacity_per_s"] = max_cap;
    plats.push_back(pj);
  }
  return plats;
}

// A result row's MLPerf run rules: queries, duration, early stopping.
json mlperf_json(const StudySpec& spec, const StudyRow& r) {
  const MlperfOutcome& m = r.mlperf;
  json mj;
  mj["scenario"] = scenario_name(spec.scenario);
  mj["queries"] = m.queries;
  mj["min_queries"] = m.min_queries;
  mj["duration_s"] = m.duration_s;
  mj["min_duration_s"] = spec.min_duration_s;
  mj["meets_duration_and_count"] = m.meets_duration;
  mj["capped_by_max_requests"] = m.capped;
  if (spec.scenario == Scenario::kServer) {
    mj["overlatency_queries"] = m.overlatency;
    mj["queries_needed"] = m.queries_needed;
    mj["early_stopping_passed"] = m.early_stopping_passed;
  } else if (spec.scenario == Scenario::kSingleStream) {
    mj["early_stopping_estimate_ms"] = m.estimate_s * 1e3;
    mj["discarded_slowest"] = m.discarded;
    mj["queries_needed"] = m.queries_needed;
    mj["early_stopping_passed"] = m.early_stopping_passed;
  } else {
    mj["samples_per_s"] = r.scenario_run.samples_per_s;
  }
  return mj;
}

// One row of serving.json "results": a platform, batch size and policy, and its runs.
// `platform_max` is the platform's highest capacity over its rows.
json result_json(const StudySpec& spec, const ServiceTables& tables, const StudyRow& r, double platform_max) {
  json rj;
  rj["platform"] = tables.platforms[r.platform].name;
  rj["batch"] = r.batch;
  rj["policy"] = policy_name(r.policy);
  rj["replicas"] = r.replicas;
  rj["capacity_per_s"] = r.capacity_per_s;
  rj["feasible"] = r.feasible;
  if (r.searched) {
    rj["max_throughput_per_s"] = r.max_rate_per_s;
    rj["per_replica_per_s"] = r.max_rate_per_s / static_cast<double>(r.replicas);
    rj["fraction_of_capacity"] = r.capacity_per_s > 0 ? r.max_rate_per_s / r.capacity_per_s : 0;
    rj["fraction_of_platform_max"] = platform_max > 0 ? r.max_rate_per_s / platform_max : 0;
    rj["evaluations"] = r.evaluations;
    rj["at_max"] = r.feasible ? run_json(r.at_max, spec) : json(nullptr);
  }
  if (r.has_at_rate) {
    rj["at_rate"] = run_json(r.at_rate, spec);
    rj["at_rate"]["rate_per_s"] = r.at_rate_per_s;
  }
  if (r.has_scenario_run) rj["run"] = run_json(r.scenario_run, spec);
  if (spec.scenario != Scenario::kNone) rj["mlperf"] = mlperf_json(spec, r);
  return rj;
}

// The largest relative error of Little's law over a row's runs and curve points: the
// simulation's own consistency check.
double littles_max_relative_error(const StudyRow& r) {
  double worst = 0;
  if (r.searched && r.feasible) worst = std::max(worst, r.at_max.littles_relative_error);
  if (r.has_at_rate) worst = std::max(worst, r.at_rate.littles_relative_error);
  if (r.has_scenario_run) worst = std::max(worst, r.scenario_run.littles_relative_error);
  for (const auto& pt : r.curve) worst = std::max(worst, pt.result.littles_relative_error);
  return worst;
}

}  // namespace

json serving_json(const ServeInputs& in, const StudySpec& spec, const ServiceTables& tables, const StudyResult& res) {
  json j;
  j["format"] = "tessera-serving";
  j["version"] = 1;
  j["arch"] = {{"name", in.arch_name}, {"file", in.arch_file}};
  j["workload"] = {{"name", tables.workload_name}, {"file", in.workload_file}, {"precision", in.precision},
                   {"input_shapes", in.input_shapes}};
  j["scenario"] = spec.scenario == Scenario::kNone ? (spec.bound_s > 0 ? "latency-bound" : "rate") : scenario_name(spec.scenario);
  j["percentile"] = spec.quantile * 100;
  j["latency_bound_ms"] = spec.bound_s > 0 ? json(spec.bound_s * 1e3) : json(nullptr);
  j["rate_per_s"] = spec.rate_per_s > 0 ? json(spec.rate_per_s) : json(nullptr);

  // The headline: the accelerator's best batch and policy.
  const StudyRow* best = res.best >= 0 ? &res.rows[static_cast<size_t>(res.best)] : nullptr;
  const SimResult* best_run = best ? main_run(*best) : nullptr;
  const bool searched = spec.bound_s > 0 && (spec.scenario == Scenario::kNone || spec.scenario == Scenario::kServer);
  j["feasible"] = best != nullptr;
  if (searched) j["max_throughput_per_s"] = best ? json(best->max_rate_per_s) : json(0);
  j["throughput_per_s"] = best && best_run ? json(headline_rate(spec, *best)) : json(nullptr);
  j["per_replica_per_s"] =
      best && best_run ? json(headline_rate(spec, *best) / static_cast<double>(best->replicas)) : json(nullptr);
  j["platform"] = tables.platforms[0].name;
  j["replicas"] = spec.replicas[0];
  j["batch"] = best ? json(best->batch) : json(nullptr);
  j["policy"] = best ? json(policy_name(best->policy)) : json(nullptr);
  j["latency_ms"] = best_run ? latency_json(*best_run, spec) : json(nullptr);
  if (spec.scenario == Scenario::kSingleStream && best) j["early_stopping_estimate_ms"] = best->mlperf.estimate_s * 1e3;

  json arrivals;
  arrivals["kind"] = arrival_name(spec.arrivals.kind);
  arrivals["cv"] = (spec.arrivals.kind == ArrivalKind::kGamma || spec.arrivals.kind == ArrivalKind::kHyperExponential)
                       ? json(spec.arrivals.cv)
                       : json(nullptr);
  arrivals["trace"] = in.trace_file.empty() ? json(nullptr) : json(in.trace_file);
  j["arrivals"] = arrivals;
  json pols = json::array();
  for (Policy p : spec.policies) pols.push_back(policy_name(p));
  j["policies"] = pols;
  j["timeout_ms"] = spec.timeout_s * 1e3;
  j["deadline_ms"] = spec.deadline_s * 1e3;
  j["dispatch"] = dispatch_name(spec.dispatch);
  j["requests_per_simulation"] = spec.requests;
  j["seed"] = spec.seed;

  j["host"] = host_json(in, spec, res);
  j["calibration"] = calibration_json(spec, tables, res);
  j["platforms"] = platforms_json(spec, tables, res);

  std::vector<double> platform_max(tables.platforms.size(), 0);
  for (const auto& r : res.rows) platform_max[r.platform] = std::max(platform_max[r.platform], r.capacity_per_s);
  json rows = json::array();
  double littles_max = 0;
  for (const StudyRow& r : res.rows) {
    rows.push_back(result_json(spec, tables, r, platform_max[r.platform]));
    littles_max = std::max(littles_max, littles_max_relative_error(r));
  }
  j["results"] = rows;
  j["littles_law_max_relative_error"] = littles_max;
  j["files"] = {{"results", "serving.csv"}, {"curve", spec.curve_points > 0 ? json("curve.csv") : json(nullptr)},
                {"summary", "serving.md"}};
  return j;
}

std::string serving_csv(const StudySpec& spec, const ServiceTables& tables, const StudyResult& res) {
  std::ostringstream o;
  o << "platform,kind,replicas,batch,policy,capacity_per_s,feasible,throughput_per_s,per_replica_per_s,"
       "p50_ms,p90_ms,p95_ms,p99_ms,p999_ms,at_percentile_ms,mean_ms,mean_batch,replica_utilization,"
       "host_utilization,pcie_root_utilization,mean_in_system\n";
  for (const StudyRow& r : res.rows) {
    const PlatformService& ps = tables.platforms[r.platform];
    o << ps.name << "," << ps.kind << "," << r.replicas << "," << r.batch << "," << policy_name(r.policy) << ","
      << num(r.capacity_per_s) << "," << (r.feasible ? "true" : "false") << ",";
    const SimResult* run = main_run(r);
    if (!run) {
      o << "0,0,,,,,,,,,,,,\n";
      continue;
    }
    const double thr = headline_rate(spec, r);
    o << num(thr) << "," << num(thr / static_cast<double>(r.replicas)) << "," << num(run->latency_s.p50 * 1e3) << ","
      << num(run->latency_s.p90 * 1e3) << "," << num(run->latency_s.p95 * 1e3) << "," << num(run->latency_s.p99 * 1e3)
      << "," << num(run->latency_s.p999 * 1e3) << "," << num(run->latency_at_target_s * 1e3) << ","
      << num(run->latency_mean_s * 1e3) << "," << num(run->mean_batch) << "," << num(run->replica_utilization) << ","
      << num(run->host_utilization) << "," << num(run->pcie_root_utilization) << "," << num(run->mean_in_system) << "\n";
  }
  return o.str();
}

std::string curve_csv(const ServiceTables& tables, const StudyResult& res) {
  std::ostringstream o;
  o << "platform,replicas,batch,policy,load,offered_per_s,throughput_per_s,per_replica_per_s,p50_ms,p90_ms,p99_ms,"
       "p999_ms,mean_ms,replica_utilization,host_utilization\n";
  for (const StudyRow& r : res.rows) {
    for (const CurvePoint& pt : r.curve) {
      const SimResult& s = pt.result;
      o << tables.platforms[r.platform].name << "," << r.replicas << "," << r.batch << "," << policy_name(r.policy) << ","
        << num(r.capacity_per_s > 0 ? pt.rate_per_s / r.capacity_per_s : 0) << "," << num(pt.rate_per_s) << ","
        << num(s.throughput_per_s) << "," << num(s.throughput_per_s / static_cast<double>(r.replicas)) << ","
        << num(s.latency_s.p50 * 1e3) << "," << num(s.latency_s.p90 * 1e3) << "," << num(s.latency_s.p99 * 1e3) << ","
        << num(s.latency_s.p999 * 1e3) << "," << num(s.latency_mean_s * 1e3) << "," << num(s.replica_utilization) << ","
        << num(s.host_utilization) << "\n";
    }
  }
  return o.str();
}

namespace {

// serving.md's sections, in the file's order; `pct` is the study's percentile ("p99").

// The title and what was asked: config, workload, the question, arrivals, dispatch.
void inputs_markdown(std::ostream& o, const ServeInputs& in, const StudySpec& spec, const ServiceTables& tables,
                     const std::string& pct) {
  o << "# Serving " << tables.workload_name << " on " << in.arch_name << "\n\n";
  o << "| input | value |\n|---|---|\n";
  o << "| config | `" << in.arch_file << "` |\n";
  o << "| workload | `" << in.workload_file << "` (" << in.precision << ") |\n";
  std::string mode;
  switch (spec.scenario) {
    case Scenario::kNone:
      mode = spec.bound_s > 0 ? "maximum throughput with the " + pct + " latency at most " + ms_text(spec.bound_s) + " ms"
                              : "latency at " + (spec.rate_per_s > 0 ? rate_text(spec.rate_per_s) + " requests/s" : std::string("the trace's own rate"));
      if (spec.bound_s > 0 && spec.rate_per_s > 0) mode += "; and the latency at " + rate_text(spec.rate_per_s) + " requests/s";
      break;
    case Scenario::kServer: mode = "MLPerf Server: the highest Poisson rate whose " + pct + " passes early stopping under " + ms_text(spec.bound_s) + " ms"; break;
    case Scenario::kSingleStream: mode = "MLPerf SingleStream: one query at a time, the " + pct + " early-stopping estimate"; break;
    case Scenario::kOffline: mode = "MLPerf Offline: every sample at once, the throughput"; break;
  }
  o << "| question | " << mode << " |\n";
  o << "| arrivals | " << arrival_name(spec.arrivals.kind);
  if (spec.arrivals.kind == ArrivalKind::kGamma || spec.arrivals.kind == ArrivalKind::kHyperExponential) o << " (cv " << fmt("%g", spec.arrivals.cv) << ")";
  if (!in.trace_file.empty()) o << " `" << in.trace_file << "`";
  o << ", seed " << spec.seed << ", " << rate_text(static_cast<double>(spec.requests)) << " requests per simulation |\n";
  o << "| dispatch | " << dispatch_name(spec.dispatch) << " over the replicas |\n\n";
}

// The answer in bold: the best batch size and policy, or that none meets the requirement.
void headline_markdown(std::ostream& o, const ServeInputs& in, const StudySpec& spec, const StudyResult& res,
                       const std::string& pct) {
  const StudyRow* best = res.best >= 0 ? &res.rows[static_cast<size_t>(res.best)] : nullptr;
  if (best) {
    const SimResult* run = main_run(*best);
    o << "**" << in.arch_name << " x" << best->replicas << ", batch " << best->batch << " (" << policy_label(spec, best->policy) << "): ";
    if (best->searched) {
      o << rate_text(best->max_rate_per_s) << " requests/s";
      if (best->replicas > 1) o << " (" << rate_text(best->max_rate_per_s / static_cast<double>(best->replicas)) << " per replica)";
      o << " with " << pct << " " << ms_text(run->latency_at_target_s) << " ms";
    } else if (spec.scenario == Scenario::kSingleStream) {
      o << pct << " early-stopping estimate " << ms_text(best->mlperf.estimate_s) << " ms";
    } else if (spec.scenario == Scenario::kOffline) {
      o << rate_text(best->scenario_run.samples_per_s) << " samples/s";
    } else {
      o << pct << " " << ms_text(run->latency_at_target_s) << " ms at " << rate_text(best->at_rate_per_s) << " requests/s";
    }
    o << ".**\n\n";
  } else {
    o << "**No batch size and policy of " << in.arch_name << " meets the requirement.**\n\n";
  }
}

// The host model: which figures come from its file and which from calibration or --host-scale.
void host_markdown(std::ostream& o, const ServeInputs& in, const StudySpec& spec, const ServiceTables& tables,
                   const StudyResult& res, const std::string& pct) {
  o << "## Host\n\n";
  const HostModel& h = res.host;
  if (in.host_file.empty()) {
    o << "No host model (`--host none`): the queue sees the platforms' batch times alone.\n\n";
    return;
  }
  o << "`" << in.host_file << "` (" << h.name << "). The file gives the shape (cores, root complex, the times' ratios "
       "and tails); one scale multiplies every CPU time";
  if (res.calibration) {
    o << " and was **calibrated** on " << tables.platforms[0].name << " x" << spec.replicas[0] << " batch "
      << spec.calibration->batch << " at " << rate_text(spec.calibration->rate_per_s) << " requests/s to a " << pct
      << " of " << ms_text(spec.calibration->latency_s) << " ms (achieved " << ms_text(res.calibration->achieved_s)
      << " ms; " << ms_text(res.calibration->device_only_s) << " ms with no host time)";
  } else if (in.host_scale_source == "--host-scale") {
    o << " and was given by --host-scale";
  }
  o << ". Every other figure here is a prediction.\n\n";
  o << "| parameter | value | from |\n|---|---|---|\n";
  o << "| cores | " << (h.cores ? std::to_string(h.cores) : std::string("unlimited")) << " | file |\n";
  o << "| PCIe root complex | " << (h.pcie_root_bytes_per_s > 0 ? fmt("%g GB/s", h.pcie_root_bytes_per_s / 1e9) : std::string("unlimited")) << " | file |\n";
  o << "| scale | " << fmt("%.6g", h.scale) << " | " << in.host_scale_source << " |\n";
  o << "| request CPU, mean | " << fmt("%.3g us", h.request_cpu.mean_s(1) * 1e6) << " | file x scale |\n";
  o << "| batch CPU, mean (batch 1) | " << fmt("%.3g us", h.batch_cpu.mean_s(1) * 1e6) << " | file x scale |\n";
  o << "| batch CPU per sample | " << fmt("%.3g us", h.batch_cpu.per_sample_s * 1e6) << " | file x scale |\n\n";
}

// The study's percentile gets its own column unless it is one of the four shown anyway.
bool has_percentile_column(const StudySpec& spec) {
  return std::abs(spec.quantile - 0.5) > 1e-12 && std::abs(spec.quantile - 0.9) > 1e-12 &&
         std::abs(spec.quantile - 0.99) > 1e-12 && std::abs(spec.quantile - 0.999) > 1e-12;
}

// One row per platform, batch size and policy: the headline rate and its latencies.
void results_markdown(std::ostream& o, const StudySpec& spec, const ServiceTables& tables, const StudyResult& res,
                      const std::string& pct) {
  o << "## Results\n\n";
  const bool extra = has_percentile_column(spec);
  o << "| platform | replicas | batch | policy | capacity/s | " << (spec.scenario == Scenario::kOffline ? "samples/s" : "throughput/s")
    << " | per replica/s | p50 ms | p90 ms | p99 ms | p99.9 ms |" << (extra ? " " + pct + " ms |" : std::string())
    << " replica util | host util |\n";
  o << "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|" << (extra ? "---:|" : "") << "---:|---:|\n";
  for (const StudyRow& r : res.rows) {
    const SimResult* run = main_run(r);
    o << "| " << tables.platforms[r.platform].name << " | " << r.replicas << " | " << r.batch << " | "
      << policy_label(spec, r.policy) << " | " << rate_text(r.capacity_per_s) << " | ";
    if (!run) {
      o << "none meets it | | | | | |" << (extra ? " |" : "") << " | |\n";
      continue;
    }
    const double thr = headline_rate(spec, r);
    o << rate_text(thr) << " | " << rate_text(thr / static_cast<double>(r.replicas)) << " | " << ms_text(run->latency_s.p50)
      << " | " << ms_text(run->latency_s.p90) << " | " << ms_text(run->latency_s.p99) << " | " << ms_text(run->latency_s.p999)
      << " | " << (extra ? ms_text(run->latency_at_target_s) + " | " : std::string()) << fmt("%.2f", run->replica_utilization)
      << " | " << fmt("%.2f", run->host_utilization) << " |\n";
  }
  o << "\n";
}

// With both --latency-bound-ms and --rate: every row's latencies at the given rate.
void at_rate_markdown(std::ostream& o, const StudySpec& spec, const ServiceTables& tables, const StudyResult& res,
                      const std::string& pct) {
  if (!(spec.bound_s > 0 && spec.rate_per_s > 0 && spec.scenario == Scenario::kNone)) return;
  const bool extra = has_percentile_column(spec);
  o << "## At " << rate_text(spec.rate_per_s) << " requests/s\n\n";
  o << "| platform | replicas | batch | policy | load | throughput/s | p50 ms | p90 ms | p99 ms | p99.9 ms |"
    << (extra ? " " + pct + " ms |" : std::string()) << " replica util | host util |\n";
  o << "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|" << (extra ? "---:|" : "") << "---:|---:|\n";
  for (const StudyRow& r : res.rows) {
    if (!r.has_at_rate) continue;
    const SimResult& run = r.at_rate;
    o << "| " << tables.platforms[r.platform].name << " | " << r.replicas << " | " << r.batch << " | "
      << policy_label(spec, r.policy) << " | " << fmt("%.2f", r.capacity_per_s > 0 ? spec.rate_per_s / r.capacity_per_s : 0)
      << " | " << rate_text(run.throughput_per_s) << " | " << ms_text(run.latency_s.p50) << " | " << ms_text(run.latency_s.p90)
      << " | " << ms_text(run.latency_s.p99) << " | " << ms_text(run.latency_s.p999) << " | "
      << (extra ? ms_text(run.latency_at_target_s) + " | " : std::string()) << fmt("%.2f", run.replica_utilization) << " | "
      << fmt("%.2f", run.host_utilization) << " |\n";
  }
  o << "\nA load at or above 1 has no steady state: its latencies grow with the number of requests simulated.\n\n";
}

// The MLPerf scenario's run rules per row: queries, duration, early stopping.
void mlperf_markdown(std::ostream& o, const StudySpec& spec, const ServiceTables& tables, const StudyResult& res) {
  if (spec.scenario == Scenario::kNone) return;
  o << "## MLPerf " << scenario_name(spec.scenario) << "\n\n";
  o << "| platform | batch | policy | queries | rules' minimum | simulated s | meets 600 s / count | ";
  o << (spec.scenario == Scenario::kServer ? "over bound | needed by early stopping | passed |"
        : spec.scenario == Scenario::kSingleStream ? "estimate ms | discarded | passed |" : "samples/s |")
    << "\n|---|---:|---|---:|---:|---:|---|" << (spec.scenario == Scenario::kOffline ? "---:|" : "---:|---:|---|") << "\n";
  for (const StudyRow& r : res.rows) {
    const MlperfOutcome& m = r.mlperf;
    if (spec.scenario == Scenario::kServer && !r.feasible) {
      o << "| " << tables.platforms[r.platform].name << " | " << r.batch << " | " << policy_label(spec, r.policy)
        << " | no rate passes | " << rate_text(static_cast<double>(m.min_queries)) << " | | | | | no |\n";
      continue;
    }
    o << "| " << tables.platforms[r.platform].name << " | " << r.batch << " | " << policy_label(spec, r.policy) << " | "
      << rate_text(static_cast<double>(m.queries)) << " | " << rate_text(static_cast<double>(m.min_queries)) << " | "
      << fmt("%.1f", m.duration_s) << " | " << (m.meets_duration ? "yes" : m.capped ? "no (--max-requests)" : "no") << " | ";
    if (spec.scenario == Scenario::kServer) {
      o << m.overlatency << " | " << rate_text(static_cast<double>(m.queries_needed)) << " | " << (m.early_stopping_passed ? "yes" : "no") << " |\n";
    } else if (spec.scenario == Scenario::kSingleStream) {
      o << ms_text(m.estimate_s) << " | " << m.discarded << " | " << (m.early_stopping_passed ? "yes" : "no") << " |\n";
    } else {
      o << rate_text(r.scenario_run.samples_per_s) << " |\n";
    }
  }
  o << "\n";
}

// The simulated batch times the queue drew from, and the files written.
void service_times_markdown(std::ostream& o, const StudySpec& spec, const ServiceTables& tables) {
  o << "## Service times (one batch on an idle platform, SystemC model and baselines)\n\n";
  o << "| platform | batch | time ms | PCIe bytes | samples/s |\n|---|---:|---:|---:|---:|\n";
  for (const PlatformService& ps : tables.platforms) {
    for (size_t k = 0; k < ps.table.batches.size(); ++k) {
      o << "| " << ps.name << " | " << ps.table.batches[k] << " | " << fmt("%.4f", ps.table.service_s[k] * 1e3) << " | "
        << rate_text(ps.table.pcie_bytes[k]) << " | " << rate_text(static_cast<double>(ps.table.batches[k]) / ps.table.service_s[k]) << " |\n";
    }
  }
  o << "\nBatch sizes between the simulated ones are interpolated linearly. Files: serving.json (everything), "
       "serving.csv (the results table)"
    << (spec.curve_points > 0 ? ", curve.csv (latency-throughput curves; `analysis/plot_serving.py`)" : "") << ".\n";
}

}  // namespace

std::string serving_markdown(const ServeInputs& in, const StudySpec& spec, const ServiceTables& tables,
                             const StudyResult& res) {
  std::ostringstream o;
  const std::string pct = "p" + percentile_text(spec.quantile);
  inputs_markdown(o, in, spec, tables, pct);
  headline_markdown(o, in, spec, res, pct);
  host_markdown(o, in, spec, tables, res, pct);
  results_markdown(o, spec, tables, res, pct);
  at_rate_markdown(o, spec, tables, res, pct);
  mlperf_markdown(o, spec, tables, res);
  service_times_markdown(o, spec, tables);
  return o.str();
}

std::string serving_console(const ServeInputs& in, const StudySpec& spec, const ServiceTables& tables,
                            const StudyResult& res) {
  std::ostringstream o;
  const std::string pct = "p" + percentile_text(spec.quantile);
  const StudyRow* best = res.best >= 0 ? &res.rows[static_cast<size_t>(res.best)] : nullptr;
  o << tables.workload_name << " on " << in.arch_name << " x" << spec.replicas[0];
  if (res.calibration) o << " (host scale calibrated: " << fmt("%.4g", res.calibration->scale) << ")";
  o << ": ";
  if (!best) {
    o << "no batch size and policy meets the requirement\n";
    return o.str();
  }
  const SimResult* run = main_run(*best);
  o << "batch " << best->batch << ", " << policy_name(best->policy) << ": ";
  if (best->searched) {
    o << rate_text(best->max_rate_per_s) << " requests/s, " << pct << " " << ms_text(run->latency_at_target_s) << " ms (bound "
      << ms_text(spec.bound_s) << " ms)";
  } else if (spec.scenario == Scenario::kSingleStream) {
    o << pct << " early-stopping estimate " << ms_text(best->mlperf.estimate_s) << " ms";
  } else if (spec.scenario == Scenario::kOffline) {
    o << rate_text(best->scenario_run.samples_per_s) << " samples/s";
  } else {
    o << pct << " " << ms_text(run->latency_at_target_s) << " ms at " << rate_text(best->at_rate_per_s) << " requests/s";
  }
  o << "\n";
  return o.str();
}

}  // namespace tessera::serve
