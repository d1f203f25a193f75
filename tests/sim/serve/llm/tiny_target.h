#pragma once
// Hand-written ServingTargets for the scheduler's tests: an iteration takes
// fixed + per prefill token x prefill tokens + per decode x decode sequences, so every
// timeline in the tests is derived by hand. Test doubles only: the shipped targets come
// from make_serving_target (sim/serve/llm/targets.h).
#include <string>
#include <vector>

#include "sim/serve/llm/serving_target.h"

namespace tessera_test {

class TinyTarget : public tessera::serve::llm::ServingTarget {
 public:
  double fixed_s = 0.010;
  double per_prefill_token_s = 0.001;
  double per_decode_s = 0.001;
  double power_w = 100;        // while running an iteration
  double idle_w = 50;
  double swap_per_token_s = 0.001;
  int64_t capacity_tokens = 1000;
  int64_t context_tokens = 100;
  int replica_chips = 1;
  mutable std::vector<tessera::serve::llm::IterationMix> mixes;  // every iteration asked for, in order

  std::string name() const override { return "tiny"; }
  tessera::serve::llm::IterationCost iteration(const tessera::serve::llm::IterationMix& mix) const override {
    mixes.push_back(mix);
    int64_t prefill = 0;
    for (const auto& c : mix.prefill) prefill += c.tokens;
    const double s = fixed_s + per_prefill_token_s * static_cast<double>(prefill) +
                     per_decode_s * static_cast<double>(mix.decode_sequences);
    return {s, power_w * s};
  }
  int64_t kv_capacity_tokens() const override { return capacity_tokens; }
  int64_t kv_bytes_per_token() const override { return 1024; }
  int64_t max_context_tokens() const override { return context_tokens; }
  double swap_s(int64_t tokens) const override { return swap_per_token_s * static_cast<double>(tokens); }
  int chips() const override { return replica_chips; }
  double idle_power_w() const override { return idle_w; }
};

}  // namespace tessera_test
