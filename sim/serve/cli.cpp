#include "sim/serve/cli.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <sstream>
#include <thread>

#include "sim/common/atomic_file.h"
#include "sim/common/data_path.h"
#include "sim/common/error.h"
#include "sim/common/finite_check.h"
#include "sim/common/memory_limit.h"
#include "sim/common/output_dir.h"
#include "sim/common/text_file.h"
#include "sim/config/arch_config.h"
#include "sim/graph/onnx_importer.h"
#include "sim/serve/host_config.h"
#include "sim/serve/service_runs.h"
#include "sim/serve/serving_report.h"
#include "sim/serve/study.h"
#include "sim/serve/trace.h"
#include "sim/sweep/runner.h"

namespace fs = std::filesystem;

namespace tessera::serve {

// Every numeric option of serve has a finite range, checked here at the edge in the configs'
// message style: "--rate: must be in [0.001, 1e+12] requests/s, got '1e-305'". The bounds keep
// every time and rate the queueing simulation derives finite (issue 34 item 1; docs/serving.md
// lists them). CLI11's own range message prints DBL_MAX in full, hence this validator.
CLI::Validator number_in(double lo, double hi, const char* unit) {
  return CLI::Validator(
      [lo, hi, unit](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        const bool number = !text.empty() && end == text.c_str() + text.size() && !std::isspace(static_cast<unsigned char>(text[0]));
        if (number && std::isfinite(v) && v >= lo && v <= hi) return "";
        char range[96];
        std::snprintf(range, sizeof range, "[%g, %g]", lo, hi);
        return std::string(number ? "must be in " : "must be a number in ") + range + (*unit ? " " : "") + unit + ", got '" + text + "'";
      },
      "NUMBER");
}


// The ranges (docs/serving.md, "Ranges of the options").
const ServeRanges kServeRanges{};

namespace {
const ServeRanges& R = kServeRanges;
}  // namespace

CLI::App* add_serve_command(CLI::App& app, ServeOptions& o) {
  auto* cmd = app.add_subcommand(
      "serve", "Serve a workload under a request stream: tail latency, the maximum throughput under a latency bound, "
               "MLPerf scenarios (docs/serving.md)");
  cmd->add_option("--arch,-a", o.arch, "Architecture config (YAML), e.g. configs/tpu-v1.yaml")->required()->check(CLI::ExistingFile);
  cmd->add_option("--workload,-w", o.workload, "Workload: a YAML graph or an ONNX model, e.g. workloads/tpu/mlp0.yaml")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--out,-o", o.out, "Output directory for serving.json, serving.csv, curve.csv and serving.md")->required();
  cmd->add_option("--batch,-b", o.batches,
                  "Batch sizes to serve, comma-separated (default: the workload's own). Each is simulated once in "
                  "SystemC; with --policy timeout/deadline it is the largest batch")
      ->type_name("LIST");
  cmd->add_option("--policy", o.policies,
                  "Batching policies, comma-separated: fixed (wait for a full batch), timeout (close a partial batch when "
                  "its oldest request has waited --timeout-ms), deadline (close when waiting longer would break the "
                  "oldest request's --deadline-ms). Default fixed")
      ->type_name("LIST");
  cmd->add_option("--timeout-ms", o.timeout_ms, "The timeout policy's longest queue delay (default 1 ms; [0, 1e6])")
      ->check(number_in(0, R.max_ms, "ms"));
  cmd->add_option("--deadline-ms", o.deadline_ms,
                  "The deadline policy's response-time limit (default: --latency-bound-ms; [1e-6, 1e6])")
      ->check(number_in(R.min_ms, R.max_ms, "ms"));
  cmd->add_option("--percentile", o.percentile, "Latency percentile the bound applies to (default 99; SingleStream 90)")
      ->check(number_in(1, 99.999, ""));
  cmd->add_option("--latency-bound-ms", o.bound_ms,
                  "Find the maximum throughput whose --percentile latency stays at most this (TPU paper Table 4: 7; "
                  "[1e-6, 1e6])")
      ->check(number_in(R.min_ms, R.max_ms, "ms"));
  cmd->add_option("--rate", o.rate,
                  "Also (or instead) report the latency at this arrival rate, requests/s for the whole host ([1e-3, 1e12])")
      ->check(number_in(R.min_rate_per_s, R.max_rate_per_s, "requests/s"));
  cmd->add_option("--arrivals", o.arrivals,
                  "Arrival process: poisson (default), constant, gamma or hyperexp (bursty: give --cv), trace (give --trace)")
      ->check(CLI::IsMember({"poisson", "constant", "gamma", "hyperexp", "trace"}));
  cmd->add_option("--cv", o.cv, "Coefficient of variation of the gaps between arrivals (gamma: [0.01, 100]; hyperexp: [1, 100])")
      ->check(number_in(R.min_cv, R.max_cv, ""));
  cmd->add_option("--trace", o.trace,
                  "Request trace: CSV rows arrival_s[,size] (seconds from the start, samples per request); time-scaled "
                  "to --rate or the searched rate, at its own rate otherwise")
      ->check(CLI::ExistingFile);
  cmd->add_option("--requests", o.requests, "Requests per simulation (default 200000)")->check(CLI::Range(int64_t{1}, int64_t{1} << 31));
  cmd->add_option("--seed", o.seed, "Random seed; the same seed gives byte-identical files (default 1)")
      ->check(CLI::Range(int64_t{0}, INT64_MAX));
  cmd->add_option("--host", o.host,
                  "Host model: a file or a name in configs/hosts (haswell-tpu-server, ...), or none (default): host CPU "
                  "time per request and per batch, cores, PCIe root complex")
      ->type_name("FILE|NAME");
  cmd->add_option("--host-scale", o.host_scale, "Multiply every host CPU time by this ([1e-6, 1e6], as a host file's scale)")
      ->check(number_in(R.min_host_scale, R.max_host_scale, ""));
  cmd->add_option("--calibrate-rate", o.calibrate_rate,
                  "Calibrate the host: the rate (requests/s, whole host) of a published measurement of the accelerator "
                  "at --calibrate-batch ([1e-3, 1e12])")
      ->check(number_in(R.min_rate_per_s, R.max_rate_per_s, "requests/s"));
  cmd->add_option("--calibrate-latency-ms", o.calibrate_latency_ms,
                  "... and its --percentile latency: the host scale is set so the simulation gives it ([1e-6, 1e6])")
      ->check(number_in(R.min_ms, R.max_ms, "ms"));
  cmd->add_option("--calibrate-batch", o.calibrate_batch, "... and its fixed batch (default: the first --batch)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  cmd->add_option("--replicas", o.replicas,
                  "Accelerators (or baseline dies) behind one dispatcher, sharing the host's cores and root complex: N "
                  "for every platform, or PLATFORM=N,... (e.g. tpu-v1=4,haswell-e5-2699v3=2,k80=8). Default 1")
      ->type_name("SPEC");
  cmd->add_option("--dispatch", o.dispatch, "How batches go to replicas: round-robin (default) or shortest-queue")
      ->check(CLI::IsMember({"round-robin", "shortest-queue"}));
  cmd->add_option("--baseline", o.baselines,
                  "Serve CPU/GPU baselines too, from the same queue and host, with their modelled batch times: names of "
                  "configs/baselines/*.yaml (haswell-e5-2699v3, k80, ...), NAME:PRECISION, or spec files")
      ->type_name("LIST");
  cmd->add_option("--mlperf", o.mlperf,
                  "MLPerf Inference scenario: server (highest Poisson rate passing early stopping under "
                  "--latency-bound-ms), single-stream (one query at a time, p90 estimate), offline (all samples at once)")
      ->check(CLI::IsMember({"server", "single-stream", "offline"}));
  cmd->add_option("--min-duration-s", o.min_duration_s, "MLPerf: simulated time a run must cover (rules: 600; [1e-3, 1e7])")
      ->check(number_in(R.min_duration_s, R.max_duration_s, "s"));
  cmd->add_option("--max-requests", o.max_requests,
                  "MLPerf: the most requests one simulation may use; a run cut short is flagged (default 10000000)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 31));
  cmd->add_option("--curve", o.curve, "Points of the latency-throughput curve per result in curve.csv (default 10; 0: none)")
      ->check(CLI::Range(0, 1000));
  cmd->add_option("--jobs,-j", o.jobs, "SystemC simulations run at a time (default: all cores)")->check(CLI::Range(1, 4096));
  cmd->add_option("--cache", o.cache,
                  "Directory memoizing the simulated batch times (default: OUT/service-cache); share it between runs")
      ->type_name("DIR");
  cmd->add_option("--precision,-p", o.precision, "Precision policy, as for tessera run (default int8)");
  cmd->add_option("--input-shape", o.input_shapes, "ONNX input shape NAME=d0,d1,..., as for tessera run")->type_name("NAME=DIMS");
  cmd->add_flag("--quiet,-q", o.quiet, "Print nothing but errors");
  cmd->footer(
      "Each batch size is simulated once with `tessera run` in its own process (memoized in --cache); the\n"
      "queueing simulation is plain C++. Latency = arrival to the completion of the request's batch: host CPU\n"
      "per request (on the host's cores), the wait for the batch to close, host CPU per batch, the wait for a\n"
      "replica and the root complex, the batch's simulated time (PCIe transfers of the compiled program included).\n\n"
      "Examples:\n"
      "  tessera serve -a configs/tpu-v1.yaml -w workloads/tpu/mlp0.yaml -b 200 --latency-bound-ms 7 --out out/s\n"
      "  tessera serve -a configs/tpu-v1.yaml -w workloads/tpu/mlp0.yaml -b 200,250 --host haswell-tpu-server \\\n"
      "      --replicas 4 --calibrate-rate 900000 --calibrate-latency-ms 7 --latency-bound-ms 7 --out out/s\n"
      "  tessera serve -a configs/tpu-v1.yaml -w workloads/tpu/mlp0.yaml -b 16,64 --baseline haswell-e5-2699v3,k80 \\\n"
      "      --policy fixed,timeout,deadline --latency-bound-ms 7 --out out/s\n"
      "  tessera serve -a configs/tpu-v1.yaml -w build/workloads/onnx/resnet50.onnx -b 1,8 --mlperf server \\\n"
      "      --latency-bound-ms 15 --policy deadline --out out/r50\n\n"
      "Writes DIR/serving.json (headline: max_throughput_per_s, batch, latency_ms.{p50,p90,p95,p99,p99.9}; per\n"
      "platform, batch and policy results; the host parameters, which were calibrated), DIR/serving.csv,\n"
      "DIR/curve.csv and DIR/serving.md. Same inputs and seed give byte-identical files. docs/serving.md.");
  return cmd;
}

namespace {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    out.push_back(item);
  }
  return out;
}

int64_t parse_int(const std::string& flag, const std::string& text, int64_t lo, int64_t hi) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used, 10);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size()) throw InputError(flag + ": '" + text + "' is not an integer");
  if (v < lo || v > hi) {
    throw InputError(flag + ": " + text + " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return v;
}

std::vector<int64_t> parse_batches(const std::string& text) {
  std::vector<int64_t> out;
  for (const auto& item : split_list(text)) {
    const int64_t b = parse_int("--batch", item, 1, int64_t{1} << 24);
    if (std::find(out.begin(), out.end(), b) != out.end()) throw InputError("--batch: " + item + " is listed twice");
    out.push_back(b);
  }
  if (out.empty()) throw InputError("--batch: expected batch sizes, e.g. 16,64,200");
  return out;
}

std::vector<Policy> parse_policies(const std::string& text) {
  std::vector<Policy> out;
  for (const auto& item : split_list(text)) {
    Policy p;
    if (item == "fixed") {
      p = Policy::kFixed;
    } else if (item == "timeout") {
      p = Policy::kTimeout;
    } else if (item == "deadline") {
      p = Policy::kDeadline;
    } else {
      throw InputError("--policy: '" + item + "' is not a batching policy (fixed, timeout, deadline)");
    }
    if (std::find(out.begin(), out.end(), p) != out.end()) throw InputError("--policy: " + item + " is listed twice");
    out.push_back(p);
  }
  if (out.empty()) throw InputError("--policy: expected fixed, timeout or deadline");
  return out;
}

std::vector<std::string> yaml_stems(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".yaml") names.push_back(it->path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

bool looks_like_path(const std::string& s) {
  return s.find('/') != std::string::npos || (s.size() > 5 && (s.ends_with(".yaml") || s.ends_with(".yml")));
}

// --host: "none", a file, or a name in configs/hosts.
std::string resolve_host(const std::string& spec) {
  if (spec == "none") return "";
  std::error_code ec;
  if (fs::is_regular_file(spec, ec)) return spec;
  if (looks_like_path(spec) || fs::exists(spec, ec)) {
    // A path that exists but is no file (a directory, /dev/zero, a FIFO): say what it is.
    if (const std::string why = not_a_regular_file(spec); why != "it does not exist") {
      throw InputError("--host " + spec + ": cannot read the host model: " + why + " (a host model must be a regular YAML file)");
    }
  }
  const fs::path dir = data_path("configs/hosts");
  if (!looks_like_path(spec) && fs::is_regular_file(dir / (spec + ".yaml"), ec)) return (dir / (spec + ".yaml")).string();
  throw InputError("--host: no host model '" + spec + "'; give a file, none, or one of " + join(yaml_stems(dir)) + " (in " +
                   dir.string() + ")");
}

}  // namespace

namespace {

// The queueing simulation holds every request of a run: refuse a count this process cannot
// hold before anything runs, naming the option (issue 34 item 5).
void check_request_memory(const ServeOptions& o, const StudySpec& spec) {
  const bool mlperf = spec.scenario != Scenario::kNone;
  const int64_t n = mlperf ? std::max(o.requests, o.max_requests) : o.requests;
  const double need = static_cast<double>(n) * kServeRanges.bytes_per_request;
  const double limit = memory_limit_bytes();
  if (need > limit) {
    const std::string flag = mlperf && o.max_requests >= o.requests ? "--max-requests" : "--requests";
    throw InputError(flag + " " + std::to_string(n) + ": a simulation of " + std::to_string(n) + " requests needs about " +
                     gib_text(need) + " (" + std::to_string(static_cast<int>(kServeRanges.bytes_per_request)) +
                     " bytes a request), more than this process may use (" + gib_text(limit) + "); use fewer " + flag);
  }
}

bool uses_policy(const StudySpec& spec, Policy p) {
  return std::find(spec.policies.begin(), spec.policies.end(), p) != spec.policies.end();
}

// The question: the MLPerf scenario, the bound, the rate and the policies' limits; refuses
// options the scenario sets itself.
void set_question(const ServeOptions& o, StudySpec& spec) {
  if (o.mlperf == "server") spec.scenario = Scenario::kServer;
  if (o.mlperf == "single-stream") spec.scenario = Scenario::kSingleStream;
  if (o.mlperf == "offline") spec.scenario = Scenario::kOffline;

  spec.quantile = (o.percentile > 0 ? o.percentile : spec.scenario == Scenario::kSingleStream ? 90.0 : 99.0) / 100;
  spec.bound_s = o.bound_ms * 1e-3;
  spec.rate_per_s = o.rate;
  spec.policies = parse_policies(o.policies);
  spec.timeout_s = o.timeout_ms * 1e-3;
  spec.deadline_s = (o.deadline_ms > 0 ? o.deadline_ms : o.bound_ms) * 1e-3;
  spec.requests = static_cast<uint64_t>(o.requests);
  spec.seed = static_cast<uint64_t>(o.seed);
  spec.dispatch = o.dispatch == "shortest-queue" ? Dispatch::kShortestQueue : Dispatch::kRoundRobin;
  spec.curve_points = o.curve;
  spec.min_duration_s = o.min_duration_s;
  spec.max_requests = static_cast<uint64_t>(o.max_requests);

  if (uses_policy(spec, Policy::kDeadline) && spec.deadline_s <= 0) {
    throw InputError("--policy deadline: give the response-time limit with --deadline-ms (or --latency-bound-ms)");
  }
  switch (spec.scenario) {
    case Scenario::kNone:
      if (spec.bound_s <= 0 && spec.rate_per_s <= 0 && o.trace.empty()) {
        throw InputError("nothing to compute: give --latency-bound-ms (the maximum throughput under a latency bound), "
                         "--rate (the latency at a load), --trace (a recorded stream) or --mlperf SCENARIO");
      }
      break;
    case Scenario::kServer:
      if (spec.bound_s <= 0) throw InputError("--mlperf server: give the benchmark's latency bound with --latency-bound-ms (ResNet-50: 15)");
      if (spec.rate_per_s > 0) throw InputError("--rate: --mlperf server searches the rate itself");
      if (!o.trace.empty() || (!o.arrivals.empty() && o.arrivals != "poisson")) {
        throw InputError("--arrivals: MLPerf's Server scenario sends Poisson arrivals");
      }
      break;
    case Scenario::kSingleStream:
    case Scenario::kOffline:
      if (spec.bound_s > 0) throw InputError("--latency-bound-ms: --mlperf " + o.mlperf + " has no latency bound");
      if (spec.rate_per_s > 0) throw InputError("--rate: --mlperf " + o.mlperf + " sets its own arrivals");
      if (!o.trace.empty() || !o.arrivals.empty()) throw InputError("--arrivals: --mlperf " + o.mlperf + " sets its own arrivals");
      break;
  }
}

// The arrival process: --arrivals with its --cv, or a --trace file (read here).
void set_arrivals(const ServeOptions& o, StudySpec& spec, ServeInputs& in) {
  std::string arrivals = o.arrivals.empty() ? (o.trace.empty() ? "poisson" : "trace") : o.arrivals;
  if (arrivals == "trace" && o.trace.empty()) throw InputError("--arrivals trace: give the trace file with --trace");
  if (!o.trace.empty() && arrivals != "trace") throw InputError("--trace: the arrivals come from the trace; drop --arrivals " + arrivals);
  if (arrivals == "poisson") spec.arrivals.kind = ArrivalKind::kPoisson;
  if (arrivals == "constant") spec.arrivals.kind = ArrivalKind::kConstant;
  if (arrivals == "gamma") spec.arrivals.kind = ArrivalKind::kGamma;
  if (arrivals == "hyperexp") spec.arrivals.kind = ArrivalKind::kHyperExponential;
  if (arrivals == "gamma" || arrivals == "hyperexp") {
    if (o.cv <= 0) throw InputError("--arrivals " + arrivals + ": give the coefficient of variation with --cv (e.g. 3)");
    if (arrivals == "hyperexp" && o.cv < 1) {
      char got[32];
      std::snprintf(got, sizeof got, "%g", o.cv);
      throw InputError(std::string("--cv: hyperexp arrivals need a coefficient of variation in [1, 100], got ") + got);
    }
    spec.arrivals.cv = o.cv;
  } else if (o.cv > 0) {
    throw InputError("--cv: only gamma and hyperexp arrivals take a coefficient of variation (--arrivals gamma --cv 3)");
  }
  if (arrivals == "trace") {
    spec.arrivals.kind = ArrivalKind::kTrace;
    spec.arrivals.trace = std::make_shared<Trace>(load_trace_csv(o.trace));
    in.trace_file = o.trace;
    spec.at_trace_rate = spec.bound_s <= 0 && spec.rate_per_s <= 0;
  }
}

// The host model (--host), scaled by --host-scale or to be calibrated (--calibrate-*):
// returns whether it is calibrated.
bool set_host(const ServeOptions& o, StudySpec& spec, ServeInputs& in) {
  in.host_file = resolve_host(o.host);
  if (!in.host_file.empty()) {
    spec.host = load_host_model(in.host_file);
    in.host_file = o.host;  // as given, for the files
  }
  in.host_scale_source = "file";
  const bool calibrate = o.calibrate_rate > 0 || o.calibrate_latency_ms > 0 || o.calibrate_batch > 0;
  if (calibrate) {
    if (o.calibrate_rate <= 0) throw InputError("--calibrate-rate: calibration needs the published rate (requests/s, whole host)");
    if (o.calibrate_latency_ms <= 0) throw InputError("--calibrate-latency-ms: calibration needs the published latency");
    if (in.host_file.empty() || spec.host.adds_nothing()) {
      throw InputError("--calibrate-rate: calibration scales the host's CPU times; give a --host whose times are not all zero");
    }
    if (o.host_scale > 0) throw InputError("--host-scale: give it or calibrate (--calibrate-rate), not both");
    if (spec.host.request_cpu.is_zero() && spec.host.batch_cpu.is_zero()) {
      throw InputError("--calibrate-rate: the host model has no CPU times to scale");
    }
    in.host_scale_source = "calibrated";
  }
  if (o.host_scale > 0) {
    if (in.host_file.empty()) throw InputError("--host-scale: there is no host model to scale; give --host");
    spec.host = spec.host.scaled(o.host_scale);
    in.host_scale_flag = o.host_scale;
    in.host_scale_source = "--host-scale";
  }
  return calibrate;
}

// The served batch sizes (spec.batches) and the calibration's; returns every batch size the
// service table must hold: those, and 1, 2, 4, ... below the largest when batches can close
// partly full (interpolated in between).
std::set<int64_t> set_batches(const ServeOptions& o, StudySpec& spec, bool calibrate) {
  std::vector<int64_t> batches;
  if (!o.batches.empty()) {
    batches = parse_batches(o.batches);
  } else if (spec.scenario == Scenario::kSingleStream) {
    batches = {1};
  } else {
    const int64_t b = workload_default_batch(o.workload);
    if (b <= 0) throw InputError("--batch: give the batch size(s) of a non-YAML workload, e.g. --batch 1,8");
    batches = {b};
  }
  if (spec.scenario == Scenario::kSingleStream && batches != std::vector<int64_t>{1}) {
    throw InputError("--batch: MLPerf SingleStream sends one sample at a time (batch 1)");
  }
  spec.batches = batches;
  std::set<int64_t> table(batches.begin(), batches.end());
  if (calibrate) {
    const int64_t cb = o.calibrate_batch > 0 ? o.calibrate_batch : batches.front();
    table.insert(cb);
    spec.calibration = CalibrationSpec{cb, o.calibrate_rate, o.calibrate_latency_ms * 1e-3};
  }
  const bool partial = uses_policy(spec, Policy::kDeadline) || uses_policy(spec, Policy::kTimeout) ||
                       spec.arrivals.kind == ArrivalKind::kTrace;
  if (partial) {
    const int64_t top = *table.rbegin();
    for (int64_t b = 1; b < top; b *= 2) table.insert(b);
  }
  return table;
}

// --baseline: the modelled baselines, checked; in.baselines gets them as written, the result
// as the child runs take them (spec files made absolute). Points the children's
// TESSERA_BASELINES_DIR where the names were resolved.
std::vector<std::string> resolve_baselines(const ServeOptions& o, ServeInputs& in) {
  std::vector<std::string> baselines;
  if (o.baselines.empty()) return baselines;
  const fs::path dir = [] {
    const char* env = std::getenv("TESSERA_BASELINES_DIR");
    return env && *env ? fs::absolute(env) : data_path("configs/baselines");
  }();
  for (const auto& b : split_list(o.baselines)) {
    if (b.empty()) continue;
    if (b == "all" || b == "host") {
      throw InputError("--baseline: " + b + (b == "all" ? " is not taken by serve; name the baselines: " + join(yaml_stems(dir))
                                                        : " is measured on this machine, so its times differ from run to run; serve takes modelled baselines: " + join(yaml_stems(dir))));
    }
    std::string entry = b;
    const std::string spec_part = b.substr(0, b.find(':'));
    if (looks_like_path(spec_part)) {
      if (const std::string why = not_a_regular_file(spec_part); !why.empty()) {
        throw InputError("--baseline " + spec_part + ": cannot read the baseline spec file: " + why +
                         " (a spec file must be a regular YAML file)");
      }
      entry = fs::absolute(spec_part).string() + b.substr(spec_part.size());
    } else if (!fs::is_regular_file(dir / (spec_part + ".yaml"))) {
      throw InputError("--baseline: unknown baseline '" + spec_part + "'; available (in " + dir.string() + "): " + join(yaml_stems(dir)));
    }
    if (std::find(baselines.begin(), baselines.end(), entry) != baselines.end()) {
      throw InputError("--baseline: " + b + " is listed twice");
    }
    baselines.push_back(entry);
    in.baselines.push_back(b);
  }
  ::setenv("TESSERA_BASELINES_DIR", dir.c_str(), 1);  // the children resolve names where we did
  return baselines;
}

// --replicas: N, or PLATFORM=N,... over the accelerator's name and the baselines as written.
std::vector<int64_t> parse_replicas(const std::string& text, const std::vector<std::string>& platform_keys) {
  std::vector<int64_t> replicas(platform_keys.size(), 1);
  std::set<std::string> seen;
  for (const auto& item : split_list(text)) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      const int64_t n = parse_int("--replicas", item, 1, 1 << 16);
      std::fill(replicas.begin(), replicas.end(), n);
      continue;
    }
    const std::string name = item.substr(0, eq);
    auto it = std::find(platform_keys.begin(), platform_keys.end(), name);
    if (it == platform_keys.end()) {
      throw InputError("--replicas: '" + name + "' is not a platform of this run (" + join(platform_keys) + ")");
    }
    if (!seen.insert(name).second) throw InputError("--replicas: " + name + " is given twice");
    replicas[static_cast<size_t>(it - platform_keys.begin())] = parse_int("--replicas " + name, item.substr(eq + 1), 1, 1 << 16);
  }
  return replicas;
}

// Everything the command line says, checked before anything runs or is written.
struct ServePlan {
  StudySpec spec;
  ServeInputs in;
  std::set<int64_t> service_batches;     // the batch sizes simulated in SystemC
  std::vector<std::string> baselines;    // as the child runs take them
};

ServePlan plan_serve(const ServeOptions& o) {
  ServePlan plan;
  StudySpec& spec = plan.spec;
  ServeInputs& in = plan.in;
  in.arch_file = o.arch;
  in.workload_file = o.workload;
  in.precision = o.precision;
  in.input_shapes = o.input_shapes;
  const ArchConfig arch = load_arch_config(o.arch);
  in.arch_name = arch.name;

  set_question(o, spec);
  set_arrivals(o, spec, in);
  const bool calibrate = set_host(o, spec, in);
  plan.service_batches = set_batches(o, spec, calibrate);
  // Platforms: the accelerator, then the baselines as given.
  plan.baselines = resolve_baselines(o, in);
  std::vector<std::string> platform_keys = {arch.name};
  for (const auto& b : in.baselines) platform_keys.push_back(b);
  spec.replicas = parse_replicas(o.replicas, platform_keys);

  // Input shapes: ONNX only, well-formed.
  const bool onnx = graph::is_onnx_path(o.workload);
  for (const auto& s : o.input_shapes) {
    if (!onnx) throw InputError("--input-shape: input shapes bind the inputs of ONNX models (*.onnx); '" + o.workload + "' is a YAML graph");
    graph::parse_input_shape(s);
  }
  std::error_code ec;
  if (fs::exists(o.out, ec) && !fs::is_directory(o.out, ec)) throw InputError("--out: '" + o.out + "' exists and is not a directory");
  check_request_memory(o, spec);
  return plan;
}

// The SystemC runs of the service table: one per platform and batch size, memoized in the cache.
ServiceRequest service_request(const ServeOptions& o, const ServePlan& plan, const fs::path& out) {
  ServiceRequest req;
  req.arch = fs::absolute(o.arch);
  req.workload = fs::absolute(o.workload);
  req.precision = (looks_like_path(o.precision) && fs::is_regular_file(o.precision)) ? fs::absolute(o.precision).string() : o.precision;
  req.input_shapes = o.input_shapes;
  req.baselines = plan.baselines;
  req.batches.assign(plan.service_batches.begin(), plan.service_batches.end());
  req.cache_dir = fs::absolute(o.cache.empty() ? out / "service-cache" : fs::path(o.cache)).lexically_normal();
  req.runner_exe = sweep::self_exe();
  req.jobs = o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  req.quiet = o.quiet;
  return req;
}

// The queueing study; running out of memory is the options' fault, named as such.
StudyResult run_queue_study(const ServeOptions& o, const StudySpec& spec, const ServiceTables& tables) {
  try {
    return run_study(spec, tables);
  } catch (const std::bad_alloc&) {
    throw InputError("out of memory in the queueing simulation: --requests " + std::to_string(o.requests) +
                     (spec.scenario != Scenario::kNone ? " (--max-requests " + std::to_string(o.max_requests) + ")" : "") +
                     (o.trace.empty() ? "" : " with --trace " + o.trace) +
                     " needs more memory than this process may use; use fewer requests");
  }
}

// serving.json, serving.csv, curve.csv (unless --curve 0 or MLPerf) and serving.md, rendered
// and checked. The simulation checks its own figures: a NaN or an infinity is a bug, never a result.
std::vector<OutputFile> serving_files(const fs::path& out, const ServePlan& plan, const ServiceTables& tables,
                                      const StudyResult& result) {
  const ServeInputs& in = plan.in;
  const StudySpec& spec = plan.spec;
  const auto json = serving_json(in, spec, tables, result);
  require_finite("serve: serving.json", first_non_finite(json));
  std::vector<OutputFile> files;
  files.push_back({out / "serving.json", json.dump(2) + "\n", false, "--out (serving.json)"});
  files.push_back({out / "serving.csv", serving_csv(spec, tables, result), false, "--out (serving.csv)"});
  if (spec.curve_points > 0 && spec.scenario == Scenario::kNone) {
    files.push_back({out / "curve.csv", curve_csv(tables, result), false, "--out (curve.csv)"});
  }
  files.push_back({out / "serving.md", serving_markdown(in, spec, tables, result), false, "--out (serving.md)"});
  for (const OutputFile& f : files) {
    if (f.path.extension() == ".csv") require_finite("serve: " + f.path.filename().string(), first_non_finite_csv(f.contents));
  }
  return files;
}

}  // namespace

int run_serve_command(const ServeOptions& o) {
  const auto started = std::chrono::steady_clock::now();
  const ServePlan plan = plan_serve(o);
  const fs::path out = o.out;
  // The one output-directory routine of run, serve, sweep and --trace (issue 34 item 4):
  // made (or refused, exit 2) before any simulation; the cache goes inside it by default.
  prepare_output_directory(out, "--out");
  if (!o.cache.empty()) prepare_output_directory(o.cache, "--cache");

  // ---- Service times: one SystemC run per batch size, memoized.
  const ServiceTables tables = service_tables(service_request(o, plan, out));

  // ---- The queueing study, then the files, all or none.
  const auto queue_started = std::chrono::steady_clock::now();
  const StudyResult result = run_queue_study(o, plan.spec, tables);
  const double queue_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - queue_started).count();
  const std::vector<OutputFile> files = serving_files(out, plan, tables, result);
  prepare_output_directory(out, "--out");
  write_files_atomically(files);

  if (!o.quiet) {
    std::cout << serving_console(plan.in, plan.spec, tables, result);
    std::cout << "wrote " << (out / "serving.json").string() << ", serving.csv, " << (files.size() == 4 ? "curve.csv, " : "")
              << "serving.md\n";
    const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "serve: %zu batch size(s) simulated, %zu from the cache; %llu requests queued in %.2f s (%.3g requests/s); %.1f s in all\n",
                  tables.simulated, tables.cached, static_cast<unsigned long long>(result.simulated_requests), queue_s,
                  queue_s > 0 ? static_cast<double>(result.simulated_requests) / queue_s : 0.0, total_s);
    std::cerr << buf;
  }
  return 0;
}

}  // namespace tessera::serve
