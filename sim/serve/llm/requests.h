#pragma once
// The requests of an LLM serving run (docs/serving.md, "LLM serving"): an arrival time, a
// prompt length and an output length each. Arrivals come from the serving simulation's
// ArrivalProcess (Poisson, constant, gamma, hyper-exponential, a trace time-scaled to a
// rate); lengths from a distribution (fixed, uniform, lognormal with a mean and sd, the
// empirical distribution of a CSV column) or from a CSV trace of
// `arrival_s,prompt_tokens,output_tokens`. Every draw comes from its own stream of the seed
// (random.h), so the same seed gives the same requests.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "sim/serve/model.h"

namespace tessera::serve::llm {

struct LlmRequest {
  double arrival_s = 0;
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;  // >= 1: the first comes out of the prefill
};

inline constexpr int64_t kMaxRequestTokens = int64_t{1} << 24;  // 16 M tokens: beyond every model's context

// A length distribution in tokens. Samples are integers in [1, max_tokens].
struct LengthDist {
  enum class Kind { kFixed, kUniform, kLognormal, kEmpirical };
  Kind kind = Kind::kFixed;
  int64_t fixed = 0;                // fixed
  int64_t lo = 0, hi = 0;           // uniform: [lo, hi] inclusive
  double mean = 0, sd = 0;          // lognormal: of the tokens (not of their log)
  int64_t max_tokens = kMaxRequestTokens;  // lognormal: samples above are truncated to it (the spec's optional cap)
  std::shared_ptr<const std::vector<int64_t>> values;  // empirical: drawn uniformly
  std::string text;                 // as given, for the reports

  int64_t sample(Rng& rng) const;
  double mean_tokens() const;       // of the distribution as sampled (lognormal: before the cap)
};

// "fixed:N", "uniform:LO:HI", "lognormal:MEAN:SD[:MAX]" or "csv:FILE:COLUMN" (the empirical
// distribution of a column of a CSV file with a header). `flag` names the option in errors:
// "--prompt-tokens: lognormal: SD must be a number > 0, got 'x'". Throws InputError.
LengthDist parse_length_dist(const std::string& spec, const std::string& flag);

// A recorded stream: CSV rows `arrival_s,prompt_tokens,output_tokens` with an optional
// header line of those names; `#` starts a comment; blank lines are skipped. Errors name
// the file and line: "t.csv:7: output_tokens: must be in [1, 16777216], got 0".
struct LlmTrace {
  std::string source;
  std::vector<LlmRequest> requests;  // arrivals non-decreasing
};
LlmTrace load_llm_trace_csv(const std::filesystem::path& path);
LlmTrace parse_llm_trace_csv(const std::string& text, const std::string& origin);

// A column of a CSV file with a header (the empirical length distribution): positive
// integers, each error located to file:line.
std::vector<int64_t> load_token_column(const std::filesystem::path& path, const std::string& column, const std::string& flag);

struct RequestSpec {
  ArrivalSpec arrivals;              // kTrace: the trace's arrival times (scaled to arrivals.rate_per_s if > 0)
  LengthDist prompt, output;         // unused with a trace
  std::shared_ptr<const LlmTrace> trace;  // lengths (and, with ArrivalKind::kTrace, the arrivals) from here
  uint64_t requests = 1000;          // a trace has its own count (at most this many are used)
  uint64_t seed = 1;
};

// The requests in arrival order, the first at t = 0 (kAllAtOnce: all at t = 0).
std::vector<LlmRequest> generate_requests(const RequestSpec& spec);

}  // namespace tessera::serve::llm
