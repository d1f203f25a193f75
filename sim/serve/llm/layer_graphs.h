#pragma once
// One decoder layer of an LLM on one chip, as YAML graphs (docs/workloads.md) the cycle model
// simulates: the pieces an iteration's cost is the sum of (Vidur's split: token-level work
// scales with the tokens of the iteration, attention with each sequence's KV length).
//  - dense(T):           norms, QKV, rotary, output projection, residuals, FFN (or the MoE
//                        experts), for T tokens (prefill + decode) of the iteration;
//  - decode_attention(B, L): B sequences of one new token each over L KV tokens (mean);
//  - prefill_attention: one prompt chunk of t tokens over c earlier + t own KV tokens, in query blocks;
//  - lm_head(n):         final norm and the vocabulary projection for n rows.
// Every tensor is device-resident (the chip's `residency:`): activations come from the
// previous piece, the KV cache lives in device memory. Shapes are per chip at the tensor-
// parallel degree (heads, KV heads and FFN columns split; KV heads replicated when the
// degree exceeds them, as vLLM does for GQA).
#include <cstdint>
#include <string>

#include "sim/common/dtype.h"
#include "sim/serve/llm/model_spec.h"

namespace tessera::serve::llm {

struct LayerShard {
  int64_t tp = 1;
  int64_t heads = 0;     // query heads per chip
  int64_t kv_heads = 0;  // KV heads per chip (1 when replicated)
  int64_t ffn = 0;       // FFN columns per chip
  int64_t vocab = 0;     // LM-head columns per chip
  bool kv_replicated = false;
};
// Throws InputError when `tp` does not divide the heads, or neither divides nor is a multiple
// of the KV heads; `where` names the option.
LayerShard shard_layer(const LlmModelSpec& m, int64_t tp, const std::string& where);

struct LayerPrecision {
  Dtype weights = Dtype::kBf16;
  Dtype kv = Dtype::kBf16;
};

// The activation dtype the dense GEMMs multiply by the weights: the weights' own type for W8A8
// (int8, fp8) and fp16, bf16 for bf16 and weight-only int4.
Dtype matmul_input(const LayerPrecision& p);

std::string dense_graph_yaml(const LlmModelSpec& m, const LayerShard& s, const LayerPrecision& p, int64_t tokens);
std::string decode_attention_graph_yaml(const LlmModelSpec& m, const LayerShard& s, const LayerPrecision& p,
                                        int64_t sequences, int64_t kv_tokens);
// A prefill chunk as `blocks` query blocks of `block_rows` rows (GQA group heads x tokens,
// the last block padded as a flash-attention kernel pads it), each over `kv_tokens` (context +
// chunk) of its KV head: the graph's batch is blocks x KV heads; no block's scores outgrow the
// on-chip buffer, as none of a flash-attention kernel's do.
std::string prefill_attention_graph_yaml(const LlmModelSpec& m, const LayerShard& s, const LayerPrecision& p,
                                         int64_t blocks, int64_t block_rows, int64_t kv_tokens);
std::string lm_head_graph_yaml(const LlmModelSpec& m, const LayerShard& s, const LayerPrecision& p, int64_t rows);

}  // namespace tessera::serve::llm
