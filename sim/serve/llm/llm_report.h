#pragma once
// The files of `tessera serve-llm` (docs/serving.md, "LLM serving"): report.json (the
// headline and every figure), requests.csv (one row per request), timeline.csv (one row
// per iteration: batch, KV occupancy, preemptions), curve.csv (latency and throughput
// against the request rate) and summary.md. Same inputs and seed: byte-identical files.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/serve/llm/llm_study.h"
#include "sim/serve/llm/targets.h"

namespace tessera::serve::llm {

// What the run was given, as the user wrote it, for the files.
struct LlmInputs {
  TargetRequest target;            // arch (as given), model, tp, pp, dtypes, page size: what make_serving_target was asked
  std::string target_name;
  int chips_per_replica = 1;
  std::string trace;               // "" when the requests are generated
  std::string arrivals = "poisson";
  double cv = 0;
  std::string prompt_tokens, output_tokens;  // the distributions' text
  uint64_t seed = 1;
  double usd_per_chip_hour = 0;    // 0: not given (no cost in $)
  double usd_per_kwh = 0;
};

// Dollars and energy per million output tokens of a run.
struct TokenCost {
  double energy_kwh_per_million = 0;
  double usd_per_million = 0;      // chip-hours x --usd-per-chip-hour + kWh x --usd-per-kwh; 0 without prices
  bool priced = false;
};
TokenCost token_cost(const LlmResult& r, const LlmInputs& in);

// The same study on another target (a GPU baseline, another chip count): the same requests,
// scheduler and question; reported next to the main one ("v6e x8 vs H100 x8 at TTFT <= 500 ms").
struct ComparedTarget {
  LlmInputs in;
  LlmStudyResult result;
};

nlohmann::ordered_json llm_report_json(const LlmInputs& in, const LlmStudySpec& spec, const LlmStudyResult& result,
                                       const std::vector<ComparedTarget>& compared = {});
std::string llm_requests_csv(const LlmStudyResult& result);
std::string llm_timeline_csv(const LlmStudyResult& result);
// One block of rows per target: the main one, then the compared ones.
std::string llm_curve_csv(const LlmInputs& in, const LlmStudySpec& spec, const LlmStudyResult& result,
                          const std::vector<ComparedTarget>& compared = {});
std::string llm_summary_md(const LlmInputs& in, const LlmStudySpec& spec, const LlmStudyResult& result,
                           const std::vector<ComparedTarget>& compared = {});
// A few lines for the terminal.
std::string llm_console(const LlmInputs& in, const LlmStudySpec& spec, const LlmStudyResult& result);

}  // namespace tessera::serve::llm
