#pragma once
// The seam between the LLM serving scheduler (sim/serve/llm: requests, iteration-level
// scheduling, the paged KV cache, metrics) and what serves an iteration: N chips of a
// simulated accelerator (cost table from the SystemC model, tensor/pipeline parallelism over
// chip links) or a CPU/GPU baseline. The scheduler sees only this interface; each side is
// tested on its own, the scheduler with hand-written targets.
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::serve::llm {

// A piece of one prompt processed in an iteration: `tokens` new tokens that attend over
// `context_tokens` earlier tokens of the same prompt already in the KV cache (0 unless the
// prefill is chunked or resumed after a preemption by recompute).
struct PrefillChunk {
  int64_t tokens = 0;
  int64_t context_tokens = 0;
};

// One scheduler iteration on one replica (a group of chips running one copy of the model):
// the prefill chunks it admits plus one decode token for each running sequence.
struct IterationMix {
  std::vector<PrefillChunk> prefill;
  int64_t decode_sequences = 0;  // sequences generating one token each
  int64_t decode_kv_tokens = 0;  // KV-cache tokens those sequences attend over, summed
  // Each decode sequence's KV tokens (its cache and the new token), in the order of the batch;
  // empty: every sequence at the mean (decode_kv_tokens / decode_sequences).
  std::vector<int64_t> decode_kv_lengths;
};

struct IterationCost {
  double seconds = 0;   // wall time of the iteration on the replica
  double energy_j = 0;  // energy of the replica's chips over the iteration (0 where not modelled)
};

// What a replica offers the scheduler. Capacities are per replica (summed over its chips).
class ServingTarget {
 public:
  virtual ~ServingTarget() = default;
  virtual std::string name() const = 0;                // "tpu-v6e x4 (tp 4)", "h100-sxm x1"
  virtual IterationCost iteration(const IterationMix& mix) const = 0;
  virtual int64_t kv_capacity_tokens() const = 0;      // device memory left after weights and activations, in tokens
  virtual int64_t kv_bytes_per_token() const = 0;      // all layers, K and V, at the KV-cache dtype, per replica
  virtual int64_t max_context_tokens() const = 0;      // the model's context window
  virtual double swap_s(int64_t tokens) const = 0;     // moving `tokens` of KV cache one way over the host link
  virtual int chips() const = 0;                       // chips in the replica
  virtual double idle_power_w() const = 0;             // power of the replica's chips while idle (cost per token)
  // Whatever iteration() needs before its first call, done now (a simulated chip's cost
  // table: SystemC runs), so that the caller can check its inputs first and time it apart.
  virtual void prepare() const {}
};

}  // namespace tessera::serve::llm
