#include "sim/serve/llm/capacity.h"

#include <algorithm>
#include <sstream>

#include "sim/common/error.h"

namespace tessera::serve::llm {
namespace {

// Weight elements of one decoder layer on one chip at the shard.
int64_t layer_weights_per_chip(const LlmModelSpec& m, const LayerShard& s) {
  const int64_t d = m.head_dim;
  const int64_t attention = m.hidden * (s.heads + 2 * s.kv_heads) * d + s.heads * d * m.hidden;
  const int64_t one_ffn = (m.gated ? 3 : 2) * m.hidden * s.ffn;
  const int64_t ffn = m.moe ? m.moe->experts * one_ffn + m.hidden * m.moe->experts : one_ffn;
  const int64_t norms = (m.parallel_attention ? 1 : 2) * m.hidden * (m.norm == "layer" ? 2 : 1);
  return attention + ffn + norms;
}

std::string gb(int64_t bytes) {
  std::ostringstream o;
  o.precision(3);
  o << static_cast<double>(bytes) / 1e9 << " GB";
  return o.str();
}

}  // namespace

Placement place_unchecked(const LlmModelSpec& m, const PlacementRequest& r) {
  const std::string where = "--tp " + std::to_string(r.tp);
  if (r.pp < 1 || r.pp > m.layers) {
    throw InputError("--pp " + std::to_string(r.pp) + ": pipeline stages must be 1.." + std::to_string(m.layers) + " (" +
                     m.display_name + " has " + std::to_string(m.layers) + " layers, " + m.source + ": layers)");
  }
  if (r.block_tokens < 1) throw InputError("--block-tokens must be >= 1, got " + std::to_string(r.block_tokens));
  Placement p;
  p.tp = r.tp;
  p.pp = r.pp;
  p.shard = shard_layer(m, r.tp, where);
  p.block_tokens = r.block_tokens;
  p.memory_bytes_per_chip = r.memory_bytes_per_chip;
  const int64_t per_layer = layer_weights_per_chip(m, p.shard);
  const int64_t kv_per_token_layer = 2 * p.shard.kv_heads * m.head_dim;  // K and V, elements
  const int64_t ffn_rows = m.moe ? m.moe->top_k : 1;
  p.activation_bytes_per_chip =
      elements_bytes(Dtype::kBf16, kActivationReserveTokens *
                                       (2 * m.hidden + (p.shard.heads + 2 * p.shard.kv_heads) * m.head_dim +
                                        (m.gated ? 2 : 1) * p.shard.ffn * ffn_rows));
  int64_t fewest_pages = INT64_MAX;
  for (int stage = 0; stage < r.pp; ++stage) {
    const int64_t layers = m.layers / r.pp + (stage < m.layers % r.pp ? 1 : 0);
    int64_t weights = layers * per_layer;
    if (stage == 0) weights += p.shard.vocab * m.hidden;  // vocabulary-parallel embedding
    if (stage == r.pp - 1) weights += (m.tied_embeddings && r.pp == 1 ? 0 : p.shard.vocab * m.hidden) + m.hidden;
    const int64_t weight_bytes = elements_bytes(r.weights, weights);
    const int64_t page = elements_bytes(r.kv, r.block_tokens * layers * kv_per_token_layer);
    const int64_t free_bytes = r.memory_bytes_per_chip - weight_bytes - p.activation_bytes_per_chip;
    const int64_t pages = free_bytes < 0 ? -1 : free_bytes / page;
    if (stage == 0 || layers > p.layers_per_stage) p.layers_per_stage = layers;
    p.weight_bytes_per_chip = std::max(p.weight_bytes_per_chip, weight_bytes);
    if (pages < fewest_pages) {
      fewest_pages = pages;
      p.page_bytes_per_chip = page;
    }
  }
  p.pages = fewest_pages;
  p.kv_bytes_per_token = elements_bytes(r.kv, m.layers * kv_per_token_layer * r.tp);
  return p;
}

Placement place_model(const LlmModelSpec& m, const PlacementRequest& r) {
  const Placement p = place_unchecked(m, r);
  if (p.pages >= 1) return p;
  // The fewest chips that hold the model with room for a KV page.
  std::string fits = "no tp x pp up to 1024 chips";
  for (int n = 1; n <= 1024; ++n) {
    bool found = false;
    for (int tp = 1; tp <= n && !found; ++tp) {
      if (n % tp != 0 || m.heads % tp != 0 || !(m.kv_heads % tp == 0 || tp % m.kv_heads == 0)) continue;
      if (n / tp > m.layers) continue;
      PlacementRequest q = r;
      q.tp = tp;
      q.pp = n / tp;
      if (place_unchecked(m, q).pages >= 1) {
        fits = std::to_string(n) + " chips would (tp " + std::to_string(tp) + " x pp " + std::to_string(n / tp) + ")";
        found = true;
      }
    }
    if (found) break;
  }
  throw InputError(m.display_name + " (" + m.source + ") does not fit " + r.chip + " at tp " + std::to_string(r.tp) + " x pp " +
                   std::to_string(r.pp) + ": " + gb(p.weight_bytes_per_chip) + " of " + std::string(dtype_name(r.weights)) +
                   " weights and " + gb(p.activation_bytes_per_chip) + " of activations per chip leave no room for a KV page (" +
                   gb(p.page_bytes_per_chip) + ") in " + gb(p.memory_bytes_per_chip) + "; " + fits);
}

}  // namespace tessera::serve::llm
