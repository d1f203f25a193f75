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

// Registers `serve` on `app` and returns it.
CLI::App* add_serve_command(CLI::App& app, ServeOptions& o);

// Runs the parsed command; returns the exit code. Throws InputError on bad input (exit 2),
// naming the option, before anything is written to --out.
int run_serve_command(const ServeOptions& o);

}  // namespace tessera::serve
