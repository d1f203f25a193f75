#include "sim/serve/llm/llm_report.h"

#include <cstdio>
#include <sstream>

namespace tessera::serve::llm {
namespace {

using json = nlohmann::ordered_json;

// CSV cells and the summary's numbers: the same text for the same double everywhere.
std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}
std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}
double ms(double s) { return s * 1e3; }

json dist_ms(const Distribution& d) {
  return json{{"mean", ms(d.mean)}, {"p50", ms(d.p50)}, {"p90", ms(d.p90)}, {"p99", ms(d.p99)}, {"max", ms(d.max)}};
}

std::string percentile_text(double q) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "p%.10g", q * 100);
  return buf;
}

json result_json(const LlmResult& r, const LlmInputs& in, double quantile) {
  const TokenCost cost = token_cost(r, in);
  json j;
  j["requests"] = r.requests;
  j["prompt_tokens"] = r.prompt_tokens;
  j["output_tokens"] = r.output_tokens;
  j["span_s"] = r.span_s;
  j["offered_rate_per_s"] = r.offered_rate_per_s;
  j["requests_per_s"] = r.requests_per_s;
  j["output_tokens_per_s"] = r.output_tokens_per_s;
  j["total_tokens_per_s"] = r.total_tokens_per_s;
  j["ttft_ms"] = dist_ms(r.ttft_s);
  j["tpot_ms"] = dist_ms(r.tpot_s);
  j["inter_token_ms"] = dist_ms(r.itl_s);
  j["e2e_ms"] = dist_ms(r.e2e_s);
  j["slo_percentile"] = quantile * 100;
  j["ttft_at_percentile_ms"] = ms(r.ttft_at_quantile_s);
  j["tpot_at_percentile_ms"] = ms(r.tpot_at_quantile_s);
  j["slo_met"] = r.slo_met;
  j["slo_attainment"] = r.requests ? static_cast<double>(r.slo_met) / static_cast<double>(r.requests) : 0.0;
  j["goodput_per_s"] = r.goodput_per_s;
  j["iterations"] = r.iterations;
  j["preemptions"] = r.preemptions;
  j["mean_running"] = r.mean_running;
  j["kv_capacity_tokens"] = r.kv_capacity_tokens;
  j["kv_occupancy_mean"] = r.kv_occupancy_mean;
  j["kv_occupancy_max"] = r.kv_occupancy_max;
  j["energy_j"] = r.energy_j;
  j["chip_hours"] = r.chip_s / 3600;
  j["energy_kwh_per_million_output_tokens"] = cost.energy_kwh_per_million;
  if (cost.priced) j["usd_per_million_output_tokens"] = cost.usd_per_million;
  return j;
}

}  // namespace

TokenCost token_cost(const LlmResult& r, const LlmInputs& in) {
  TokenCost c;
  if (r.output_tokens == 0) return c;
  const double millions = static_cast<double>(r.output_tokens) / 1e6;
  const double kwh = r.energy_j / 3.6e6;
  c.energy_kwh_per_million = kwh / millions;
  c.priced = in.usd_per_chip_hour > 0 || in.usd_per_kwh > 0;
  c.usd_per_million = (r.chip_s / 3600 * in.usd_per_chip_hour + kwh * in.usd_per_kwh) / millions;
  return c;
}

json target_json(const LlmInputs& in, int64_t replicas) {
  json t;
  t["name"] = in.target_name;
  t["arch"] = in.target.arch;
  t["model"] = in.target.model;
  t["tp"] = in.target.tp;
  t["pp"] = in.target.pp;
  t["weight_dtype"] = in.target.weight_dtype;
  t["kv_dtype"] = in.target.kv_dtype;
  t["chips_per_replica"] = in.chips_per_replica;
  t["replicas"] = replicas;
  return t;
}

json llm_report_json(const LlmInputs& in, const LlmStudySpec& spec, const LlmStudyResult& res,
                     const std::vector<ComparedTarget>& compared) {
  json j;
  j["tool"] = "tessera serve-llm";
  j["mode"] = llm_mode_name(spec.mode);
  j["target"] = target_json(in, spec.sim.replicas);
  json s;
  const auto& sc = spec.sim.scheduler;
  s["max_batch_tokens"] = sc.max_batch_tokens;
  s["max_batch"] = sc.max_batch;
  s["max_running"] = sc.max_running;
  s["chunked_prefill"] = sc.chunked_prefill;
  s["preemption"] = preemption_name(sc.preemption);
  s["block_tokens"] = sc.block_tokens;
  s["dispatch"] = dispatch_name(spec.sim.dispatch);
  j["scheduler"] = s;
  json rq;
  if (!in.trace.empty()) rq["trace"] = in.trace;
  rq["arrivals"] = in.arrivals;
  if (in.cv > 0) rq["cv"] = in.cv;
  if (in.trace.empty()) {
    rq["prompt_tokens"] = in.prompt_tokens;
    rq["output_tokens"] = in.output_tokens;
  }
  rq["requests"] = res.headline.requests;
  rq["seed"] = in.seed;
  j["requests"] = rq;
  json slo;
  slo["ttft_ms"] = ms(spec.sim.slo_ttft_s);
  slo["tpot_ms"] = ms(spec.sim.slo_tpot_s);
  slo["percentile"] = spec.sim.quantile * 100;
  j["slo"] = slo;
  json pr;
  pr["usd_per_chip_hour"] = in.usd_per_chip_hour;
  pr["usd_per_kwh"] = in.usd_per_kwh;
  j["prices"] = pr;
  // The headline.
  j["feasible"] = res.feasible;
  j["rate_per_s"] = res.rate_per_s;
  j["capacity_per_s"] = res.capacity_per_s;
  j["evaluations"] = res.evaluations;
  if (spec.mode == LlmMode::kMlperfServer || spec.mode == LlmMode::kMlperfOffline) {
    json m;
    m["scenario"] = spec.mode == LlmMode::kMlperfServer ? "server" : "offline";
    if (spec.mode == LlmMode::kMlperfServer) {
      m["benchmark"] = spec.mlperf.benchmark;
      m["ttft_limit_ms"] = ms(spec.mlperf.ttft_s);
      m["tpot_limit_ms"] = ms(spec.mlperf.tpot_s);
      m["source"] = spec.mlperf.source;
      m["min_duration_s"] = spec.min_duration_s;
      if (res.mlperf_check) {
        const auto& c = *res.mlperf_check;
        m["passed"] = c.passed;
        m["queries"] = c.queries;
        m["ttft_over_limit"] = c.ttft_over;
        m["tpot_over_limit"] = c.tpot_over;
        m["ttft_queries_needed"] = c.ttft_queries_needed;
        m["tpot_queries_needed"] = c.tpot_queries_needed;
      }
    }
    m["tokens_per_s"] = res.headline.output_tokens_per_s;
    m["requests_per_s"] = res.headline.requests_per_s;
    j["mlperf"] = m;
  }
  j["result"] = result_json(res.headline, in, spec.sim.quantile);
  uint64_t simulated = res.simulated_requests;
  if (!compared.empty()) {
    json cs = json::array();
    for (const ComparedTarget& c : compared) {
      json cj;
      cj["target"] = target_json(c.in, spec.sim.replicas);
      cj["feasible"] = c.result.feasible;
      cj["rate_per_s"] = c.result.rate_per_s;
      cj["capacity_per_s"] = c.result.capacity_per_s;
      cj["result"] = result_json(c.result.headline, c.in, spec.sim.quantile);
      cs.push_back(cj);
      simulated += c.result.simulated_requests;
    }
    j["compared"] = cs;
  }
  j["simulated_requests"] = simulated;
  return j;
}

std::string llm_requests_csv(const LlmStudyResult& res) {
  std::ostringstream o;
  o << "request,replica,arrival_s,prompt_tokens,output_tokens,first_token_s,finish_s,ttft_ms,tpot_ms,e2e_ms,max_gap_ms,preemptions\n";
  const auto& rs = res.headline.per_request;
  for (size_t k = 0; k < rs.size(); ++k) {
    const RequestRecord& r = rs[k];
    o << k + 1 << ',' << r.replica << ',' << num(r.arrival_s) << ',' << r.prompt_tokens << ',' << r.output_tokens << ','
      << num(r.first_token_s) << ',' << num(r.finish_s) << ',' << num(ms(r.ttft_s())) << ',' << num(ms(r.tpot_s())) << ','
      << num(ms(r.e2e_s())) << ',' << num(ms(r.max_gap_s)) << ',' << r.preemptions << '\n';
  }
  return o.str();
}

std::string llm_timeline_csv(const LlmStudyResult& res) {
  std::ostringstream o;
  o << "replica,start_s,seconds,prefill_tokens,prefill_sequences,decode_sequences,running,waiting,kv_used_tokens,kv_occupancy,"
       "preempted,swap_s,energy_j\n";
  const double cap = static_cast<double>(res.headline.kv_capacity_tokens);
  for (const IterationRecord& r : res.headline.timeline) {
    o << r.replica << ',' << num(r.start_s) << ',' << num(r.seconds) << ',' << r.prefill_tokens << ',' << r.prefill_sequences << ','
      << r.decode_sequences << ',' << r.running << ',' << r.waiting << ',' << r.kv_used_tokens << ','
      << num(cap > 0 ? static_cast<double>(r.kv_used_tokens) / cap : 0) << ',' << r.preempted << ',' << num(r.swap_s) << ','
      << num(r.energy_j) << '\n';
  }
  return o.str();
}

namespace {

void curve_rows(std::ostringstream& o, const LlmInputs& in, const LlmStudySpec& spec, const LlmStudyResult& res) {
  for (const LlmCurvePoint& p : res.curve) {
    const LlmResult& r = p.result;
    const TokenCost c = token_cost(r, in);
    o << in.target_name << ',' << spec.sim.replicas << ',' << num(p.rate_per_s) << ',' << num(r.requests_per_s) << ','
      << num(r.output_tokens_per_s) << ',' << num(r.goodput_per_s) << ','
      << num(r.requests ? static_cast<double>(r.slo_met) / static_cast<double>(r.requests) : 0) << ',' << num(ms(r.ttft_s.p50))
      << ',' << num(ms(r.ttft_s.p90)) << ',' << num(ms(r.ttft_s.p99)) << ',' << num(ms(r.tpot_s.p50)) << ','
      << num(ms(r.tpot_s.p90)) << ',' << num(ms(r.tpot_s.p99)) << ',' << num(ms(r.e2e_s.p99)) << ','
      << num(ms(spec.sim.slo_ttft_s)) << ',' << num(ms(spec.sim.slo_tpot_s)) << ',' << num(c.energy_kwh_per_million) << ','
      << num(c.usd_per_million) << '\n';
  }
}

}  // namespace

std::string llm_curve_csv(const LlmInputs& in, const LlmStudySpec& spec, const LlmStudyResult& res,
                          const std::vector<ComparedTarget>& compared) {
  std::ostringstream o;
  o << "target,replicas,rate_per_s,requests_per_s,output_tokens_per_s,goodput_per_s,slo_attainment,ttft_p50_ms,ttft_p90_ms,"
       "ttft_p99_ms,tpot_p50_ms,tpot_p90_ms,tpot_p99_ms,e2e_p99_ms,slo_ttft_ms,slo_tpot_ms,energy_kwh_per_million,"
       "usd_per_million\n";
  curve_rows(o, in, spec, res);
  for (const ComparedTarget& c : compared) curve_rows(o, c.in, spec, c.result);
  return o.str();
}

std::string llm_summary_md(const LlmInputs& in, const LlmStudySpec& spec, const LlmStudyResult& res,
                           const std::vector<ComparedTarget>& compared) {
  const LlmResult& r = res.headline;
  const auto& sc = spec.sim.scheduler;
  const TokenCost cost = token_cost(r, in);
  std::ostringstream o;
  o << "# LLM serving: " << in.target.model << " on " << in.target_name << " x " << spec.sim.replicas << " replica(s)\n\n";
  o << "Scheduler: token budget " << sc.max_batch_tokens << ", at most " << sc.max_batch << " sequences an iteration and "
    << sc.max_running << " running, chunked prefill " << (sc.chunked_prefill ? "on" : "off") << ", preemption by "
    << preemption_name(sc.preemption) << ", KV pages of " << sc.block_tokens << " tokens (" << r.kv_capacity_tokens
    << " tokens per replica), dispatch " << dispatch_name(spec.sim.dispatch) << ".\n\n";
  o << "Requests: " << r.requests << " (seed " << in.seed << "), "
    << (in.trace.empty() ? "prompt " + in.prompt_tokens + ", output " + in.output_tokens : "trace " + in.trace) << ", arrivals "
    << in.arrivals << ".\n\n";
  o << "## Headline (" << llm_mode_name(spec.mode) << ")\n\n";
  switch (spec.mode) {
    case LlmMode::kAtRate: o << "At " << num(res.rate_per_s) << " requests/s.\n\n"; break;
    case LlmMode::kMaxRate:
      if (res.feasible) {
        o << "Highest rate meeting TTFT " << percentile_text(spec.sim.quantile) << " <= " << num(ms(spec.sim.slo_ttft_s))
          << " ms and TPOT " << percentile_text(spec.sim.quantile) << " <= " << num(ms(spec.sim.slo_tpot_s))
          << " ms: **" << num(res.rate_per_s) << " requests/s** (capacity " << num(res.capacity_per_s) << ", "
          << res.evaluations << " runs).\n\n";
      } else {
        o << "No rate down to 0.1% of the capacity (" << num(res.capacity_per_s) << " requests/s) meets the SLOs; the run below is at "
          << num(res.rate_per_s) << " requests/s.\n\n";
      }
      break;
    case LlmMode::kMlperfServer:
      o << "MLPerf Server, " << spec.mlperf.benchmark << " (TTFT <= " << num(ms(spec.mlperf.ttft_s)) << " ms, TPOT <= "
        << num(ms(spec.mlperf.tpot_s)) << " ms at p99 with early stopping; " << spec.mlperf.source << "): "
        << (res.feasible ? "**" + num(res.rate_per_s) + " queries/s**, " + num(r.output_tokens_per_s) + " tokens/s"
                         : std::string("no rate passes"))
        << ".\n\n";
      break;
    case LlmMode::kMlperfOffline:
      o << "MLPerf Offline: every request at t = 0: **" << num(r.output_tokens_per_s) << " tokens/s**, " << num(r.requests_per_s)
        << " samples/s.\n\n";
      break;
  }
  o << "| metric | mean | p50 | p90 | p99 | max |\n|---|---|---|---|---|---|\n";
  auto row = [&](const char* name, const Distribution& d) {
    o << "| " << name << " | " << fixed(ms(d.mean), 2) << " | " << fixed(ms(d.p50), 2) << " | " << fixed(ms(d.p90), 2) << " | "
      << fixed(ms(d.p99), 2) << " | " << fixed(ms(d.max), 2) << " |\n";
  };
  row("TTFT (ms)", r.ttft_s);
  row("TPOT (ms)", r.tpot_s);
  row("inter-token (ms)", r.itl_s);
  row("end-to-end (ms)", r.e2e_s);
  o << "\nThroughput " << num(r.output_tokens_per_s) << " output tokens/s (" << num(r.total_tokens_per_s) << " with prompts), "
    << num(r.requests_per_s) << " requests/s; goodput " << num(r.goodput_per_s) << " requests/s (" << r.slo_met << " of "
    << r.requests << " within the SLOs). KV cache " << fixed(100 * r.kv_occupancy_mean, 1) << "% full on average, "
    << fixed(100 * r.kv_occupancy_max, 1) << "% at most; " << r.preemptions << " preemption(s) in " << r.iterations
    << " iterations.\n\n";
  o << "Energy " << num(cost.energy_kwh_per_million) << " kWh per million output tokens";
  if (cost.priced) {
    o << "; $" << fixed(cost.usd_per_million, 4) << " per million output tokens at $" << num(in.usd_per_chip_hour)
      << "/chip-hour and $" << num(in.usd_per_kwh) << "/kWh";
  }
  o << ".\n\n";
  if (!compared.empty()) {
    o << "## The same requests on other targets\n\n"
      << "| target | chips | " << (spec.mode == LlmMode::kMaxRate || spec.mode == LlmMode::kMlperfServer ? "highest rate" : "rate")
      << " (requests/s) | output tokens/s | TTFT p99 (ms) | TPOT p99 (ms) | kWh / M tokens |"
      << (cost.priced ? " $ / M tokens |" : "") << "\n|---|---|---|---|---|---|---|" << (cost.priced ? "---|" : "") << "\n";
    auto line = [&](const LlmInputs& ci, const LlmStudyResult& cr) {
      const TokenCost cc = token_cost(cr.headline, ci);
      o << "| " << ci.target_name << " x " << spec.sim.replicas << " | " << ci.chips_per_replica * spec.sim.replicas << " | "
        << (cr.feasible ? num(cr.rate_per_s) : std::string("none")) << " | " << num(cr.headline.output_tokens_per_s) << " | "
        << fixed(ms(cr.headline.ttft_s.p99), 1) << " | " << fixed(ms(cr.headline.tpot_s.p99), 2) << " | "
        << num(cc.energy_kwh_per_million) << " |" << (cost.priced ? " " + fixed(cc.usd_per_million, 4) + " |" : "") << "\n";
    };
    line(in, res);
    for (const ComparedTarget& c : compared) line(c.in, c.result);
    o << "\n";
  }
  o << "Files: report.json, requests.csv, timeline.csv" << (res.curve.empty() ? "" : ", curve.csv")
    << (compared.empty() ? "" : " (requests.csv and timeline.csv: the first target)") << ". docs/serving.md, \"LLM serving\".\n";
  return o.str();
}

std::string llm_console(const LlmInputs& in, const LlmStudySpec& spec, const LlmStudyResult& res) {
  const LlmResult& r = res.headline;
  std::ostringstream o;
  o << in.target.model << " on " << in.target_name << " x " << spec.sim.replicas << " (" << llm_mode_name(spec.mode) << "): ";
  if (spec.mode == LlmMode::kMaxRate || spec.mode == LlmMode::kMlperfServer) {
    o << (res.feasible ? "highest rate " + num(res.rate_per_s) + " requests/s" : std::string("no rate meets the limits")) << "; ";
  }
  o << num(r.output_tokens_per_s) << " tokens/s, TTFT p99 " << fixed(ms(r.ttft_s.p99), 1) << " ms, TPOT p99 "
    << fixed(ms(r.tpot_s.p99), 2) << " ms, " << r.preemptions << " preemption(s)\n";
  return o.str();
}

}  // namespace tessera::serve::llm
