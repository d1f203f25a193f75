#pragma once
// Where a model's weights and KV cache live at a parallelism (issue 31 items 2 and 4):
// tensor parallelism splits each layer's heads, KV heads (replicated when the degree exceeds
// them) and FFN columns over `tp` chips; pipeline parallelism splits the layers over `pp`
// stages (the first stages take one more when they do not divide). The KV cache is paged:
// a page holds block_tokens tokens of every layer of the chip's stage, K and V, of its KV heads.
#include <cstdint>
#include <string>

#include "sim/serve/llm/layer_graphs.h"
#include "sim/serve/llm/model_spec.h"

namespace tessera::serve::llm {

// Tokens of one iteration whose activations are reserved on every chip, as vLLM profiles a
// forward pass at max_num_batched_tokens before sizing its cache. assumption: 8192 tokens
// (a scheduler budget above this needs more room than reserved).
inline constexpr int64_t kActivationReserveTokens = 8192;

struct Placement {
  int tp = 1, pp = 1;
  LayerShard shard;
  int64_t layers_per_stage = 0;        // the largest stage's layers
  int64_t weight_bytes_per_chip = 0;   // the fullest chip's (largest stage; embedding/LM head included)
  int64_t activation_bytes_per_chip = 0;
  int64_t memory_bytes_per_chip = 0;
  int64_t page_bytes_per_chip = 0;     // one KV page on the fullest stage's chip
  int64_t pages = 0;                   // KV pages every chip of the replica has room for
  int64_t block_tokens = 0;
  int64_t kv_bytes_per_token = 0;      // the replica's, all layers, K and V (replicas of a KV head counted)
  int64_t kv_capacity_tokens() const { return pages * block_tokens; }
};

struct PlacementRequest {
  int tp = 1, pp = 1;
  Dtype weights = Dtype::kBf16;
  Dtype kv = Dtype::kBf16;
  int64_t block_tokens = 16;
  int64_t memory_bytes_per_chip = 0;
  std::string chip;  // for messages: the config it came from
};

// Throws InputError (the CLI's exit 2): a degree that does not divide the heads, more stages
// than layers, or weights and activations that leave no room for a KV page: the message says
// how many chips (tp x pp) would hold the model.
Placement place_model(const LlmModelSpec& m, const PlacementRequest& r);

// The same without the room check (pages may be <= 0): for the search and for tests.
Placement place_unchecked(const LlmModelSpec& m, const PlacementRequest& r);

}  // namespace tessera::serve::llm
