#pragma once
// `tessera serve-llm` (docs/serving.md, "LLM serving"): options -> requests
// (requests.h) -> a ServingTarget from make_serving_target (targets.h) -> the study
// (llm_study.h) -> report.json, requests.csv, timeline.csv, curve.csv, summary.md
// (llm_report.h), all or none.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace tessera::serve::llm {

struct ServeLlmOptions {
  std::string arch, model, out;
  int tp = 1, pp = 1;
  std::string weight_dtype = "bf16", kv_dtype = "bf16";
  int64_t block_tokens = 16;
  std::string cache;
  double rate = 0;
  std::string arrivals;           // "": poisson (trace with --trace)
  double cv = 0;
  std::string trace;
  std::string prompt_tokens, output_tokens;  // "": fixed:512 / fixed:128
  int64_t requests = 1000;        // --mlperf offline, not given: the rules' 24,576 samples
  bool requests_given = false;
  int64_t seed = 1;
  int64_t max_batch_tokens = 2048;
  int64_t max_batch = 256;
  int64_t max_running = 256;
  bool no_chunked_prefill = false;
  std::string preemption = "recompute";
  int64_t replicas = 1;
  std::string dispatch = "round-robin";
  double slo_ttft_ms = 0, slo_tpot_ms = 0;
  double percentile = 99;
  std::string mlperf;             // server | offline
  bool mlperf_interactive = false;
  double min_duration_s = 600;
  int64_t max_requests = 1000000;
  int curve = 8;
  double usd_per_chip_hour = 0, usd_per_kwh = 0;
  std::string baselines;          // ARCH[:TP[:USD_PER_CHIP_HOUR]],...: the same study on other targets
  bool quiet = false;
};

// Registers `serve-llm` on `app` and returns it.
CLI::App* add_serve_llm_command(CLI::App& app, ServeLlmOptions& o);

// Runs the parsed command; returns the exit code. Throws InputError on bad input (exit 2)
// before anything is written to --out.
int run_serve_llm_command(const ServeLlmOptions& o);

}  // namespace tessera::serve::llm
