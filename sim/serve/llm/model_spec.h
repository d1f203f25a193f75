#pragma once
// LLM architecture hyper-parameters as configs (workloads/llm/*.yaml, docs/serving.md "Model
// configs"): what the iteration cost table builds one decoder layer from, and what the
// capacity check counts. Bad input throws InputError located at the file, line and key.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "sim/common/dtype.h"

namespace tessera::serve::llm {

struct MoeSpec {
  int64_t experts = 1;
  int64_t top_k = 1;
  // The busiest expert's share of the routed token-slots over the even share 1/experts (1 =
  // even); shares fall off linearly from the busiest to the idlest, keeping their mean.
  double routing_skew = 1.0;
  // Token-slots expert e (0 = busiest) receives of `slots` (= tokens x top_k); sums to slots.
  int64_t expert_slots(int64_t e, int64_t slots) const;
};

struct LlmModelSpec {
  std::string name;          // file's `name` ("llama-3-8b")
  std::string display_name;  // "Llama-3-8B"
  std::string source;        // the file it came from
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  int64_t ffn = 0;           // FFN (each expert's) intermediate width
  int64_t vocab = 0;
  int64_t context = 0;       // context window in tokens
  std::string activation;    // "silu" | "gelu"
  bool gated = false;        // gate and up projections (SwiGLU)
  std::string norm;          // "rms" | "layer"
  bool parallel_attention = false;  // attention and FFN read one normed input (GPT-J)
  bool bias = false;
  bool tied_embeddings = false;
  std::optional<MoeSpec> moe;

  // Weight elements (not bytes): one decoder layer, the embedding table, the LM head.
  int64_t layer_weights() const;
  int64_t embedding_weights() const { return vocab * hidden; }
  int64_t lm_head_weights() const { return tied_embeddings ? 0 : vocab * hidden; }
  // + the final norm's scale (and shift for LayerNorm).
  int64_t total_weights() const {
    return layers * layer_weights() + embedding_weights() + lm_head_weights() + hidden * (norm == "layer" ? 2 : 1);
  }
};

LlmModelSpec load_llm_model(const std::filesystem::path& path);

// Weight/KV dtypes of `TargetRequest` by name: bf16, fp16, fp8 (= fp8_e4m3), fp8_e4m3,
// fp8_e5m2, int8, int4 (weights only). `what` names the option in the error.
Dtype parse_llm_dtype(const std::string& name, const std::string& what, bool weights);

}  // namespace tessera::serve::llm
