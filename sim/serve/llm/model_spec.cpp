#include "sim/serve/llm/model_spec.h"

#include <algorithm>
#include <cmath>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"

namespace tessera::serve::llm {

int64_t MoeSpec::expert_slots(int64_t e, int64_t slots) const {
  // Linear fall-off from skew/E (e = 0) to (2 - skew)/E (e = E-1): the mean share stays 1/E.
  // Integer slots: the exact shares' floors, the remainder to the busiest experts first.
  auto share = [&](int64_t i) {
    if (experts == 1) return 1.0;
    const double t = static_cast<double>(i) / static_cast<double>(experts - 1);
    return (routing_skew + (2.0 - 2.0 * routing_skew) * t) / static_cast<double>(experts);
  };
  int64_t floors = 0;
  for (int64_t i = 0; i < experts; ++i) floors += static_cast<int64_t>(std::floor(share(i) * static_cast<double>(slots)));
  const int64_t rest = slots - floors;
  return static_cast<int64_t>(std::floor(share(e) * static_cast<double>(slots))) + (e < rest ? 1 : 0);
}

int64_t LlmModelSpec::layer_weights() const {
  const int64_t q = hidden * heads * head_dim;
  const int64_t kv = 2 * hidden * kv_heads * head_dim;
  const int64_t o = heads * head_dim * hidden;
  const int64_t one_ffn = (gated ? 3 : 2) * hidden * ffn;
  const int64_t ffn_all = moe ? moe->experts * one_ffn + hidden * moe->experts : one_ffn;
  const int64_t norms = (parallel_attention ? 1 : 2) * hidden * (norm == "layer" ? 2 : 1);
  const int64_t biases = bias ? (heads + 2 * kv_heads) * head_dim + hidden + ffn + hidden : 0;
  return q + kv + o + ffn_all + norms + biases;
}

LlmModelSpec load_llm_model(const std::filesystem::path& path) {
  const YamlNode root = YamlNode::load_file(path);
  root.expect_keys({"name", "display_name", "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab",
                    "context", "activation", "gated", "norm", "parallel_attention", "bias", "tied_embeddings",
                    "moe"});
  LlmModelSpec m;
  m.source = path.string();
  m.name = root.at("name").as_string();
  m.display_name = root.string_or("display_name", m.name);
  constexpr int64_t kMaxDim = int64_t{1} << 20;  // far above any published model; keeps products in int64
  m.layers = root.at("layers").as_int(1, 4096);
  m.hidden = root.at("hidden").as_int(1, kMaxDim);
  m.heads = root.at("heads").as_int(1, 4096);
  m.kv_heads = root.at("kv_heads").as_int(1, 4096);
  m.head_dim = root.at("head_dim").as_int(1, 4096);
  m.ffn = root.at("ffn").as_int(1, kMaxDim);
  m.vocab = root.at("vocab").as_int(1, int64_t{1} << 22);
  m.context = root.at("context").as_int(1, int64_t{1} << 24);
  m.activation = root.at("activation").as_choice({"silu", "gelu"});
  m.gated = root.at("gated").as_bool();
  m.norm = root.at("norm").as_choice({"rms", "layer"});
  m.parallel_attention = root.bool_or("parallel_attention", false);
  m.bias = root.bool_or("bias", false);
  m.tied_embeddings = root.bool_or("tied_embeddings", false);
  if (m.heads % m.kv_heads != 0) {
    root.at("kv_heads").fail("must divide heads (" + std::to_string(m.heads) + ": query heads share KV heads in equal groups), got " +
                             std::to_string(m.kv_heads));
  }
  if (auto moe = root.get("moe")) {
    moe->expect_keys({"experts", "top_k", "routing_skew"});
    MoeSpec s;
    s.experts = moe->at("experts").as_int(1, 1024);
    s.top_k = moe->at("top_k").as_int(1, s.experts);
    s.routing_skew = moe->at("routing_skew").as_double(1.0, 2.0);
    m.moe = s;
  }
  return m;
}

Dtype parse_llm_dtype(const std::string& name, const std::string& what, bool weights) {
  const std::string n = name == "fp8" ? "fp8_e4m3" : name;
  const auto d = parse_dtype(n);
  const bool ok = d && (*d == Dtype::kBf16 || *d == Dtype::kFp16 || *d == Dtype::kFp8E4m3 || *d == Dtype::kFp8E5m2 ||
                        *d == Dtype::kInt8 || (weights && *d == Dtype::kInt4));
  if (!ok) {
    throw InputError(what + ": '" + name + "' is not a " + (weights ? "weight" : "KV-cache") +
                     " dtype (allowed: bf16, fp16, fp8, fp8_e4m3, fp8_e5m2, int8" + (weights ? ", int4)" : "; int4 is weights only)"));
  }
  return *d;
}

}  // namespace tessera::serve::llm
