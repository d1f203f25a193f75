#pragma once
// What `tessera serve-llm` computes from one request stream and one ServingTarget: the
// run at a rate (or a trace's own), the highest rate meeting the TTFT/TPOT SLOs at a
// percentile (the rate search of sim/serve/search.h), MLPerf's Offline and Server
// scenarios for LLMs (llm_mlperf.h), and a latency/throughput curve over the rate.
#include <cstdint>
#include <optional>
#include <vector>

#include "sim/serve/llm/llm_mlperf.h"
#include "sim/serve/llm/requests.h"
#include "sim/serve/llm/scheduler.h"

namespace tessera::serve::llm {

enum class LlmMode { kAtRate, kMaxRate, kMlperfServer, kMlperfOffline };
const char* llm_mode_name(LlmMode m);

struct LlmStudySpec {
  LlmMode mode = LlmMode::kAtRate;
  RequestSpec requests;          // kAtRate: at requests.arrivals.rate_per_s (a trace: 0 keeps its own)
  LlmSimConfig sim;              // its slo_*: the requirement of kMaxRate (with sim.quantile)
  MlperfLlmLimits mlperf;        // kMlperfServer
  double min_duration_s = 600;   // kMlperfServer: simulated time a run covers (rules: 600 s)
  uint64_t max_requests = 1000000;
  int curve_points = 0;          // runs at fractions of the capacity for curve.csv
};

struct LlmCurvePoint {
  double rate_per_s = 0;
  LlmResult result;              // without per_request and timeline
};

struct LlmStudyResult {
  LlmResult headline;            // with per_request and timeline: the run the files describe
  double rate_per_s = 0;         // of the headline run (0: all at once)
  double capacity_per_s = 0;     // requests/s with every request waiting from t = 0
  bool feasible = true;          // kMaxRate / kMlperfServer: some rate met the requirement
  int evaluations = 0;
  std::optional<MlperfLlmCheck> mlperf_check;
  std::vector<LlmCurvePoint> curve;
  uint64_t simulated_requests = 0;  // over every run
};

// Throws InputError (from check_requests_fit) before any run when a request cannot fit.
LlmStudyResult run_llm_study(const LlmStudySpec& spec, const ServingTarget& target);

// Every request the study's runs can draw (the spec's own count; an MLPerf Server search: up to
// max_requests) checked against the target's context and KV cache, before anything is simulated
// or written: a request that cannot fit is an InputError while the target's cost table is still
// unbuilt (ChipTarget builds it on first use).
void check_study_requests(const LlmStudySpec& spec, const ServingTarget& target);

}  // namespace tessera::serve::llm
