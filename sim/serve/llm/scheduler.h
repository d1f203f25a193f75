#pragma once
// Iteration-level scheduling of LLM requests, as vLLM and Orca do (docs/serving.md, "LLM
// serving"). Plain C++: the time of an iteration comes from a ServingTarget.
//
// Each iteration of a replica runs, first come first served:
//   1. one decode token of every running sequence whose prompt is in the KV cache (a
//      sequence whose next token needs a new KV block takes it; when none is free the most
//      recently admitted running sequence is preempted, by recompute or swap);
//   2. the next chunk of every running sequence whose prompt is still being prefilled;
//   3. admission of waiting requests (preempted ones first) while the KV cache holds the
//      pages of the whole prompt, the running count stays under max_running and the
//      iteration's token budget and sequence count last. Without chunked prefill a prompt
//      is prefilled whole or waits; with it, the budget's remainder is taken. An iteration
//      that preempted admits nothing (the cache is full; vLLM swaps nothing in then).
// The tokens of an iteration come out at its end: a decode's, and the first token of a
// sequence whose prefill completes. A sequence preempted by recompute prefills its prompt
// and the tokens it generated again and then emits its next token (vLLM's recompute); one
// preempted by swap moves its KV cache to the host (ServingTarget::swap_s, added to the
// iteration that preempts it) and back when readmitted (added to that one). A sequence
// preempted before its prompt is whole in the cache is always recomputed.
#include <cstdint>
#include <vector>

#include "sim/serve/llm/requests.h"
#include "sim/serve/llm/serving_target.h"
#include "sim/serve/model.h"

namespace tessera::serve::llm {

enum class Preemption { kRecompute, kSwap };
const char* preemption_name(Preemption p);

struct SchedulerConfig {
  int64_t max_batch_tokens = 2048;  // tokens one iteration processes: decodes (1 each) + prefill chunks
  int64_t max_batch = 256;          // sequences in one iteration (decodes + prefill chunks)
  int64_t max_running = 256;        // sequences holding KV cache at a time
  bool chunked_prefill = true;
  Preemption preemption = Preemption::kRecompute;
  int64_t block_tokens = 16;        // tokens per KV-cache page
};

struct LlmSimConfig {
  SchedulerConfig scheduler;
  int64_t replicas = 1;                      // data-parallel copies behind one dispatcher
  Dispatch dispatch = Dispatch::kRoundRobin;  // shortest-queue: the replica with the fewest unfinished requests
  double slo_ttft_s = 0;                     // goodput: a request meets the SLOs when its TTFT and TPOT
  double slo_tpot_s = 0;                     // are at most these (0: no bound)
  double quantile = 0.99;                    // LlmResult::ttft_at_quantile_s / tpot_at_quantile_s
  bool keep_timeline = false;                // LlmResult::timeline
  bool inter_token = true;                   // LlmResult::itl_s (holds every gap while it runs: 8 bytes a token)
  bool keep_token_times = false;             // RequestRecord::token_s
};

struct RequestRecord {
  double arrival_s = 0;
  double first_token_s = 0;
  double finish_s = 0;
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  int64_t replica = 0;
  int64_t preemptions = 0;
  double max_gap_s = 0;        // the longest time between two of its tokens
  std::vector<double> token_s; // when each token came out (keep_token_times)

  double ttft_s() const { return first_token_s - arrival_s; }
  // Mean time between its tokens after the first (MLPerf's and vLLM's TPOT); 0 for one token.
  double tpot_s() const { return output_tokens > 1 ? (finish_s - first_token_s) / static_cast<double>(output_tokens - 1) : 0; }
  double e2e_s() const { return finish_s - arrival_s; }
};

struct IterationRecord {
  int64_t replica = 0;
  double start_s = 0;
  double seconds = 0;            // ServingTarget::iteration + swap time
  int64_t prefill_tokens = 0;
  int64_t prefill_sequences = 0;
  int64_t decode_sequences = 0;
  int64_t running = 0;           // sequences holding KV cache after admission
  int64_t waiting = 0;           // arrived requests not admitted (preempted ones included)
  int64_t kv_used_tokens = 0;    // pages in use x block_tokens, at the iteration's end
  int64_t preempted = 0;
  double swap_s = 0;
  double energy_j = 0;
};

struct Distribution {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};

struct LlmResult {
  uint64_t requests = 0;
  uint64_t prompt_tokens = 0;
  uint64_t output_tokens = 0;
  double span_s = 0;                // last completion - first arrival
  double offered_rate_per_s = 0;    // requests / (last arrival - first arrival); 0 for one instant
  double requests_per_s = 0;        // requests / span
  double output_tokens_per_s = 0;
  double total_tokens_per_s = 0;    // prompt + output
  Distribution ttft_s, tpot_s, itl_s, e2e_s;  // tpot over requests with >= 2 tokens; itl over every gap (inter_token)
  double ttft_at_quantile_s = 0;    // at LlmSimConfig::quantile
  double tpot_at_quantile_s = 0;
  uint64_t slo_met = 0;             // requests within both SLOs
  double goodput_per_s = 0;         // slo_met / span
  uint64_t preemptions = 0;
  uint64_t iterations = 0;
  double mean_running = 0;          // time-weighted over the busy time
  double kv_occupancy_mean = 0;     // pages in use / pages, time-weighted over the span (idle: 0)
  double kv_occupancy_max = 0;
  int64_t kv_capacity_tokens = 0;   // per replica, whole pages
  double busy_s = 0;                // iteration time summed over replicas
  double energy_j = 0;              // iterations' energy + idle power over the rest of the span, all replicas
  double chip_s = 0;                // chips x replicas x span
  std::vector<RequestRecord> per_request;  // in arrival order
  std::vector<IterationRecord> timeline;   // keep_timeline: every iteration, by replica then time
};

// Refuses requests the target can never serve, naming the request (1-based) and the
// option that made it: a prompt + output longer than the context window or than the KV
// cache, and, without chunked prefill, a prompt (with recompute: a prompt plus its output)
// longer than the token budget. Throws InputError.
void check_requests_fit(const std::vector<LlmRequest>& requests, const ServingTarget& target, const LlmSimConfig& config,
                        const std::string& origin);

// Serves `requests` (arrival order) on config.replicas copies of `target`.
LlmResult simulate_llm(const std::vector<LlmRequest>& requests, const ServingTarget& target, const LlmSimConfig& config);

}  // namespace tessera::serve::llm
