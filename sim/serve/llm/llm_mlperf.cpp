#include "sim/serve/llm/llm_mlperf.h"

#include <cctype>

#include "sim/common/error.h"
#include "sim/serve/mlperf.h"

namespace tessera::serve::llm {
namespace {

std::string canonical(const std::string& name) {
  std::string s;
  for (char ch : name) {
    if (ch == '-' || ch == '_' || ch == '.') continue;
    s += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  return s;
}

constexpr const char* kRules =
    "MLPerf Inference rules (mlcommons/inference_policies inference_rules.adoc, datacenter table, commit ac93e89, 2026-07-23)";

struct Row {
  const char* benchmark;
  const char* aliases[3];
  double ttft_ms, tpot_ms;                          // Server (the "Conversational category")
  double interactive_ttft_ms, interactive_tpot_ms;  // 0: none
};

// inference_rules.adoc, "Server latency constraint": Llama2-70b "Conversational category:
// TTFT/TPOT: 2000 ms/200 ms. Interactive category: TTFT/TPOT: 450 ms/40 ms"; Llama3.1-8B
// 2000/100 and 500/30; Mixtral-8x7B 2000/200; Llama3.1-405B Server 6000/175, Interactive 4500/80.
const Row kRows[] = {
    {"llama2-70b", {"llama270b", nullptr, nullptr}, 2000, 200, 450, 40},
    {"llama3.1-8b", {"llama318b", nullptr, nullptr}, 2000, 100, 500, 30},
    {"mixtral-8x7b", {"mixtral8x7b", nullptr, nullptr}, 2000, 200, 0, 0},
    {"llama3.1-405b", {"llama31405b", nullptr, nullptr}, 6000, 175, 4500, 80},
};

}  // namespace

MlperfLlmLimits mlperf_llm_limits(const std::string& model, bool interactive) {
  const std::string key = canonical(model);
  std::string known;
  for (const Row& row : kRows) {
    known += (known.empty() ? "" : ", ") + std::string(row.benchmark);
    bool match = false;
    for (const char* a : row.aliases) match = match || (a && key == a);
    if (!match) continue;
    MlperfLlmLimits out;
    out.benchmark = row.benchmark;
    out.source = kRules;
    if (interactive) {
      if (row.interactive_ttft_ms <= 0) throw InputError("--mlperf-interactive: MLPerf has no Interactive category for " + out.benchmark);
      out.benchmark += "-interactive";
      out.ttft_s = row.interactive_ttft_ms * 1e-3;
      out.tpot_s = row.interactive_tpot_ms * 1e-3;
    } else {
      out.ttft_s = row.ttft_ms * 1e-3;
      out.tpot_s = row.tpot_ms * 1e-3;
    }
    return out;
  }
  throw InputError("--mlperf: MLPerf Inference has no LLM benchmark for model '" + model + "' (it has " + known +
                   "); give the limits with --slo-ttft-ms and --slo-tpot-ms instead");
}

MlperfLlmCheck mlperf_llm_server_check(const std::vector<double>& ttft_s, const std::vector<double>& tpot_s,
                                       const MlperfLlmLimits& limits) {
  MlperfLlmCheck c;
  c.queries = static_cast<int64_t>(ttft_s.size());
  for (double t : ttft_s) c.ttft_over += t > limits.ttft_s ? 1 : 0;
  for (double t : tpot_s) c.tpot_over += t > limits.tpot_s ? 1 : 0;
  const auto ttft = mlperf::server_early_stopping(c.queries, c.ttft_over, mlperf::kServerPercentile);
  const auto tpot = mlperf::server_early_stopping(c.queries, c.tpot_over, mlperf::kServerPercentile);
  c.ttft_passed = ttft.passed;
  c.tpot_passed = tpot.passed;
  c.ttft_queries_needed = ttft.queries_needed;
  c.tpot_queries_needed = tpot.queries_needed;
  c.passed = ttft.passed && tpot.passed;
  return c;
}

}  // namespace tessera::serve::llm
