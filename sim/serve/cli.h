#pragma once
// The `tessera serve` subcommand (docs/serving.md): options -> service times from SystemC
// runs (service_runs.h) -> the serving study (study.h) -> serving.json, serving.csv,
// curve.csv, serving.md (serving_report.h).
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::serve {

struct ServeOptions {
  std::string arch, workload, out;
  std::string batches;            // --batch LIST
  std::string policies = "fixed";
  double timeout_ms = 1;
  double deadline_ms = 0;         // 0: the latency bound
  double percentile = 0;          // 0: 99 (90 for SingleStream)
  double bound_ms = 0;
  double rate = 0;
  std::string arrivals;           // "": poisson (or trace with --trace)
  double cv = 0;
  std::string trace;
  int64_t requests = 200000;
  int64_t seed = 1;
  std::string host = "none";
  double host_scale = 0;          // 0: not given
  double calibrate_rate = 0, calibrate_latency_ms = 0;
  int64_t calibrate_batch = 0;
  std::string replicas = "1";
  std::string dispatch = "round-robin";
  std::string baselines;
  std::string mlperf;
  double min_duration_s = 600;
  int64_t max_requests = 10'000'000;
  int curve = 10;
  int jobs = 0;
  std::string cache;
  std::string precision = "int8";
  std::vector<std::string> input_shapes;
  bool quiet = false;
};

// The finite range of every real-valued option (issue 34 item 1), checked when the command
// line is parsed. Chosen so that every time the queueing simulation derives stays finite:
// with 2^31 requests at the slowest rate, 1e6 x the longest host time (1e9 us) per request,
// the simulated clock stays below 1e25 s; the cv bounds keep the gamma shape 1/cv^2 in
// [1e-4, 1e4], where its sampler neither overflows nor divides 0 by 0.
struct ServeRanges {
  double min_ms = 1e-6, max_ms = 1e6;                     // --latency-bound-ms, --deadline-ms, --calibrate-latency-ms; --timeout-ms from 0
  double min_rate_per_s = 1e-3, max_rate_per_s = 1e12;    // --rate, --calibrate-rate
  double min_cv = 0.01, max_cv = 100;                     // --cv (hyperexp: from 1)
  double min_host_scale = 1e-6, max_host_scale = 1e6;     // --host-scale (a host file's scale: [0, 1e6])
  double min_duration_s = 1e-3, max_duration_s = 1e7;     // --min-duration-s
  // Memory one queued request takes in the simulation: arrival, latency and order (20 bytes),
  // its share of the batch records, the latencies a run keeps for MLPerf or the curve (8), and
  // the copy the percentiles select from: 48 bytes, rounded up from the vectors in queue_sim.cpp.
  double bytes_per_request = 48;
};
extern const ServeRanges kServeRanges;

// A CLI11 check of a real-valued option: a finite number in [lo, hi], else "must be in
// [lo, hi] UNIT, got 'TEXT'" (NaN, infinities and trailing text refused). Shared with serve-llm.
CLI::Validator number_in(double lo, double hi, const char* unit);

// Registers `serve` on `app` and returns it.
CLI::App* add_serve_command(CLI::App& app, ServeOptions& o);

// Runs the parsed command; returns the exit code. Throws InputError on bad input (exit 2),
// naming the option, before anything is written to --out.
int run_serve_command(const ServeOptions& o);

}  // namespace tessera::serve
