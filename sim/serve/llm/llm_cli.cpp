#include "sim/serve/llm/llm_cli.h"

#include <chrono>
#include <cmath>
#include <sstream>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <new>

#include "sim/common/atomic_file.h"
#include "sim/common/data_path.h"
#include "sim/common/error.h"
#include "sim/common/finite_check.h"
#include "sim/common/output_dir.h"
#include "sim/serve/cli.h"
#include "sim/serve/mlperf.h"
#include "sim/serve/llm/llm_report.h"
#include "sim/serve/llm/llm_study.h"
#include "sim/serve/llm/targets.h"

namespace fs = std::filesystem;

namespace tessera::serve::llm {

CLI::App* add_serve_llm_command(CLI::App& app, ServeLlmOptions& o) {
  auto* cmd = app.add_subcommand(
      "serve-llm", "Serve an LLM under a request stream with iteration-level batching and a paged KV cache: TTFT/TPOT "
                   "tails, tokens/s, goodput, the highest rate meeting SLOs, MLPerf Offline/Server (docs/serving.md)");
  cmd->add_option("--arch,-a", o.arch, "Chip config (configs/tpu-v6e.yaml) or GPU baseline (configs/baselines/h100-sxm.yaml)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--model,-m", o.model, "LLM spec, e.g. workloads/llm/llama-3-8b.yaml")->required()->check(CLI::ExistingFile);
  cmd->add_option("--out,-o", o.out, "Output directory for report.json, requests.csv, timeline.csv, curve.csv, summary.md")->required();
  cmd->add_option("--tp", o.tp, "Tensor-parallel chips per replica (default 1)")->check(CLI::Range(1, 4096));
  cmd->add_option("--pp", o.pp, "Pipeline stages per replica (default 1)")->check(CLI::Range(1, 4096));
  cmd->add_option("--weight-dtype", o.weight_dtype, "Weight dtype: bf16 (default), int8, fp8, int4");
  cmd->add_option("--kv-dtype", o.kv_dtype, "KV-cache dtype: bf16 (default), int8, fp8");
  cmd->add_option("--block-tokens", o.block_tokens, "Tokens per KV-cache page (default 16, vLLM's)")->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  cmd->add_option("--cache", o.cache, "Directory memoizing the iteration cost table (default: OUT/cost-cache); share it between runs")
      ->type_name("DIR");
  cmd->add_option("--rate", o.rate, "Requests/s over all replicas: the run's rate (a trace is time-scaled to it) ([1e-3, 1e9])")
      ->check(number_in(1e-3, 1e9, "requests/s"));
  cmd->add_option("--arrivals", o.arrivals, "poisson (default), constant, gamma or hyperexp (give --cv), trace (give --trace)")
      ->check(CLI::IsMember({"poisson", "constant", "gamma", "hyperexp", "trace"}));
  cmd->add_option("--cv", o.cv, "Coefficient of variation of the gaps (gamma: [0.01, 100]; hyperexp: [1, 100])")
      ->check(number_in(0.01, 100, ""));
  cmd->add_option("--trace", o.trace,
                  "CSV trace of arrival_s,prompt_tokens,output_tokens (e.g. workloads/llm/traces/conversation-1k.csv); "
                  "at its own rate unless --rate or a search sets one")
      ->check(CLI::ExistingFile);
  cmd->add_option("--prompt-tokens", o.prompt_tokens,
                  "Prompt lengths: fixed:N, uniform:LO:HI, lognormal:MEAN:SD[:MAX] or csv:FILE:COLUMN (default fixed:512)")
      ->type_name("DIST");
  cmd->add_option("--output-tokens", o.output_tokens, "Output lengths, as --prompt-tokens (default fixed:128)")->type_name("DIST");
  cmd->add_option("--requests", o.requests,
                  "Requests per run (default 1000; --mlperf offline: the rules' 24576; a trace: at most this many of its rows)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 26))
      ->each([&o](const std::string&) { o.requests_given = true; });
  cmd->add_option("--seed", o.seed, "Random seed; the same seed gives byte-identical files (default 1)")->check(CLI::Range(int64_t{0}, INT64_MAX));
  cmd->add_option("--max-batch-tokens", o.max_batch_tokens, "Token budget of one iteration: decodes + prefill chunks (default 2048)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  cmd->add_option("--max-batch", o.max_batch, "Most sequences in one iteration (default 256)")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--max-running", o.max_running, "Most sequences holding KV cache at once (default 256)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_flag("--no-chunked-prefill", o.no_chunked_prefill, "Prefill each prompt whole in one iteration (default: chunked to the budget)");
  cmd->add_option("--preemption", o.preemption, "When the KV cache is full: recompute (default) or swap (over the host link)")
      ->check(CLI::IsMember({"recompute", "swap"}));
  cmd->add_option("--replicas", o.replicas, "Data-parallel replicas behind one dispatcher (default 1)")->check(CLI::Range(int64_t{1}, int64_t{1} << 12));
  cmd->add_option("--dispatch", o.dispatch, "round-robin (default) or shortest-queue (fewest unfinished requests)")
      ->check(CLI::IsMember({"round-robin", "shortest-queue"}));
  cmd->add_option("--slo-ttft-ms", o.slo_ttft_ms, "Time-to-first-token SLO ([1e-3, 1e7] ms): goodput and, without --rate, the rate search")
      ->check(number_in(1e-3, 1e7, "ms"));
  cmd->add_option("--slo-tpot-ms", o.slo_tpot_ms, "Time-per-output-token SLO ([1e-3, 1e7] ms), as --slo-ttft-ms")
      ->check(number_in(1e-3, 1e7, "ms"));
  cmd->add_option("--percentile", o.percentile, "Percentile the SLOs apply to in the rate search (default 99)")->check(number_in(1, 99.999, ""));
  cmd->add_option("--mlperf", o.mlperf,
                  "MLPerf Inference scenario: server (highest Poisson rate whose TTFT and TPOT pass the rules' limits for "
                  "the model at p99 with early stopping) or offline (every request at t = 0)")
      ->check(CLI::IsMember({"server", "offline"}));
  cmd->add_flag("--mlperf-interactive", o.mlperf_interactive, "With --mlperf server: the Interactive category's tighter limits");
  cmd->add_option("--min-duration-s", o.min_duration_s, "MLPerf Server: simulated time a run covers (rules: 600; [1e-3, 1e7])")
      ->check(number_in(1e-3, 1e7, "s"));
  cmd->add_option("--max-requests", o.max_requests, "MLPerf Server: most requests one run may use (default 1000000)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 26));
  cmd->add_option("--curve", o.curve, "Runs at 1/N, 2/N, ..., 1 of the capacity for curve.csv (default 8; 0: none)")->check(CLI::Range(0, 1000));
  cmd->add_option("--usd-per-chip-hour", o.usd_per_chip_hour,
                  "Price of one chip for an hour, for $ per million tokens (no default: prices differ by chip, provider and "
                  "contract; without it only energy per token is reported) ([0, 1e6])")
      ->check(number_in(0, 1e6, "$"));
  cmd->add_option("--usd-per-kwh", o.usd_per_kwh, "Price of electricity for $ per million tokens (no default) ([0, 1e3])")
      ->check(number_in(0, 1e3, "$"));
  cmd->add_option("--baseline", o.baselines,
                  "Run the same requests, scheduler and question on other targets too, comma-separated: "
                  "ARCH[:TP[:USD_PER_CHIP_HOUR]], ARCH a config file or a name in configs/baselines (h100-sxm, h200, a100); "
                  "TP default --tp (e.g. h100-sxm:4:3.5). report.json 'compared', summary.md's table, curve.csv")
      ->type_name("LIST");
  cmd->add_flag("--quiet,-q", o.quiet, "Print nothing but errors");
  cmd->footer(
      "Each iteration of a replica runs one decode token of every running sequence plus prompt prefills up to the\n"
      "token budget (vLLM/Orca continuous batching); admission needs KV-cache pages for the whole prompt; a full\n"
      "cache preempts the latest admitted sequence. Iteration times come from the target's cost table (SystemC\n"
      "runs of the model on the chip, or the GPU baseline), never from a formula here.\n\n"
      "Examples:\n"
      "  # latency at 2 requests/s, lengths lognormal (mean 1020, sd 1000, at most 3000 tokens)\n"
      "  tessera serve-llm -a configs/tpu-v6e.yaml -m workloads/llm/llama-3-8b.yaml --rate 2 \\\n"
      "      --prompt-tokens lognormal:1020:1000:3000 --output-tokens lognormal:250:250:1000 --out out/llm\n"
      "  # the highest rate with TTFT p99 <= 2 s and TPOT p99 <= 100 ms on 4 chips (TP)\n"
      "  tessera serve-llm -a configs/tpu-v6e.yaml -m workloads/llm/llama-3-8b.yaml --tp 4 \\\n"
      "      --trace workloads/llm/traces/conversation-1k.csv --slo-ttft-ms 2000 --slo-tpot-ms 100 --out out/llm-tp4\n"
      "  # MLPerf Server with the rules' limits for the model (llama2-70b: TTFT 2 s, TPOT 200 ms)\n"
      "  tessera serve-llm -a configs/tpu-v5e.yaml -m workloads/llm/llama-2-70b.yaml --tp 8 --mlperf server \\\n"
      "      --prompt-tokens lognormal:1020:1000:3000 --output-tokens fixed:294 --out out/mlperf\n\n"
      "Writes DIR/report.json (headline: result.{ttft_ms,tpot_ms,inter_token_ms,e2e_ms}.{p50,p90,p99},\n"
      "output_tokens_per_s, goodput_per_s, rate_per_s), DIR/requests.csv (one row a request), DIR/timeline.csv (one\n"
      "row an iteration: batch, KV occupancy, preemptions), DIR/curve.csv and DIR/summary.md; plots:\n"
      "analysis/plot_llm_serving.py DIR. Same inputs and seed give byte-identical files. docs/serving.md.");
  return cmd;
}

namespace {

struct BaselineSpec {
  std::string arch;  // a path
  std::string as_given;
  int tp = 1;
  double usd_per_chip_hour = 0;
};

// --baseline: ARCH[:TP[:USD]] items; ARCH a file or a name in configs/baselines.
std::vector<BaselineSpec> parse_baselines(const std::string& text, int default_tp) {
  std::vector<BaselineSpec> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    BaselineSpec b;
    b.as_given = item;
    b.tp = default_tp;
    std::vector<std::string> parts;
    std::stringstream fields(item);
    for (std::string f; std::getline(fields, f, ':');) parts.push_back(f);
    if (parts.empty() || parts.size() > 3 || parts[0].empty()) {
      throw InputError("--baseline: '" + item + "': expected ARCH[:TP[:USD_PER_CHIP_HOUR]], e.g. h100-sxm:4:3.5");
    }
    std::error_code ec;
    if (fs::is_regular_file(parts[0], ec)) {
      b.arch = parts[0];
    } else {
      const fs::path named = data_path("configs/baselines") / (parts[0] + ".yaml");
      if (!fs::is_regular_file(named, ec)) {
        throw InputError("--baseline: '" + parts[0] + "' is neither a file nor a baseline in " + data_path("configs/baselines").string());
      }
      b.arch = named.string();
    }
    if (parts.size() > 1) {
      char* end = nullptr;
      const long tp = std::strtol(parts[1].c_str(), &end, 10);
      if (parts[1].empty() || *end != '\0' || tp < 1 || tp > 4096) {
        throw InputError("--baseline " + item + ": TP must be an integer in [1, 4096], got '" + parts[1] + "'");
      }
      b.tp = static_cast<int>(tp);
    }
    if (parts.size() > 2) {
      char* end = nullptr;
      b.usd_per_chip_hour = std::strtod(parts[2].c_str(), &end);
      if (parts[2].empty() || *end != '\0' || !std::isfinite(b.usd_per_chip_hour) || b.usd_per_chip_hour < 0 ||
          b.usd_per_chip_hour > 1e6) {
        throw InputError("--baseline " + item + ": USD_PER_CHIP_HOUR must be a number in [0, 1e6], got '" + parts[2] + "'");
      }
    }
    out.push_back(b);
  }
  return out;
}

std::string model_stem(const std::string& model) { return fs::path(model).stem().string(); }

}  // namespace

namespace {

// The scheduler, replicas, SLOs and search bounds the options set.
void set_scheduler(const ServeLlmOptions& o, LlmStudySpec& spec) {
  auto& sc = spec.sim.scheduler;
  sc.max_batch_tokens = o.max_batch_tokens;
  sc.max_batch = o.max_batch;
  sc.max_running = o.max_running;
  sc.chunked_prefill = !o.no_chunked_prefill;
  sc.preemption = o.preemption == "swap" ? Preemption::kSwap : Preemption::kRecompute;
  sc.block_tokens = o.block_tokens;
  spec.sim.replicas = o.replicas;
  spec.sim.dispatch = o.dispatch == "shortest-queue" ? Dispatch::kShortestQueue : Dispatch::kRoundRobin;
  spec.sim.slo_ttft_s = o.slo_ttft_ms * 1e-3;
  spec.sim.slo_tpot_s = o.slo_tpot_ms * 1e-3;
  spec.sim.quantile = o.percentile / 100;
  spec.min_duration_s = o.min_duration_s;
  spec.max_requests = static_cast<uint64_t>(o.max_requests);
  spec.curve_points = o.curve;
  if (sc.max_batch > sc.max_running) sc.max_batch = sc.max_running;  // an iteration holds only running sequences
}

// The request stream: arrivals (a process or a trace) and lengths (distributions or the trace's).
// Returns the arrival kind as named on the command line.
std::string set_requests(const ServeLlmOptions& o, LlmStudySpec& spec, LlmInputs& in) {
  RequestSpec& rq = spec.requests;
  rq.requests = static_cast<uint64_t>(o.requests);
  rq.seed = static_cast<uint64_t>(o.seed);
  const std::string arrivals = o.arrivals.empty() ? (o.trace.empty() ? "poisson" : "trace") : o.arrivals;
  in.arrivals = arrivals;
  if (arrivals == "trace" && o.trace.empty()) throw InputError("--arrivals trace: give the trace file with --trace");
  if (arrivals == "poisson") rq.arrivals.kind = ArrivalKind::kPoisson;
  if (arrivals == "constant") rq.arrivals.kind = ArrivalKind::kConstant;
  if (arrivals == "gamma") rq.arrivals.kind = ArrivalKind::kGamma;
  if (arrivals == "hyperexp") rq.arrivals.kind = ArrivalKind::kHyperExponential;
  if (arrivals == "trace") rq.arrivals.kind = ArrivalKind::kTrace;
  if (arrivals == "gamma" || arrivals == "hyperexp") {
    if (o.cv <= 0) throw InputError("--arrivals " + arrivals + ": give the coefficient of variation with --cv (e.g. 3)");
    if (arrivals == "hyperexp" && o.cv < 1) throw InputError("--cv: hyperexp arrivals need a coefficient of variation in [1, 100]");
    rq.arrivals.cv = o.cv;
    in.cv = o.cv;
  } else if (o.cv > 0) {
    throw InputError("--cv: only gamma and hyperexp arrivals take a coefficient of variation (--arrivals gamma --cv 3)");
  }
  if (!o.trace.empty()) {
    if (!o.prompt_tokens.empty() || !o.output_tokens.empty()) {
      throw InputError("--prompt-tokens/--output-tokens: the lengths come from --trace " + o.trace + "; give one or the other");
    }
    rq.trace = std::make_shared<LlmTrace>(load_llm_trace_csv(o.trace));
    in.trace = o.trace;
  } else {
    in.prompt_tokens = o.prompt_tokens.empty() ? "fixed:512" : o.prompt_tokens;
    in.output_tokens = o.output_tokens.empty() ? "fixed:128" : o.output_tokens;
    rq.prompt = parse_length_dist(in.prompt_tokens, "--prompt-tokens");
    rq.output = parse_length_dist(in.output_tokens, "--output-tokens");
  }
  rq.arrivals.rate_per_s = o.rate;
  return arrivals;
}

// What to compute: latencies at a rate, the highest rate meeting SLOs, or an MLPerf scenario.
void set_question(const ServeLlmOptions& o, const std::string& arrivals, LlmStudySpec& spec) {
  const bool slos = o.slo_ttft_ms > 0 || o.slo_tpot_ms > 0;
  if (o.mlperf_interactive && o.mlperf != "server") throw InputError("--mlperf-interactive: give --mlperf server");
  if (o.mlperf == "server") {
    spec.mode = LlmMode::kMlperfServer;
    if (o.rate > 0) throw InputError("--rate: --mlperf server searches the rate itself");
    if (arrivals != "poisson") throw InputError("--arrivals: MLPerf's Server scenario sends Poisson arrivals");
    if (slos) throw InputError("--slo-ttft-ms/--slo-tpot-ms: --mlperf server takes the rules' limits for the model");
    spec.mlperf = mlperf_llm_limits(model_stem(o.model), o.mlperf_interactive);
    spec.sim.slo_ttft_s = spec.mlperf.ttft_s;
    spec.sim.slo_tpot_s = spec.mlperf.tpot_s;
    spec.sim.quantile = 0.99;
  } else if (o.mlperf == "offline") {
    spec.mode = LlmMode::kMlperfOffline;
    if (o.rate > 0 || !o.arrivals.empty()) throw InputError("--rate/--arrivals: --mlperf offline sends every request at t = 0");
    if (!o.requests_given) spec.requests.requests = mlperf::kOfflineMinSamples;  // "At least 24,576" samples (mlperf.h)
  } else if (o.rate > 0 || (!o.trace.empty() && !slos)) {
    spec.mode = LlmMode::kAtRate;
    if (o.rate <= 0 && arrivals != "trace") {
      throw InputError("--arrivals " + arrivals + ": give the rate with --rate (only a trace's own arrivals need none)");
    }
  } else if (slos) {
    spec.mode = LlmMode::kMaxRate;
  } else {
    throw InputError("nothing to compute: give --rate (the latencies at a load), --slo-ttft-ms/--slo-tpot-ms (the highest "
                     "rate meeting them), --trace (a recorded stream at its own rate) or --mlperf server|offline");
  }
}

// The same study on each --baseline, its target named as the user wrote it.
std::vector<ComparedTarget> run_baselines(const std::vector<BaselineSpec>& baselines, const LlmInputs& in,
                                          const LlmStudySpec& spec) {
  std::vector<ComparedTarget> compared;
  for (const BaselineSpec& b : baselines) {
    TargetRequest breq = in.target;
    breq.arch = b.arch;
    breq.tp = b.tp;
    const std::unique_ptr<ServingTarget> bt = make_serving_target(breq);
    ComparedTarget c;
    c.in = in;
    c.in.target = breq;
    c.in.target.arch = b.as_given;
    c.in.target_name = bt->name();
    c.in.chips_per_replica = bt->chips();
    c.in.usd_per_chip_hour = b.usd_per_chip_hour;
    c.result = run_llm_study(spec, *bt);
    compared.push_back(std::move(c));
  }
  return compared;
}

// report.json, requests.csv, timeline.csv, curve.csv and summary.md: checked, then written all or none.
void write_llm_files(const fs::path& out, const LlmInputs& in, const LlmStudySpec& spec, const LlmStudyResult& result,
                     const std::vector<ComparedTarget>& compared) {
  const auto json = llm_report_json(in, spec, result, compared);
  require_finite("serve-llm: report.json", first_non_finite(json));
  std::vector<OutputFile> files;
  files.push_back({out / "report.json", json.dump(2) + "\n", false, "--out (report.json)"});
  files.push_back({out / "requests.csv", llm_requests_csv(result), false, "--out (requests.csv)"});
  files.push_back({out / "timeline.csv", llm_timeline_csv(result), false, "--out (timeline.csv)"});
  if (!result.curve.empty()) {
    files.push_back({out / "curve.csv", llm_curve_csv(in, spec, result, compared), false, "--out (curve.csv)"});
  }
  files.push_back({out / "summary.md", llm_summary_md(in, spec, result, compared), false, "--out (summary.md)"});
  for (const OutputFile& f : files) {
    if (f.path.extension() == ".csv") require_finite("serve-llm: " + f.path.filename().string(), first_non_finite_csv(f.contents));
  }
  prepare_output_directory(out, "--out");
  write_files_atomically(files);
}

}  // namespace

int run_serve_llm_command(const ServeLlmOptions& o) {
  const auto started = std::chrono::steady_clock::now();
  // ---- Everything the command line says, checked before anything runs or is written.
  LlmStudySpec spec;
  LlmInputs in;
  TargetRequest& treq = in.target;
  treq.arch = o.arch;
  treq.model = o.model;
  treq.tp = o.tp;
  treq.pp = o.pp;
  treq.weight_dtype = o.weight_dtype;
  treq.kv_dtype = o.kv_dtype;
  treq.block_tokens = o.block_tokens;
  in.seed = static_cast<uint64_t>(o.seed);
  in.usd_per_chip_hour = o.usd_per_chip_hour;
  in.usd_per_kwh = o.usd_per_kwh;
  set_scheduler(o, spec);
  const std::string arrivals = set_requests(o, spec, in);
  set_question(o, arrivals, spec);
  const std::vector<BaselineSpec> baselines = parse_baselines(o.baselines, o.tp);

  const fs::path out = o.out;
  {
    std::error_code ec;
    if (fs::exists(out, ec) && !fs::is_directory(out, ec)) throw InputError("--out: '" + o.out + "' exists and is not a directory");
  }
  // ---- The target (its cost table may take SystemC runs, memoized in --cache), and the
  // requests checked against it before the table is built or anything is written.
  treq.cache_dir = fs::absolute(o.cache.empty() ? out / "cost-cache" : fs::path(o.cache)).lexically_normal().string();
  const std::unique_ptr<ServingTarget> target = make_serving_target(treq);
  in.target_name = target->name();
  in.chips_per_replica = target->chips();
  check_study_requests(spec, *target);
  prepare_output_directory(out, "--out");
  if (!o.cache.empty()) prepare_output_directory(o.cache, "--cache");
  target->prepare();

  // ---- The study, then the files, all or none.
  const auto sim_started = std::chrono::steady_clock::now();
  const LlmStudyResult result = [&] {
    try {
      return run_llm_study(spec, *target);
    } catch (const std::bad_alloc&) {
      throw InputError("out of memory in the LLM serving simulation: --requests " + std::to_string(o.requests) +
                       " needs more memory than this process may use; use fewer requests");
    }
  }();
  const std::vector<ComparedTarget> compared = run_baselines(baselines, in, spec);
  const double sim_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - sim_started).count();
  uint64_t simulated = result.simulated_requests;
  for (const auto& c : compared) simulated += c.result.simulated_requests;
  write_llm_files(out, in, spec, result, compared);

  if (!o.quiet) {
    std::cout << llm_console(in, spec, result);
    for (const auto& c : compared) std::cout << llm_console(c.in, spec, c.result);
    std::cout << "wrote " << (out / "report.json").string() << ", requests.csv, timeline.csv, "
              << (result.curve.empty() ? "" : "curve.csv, ") << "summary.md\n";
    const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    char buf[200];
    std::snprintf(buf, sizeof buf, "serve-llm: %llu requests scheduled in %.2f s (%.3g requests/s); %.1f s in all\n",
                  static_cast<unsigned long long>(simulated), sim_s, sim_s > 0 ? static_cast<double>(simulated) / sim_s : 0.0,
                  total_s);
    std::cerr << buf;
  }
  return 0;
}

}  // namespace tessera::serve::llm
