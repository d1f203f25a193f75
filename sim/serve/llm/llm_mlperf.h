#pragma once
// MLPerf Inference's LLM benchmarks (mlcommons/inference_policies, inference_rules.adoc, the
// datacenter table's "Server latency constraint" column, at commit ac93e89 of 2026-07-23):
// Server runs pass when the 99th percentile of the time to first token (TTFT) and of the
// time per output token (TPOT) stay within the benchmark's limits, both under the rules'
// early stopping (sim/serve/mlperf.h); Offline sends every sample at once and reports
// tokens/s.
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::serve::llm {

struct MlperfLlmLimits {
  std::string benchmark;  // "llama2-70b"
  double ttft_s = 0;
  double tpot_s = 0;
  std::string source;     // where the limits come from
};

// The limits for a model name (a spec's file stem such as "llama-2-70b" or the benchmark's
// "llama2-70b"; case and '-', '_', '.' ignored). `interactive`: the Interactive category's
// tighter limits where the rules have one. Throws InputError naming the models that have
// limits when `model` has none.
MlperfLlmLimits mlperf_llm_limits(const std::string& model, bool interactive = false);

// The Server check of one run: TTFT and TPOT each pass early stopping at p = 0.99 with the
// requests over the limit as the over-latency count (a request of one token has no TPOT and
// counts as within it).
struct MlperfLlmCheck {
  bool passed = false;
  int64_t queries = 0;
  int64_t ttft_over = 0, tpot_over = 0;
  int64_t ttft_queries_needed = 0, tpot_queries_needed = 0;  // min_passing_queries(t) + t
  bool ttft_passed = false, tpot_passed = false;
};
MlperfLlmCheck mlperf_llm_server_check(const std::vector<double>& ttft_s, const std::vector<double>& tpot_s,
                                       const MlperfLlmLimits& limits);

}  // namespace tessera::serve::llm
