#include "sim/serve/llm/targets.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <sstream>
#include <tuple>

#include "models/baseline/model.h"
#include "models/baseline/spec.h"
#include "models/interconnect/chip_link.h"
#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/config/arch_config.h"
#include "sim/serve/llm/capacity.h"
#include "sim/serve/llm/cost_table.h"
#include "sim/sweep/runner.h"

namespace fs = std::filesystem;

namespace tessera::serve::llm {
namespace {

// The pipeline schedule of one iteration (issue 31 item 4): the iteration's sequences split
// into up to `pp` micro-batches that flow through the stages one after another (GPipe order);
// the last micro-batch leaves the last stage after sum(t_i) + (pp - 1) * max(t_i), the
// (pp - 1) * max term being the fill/drain bubble. Prefill chunks and decode sequences are
// dealt round-robin so the micro-batches carry even work.
std::vector<IterationMix> micro_batches(const IterationMix& mix, int pp) {
  const int64_t sequences = static_cast<int64_t>(mix.prefill.size()) + mix.decode_sequences;
  const int64_t m = std::max<int64_t>(1, std::min<int64_t>(pp, sequences));
  std::vector<IterationMix> out(static_cast<size_t>(m));
  for (size_t k = 0; k < mix.prefill.size(); ++k) out[k % m].prefill.push_back(mix.prefill[k]);
  const bool lengths = static_cast<int64_t>(mix.decode_kv_lengths.size()) == mix.decode_sequences;
  size_t next = 0;
  for (int64_t k = 0; k < m; ++k) {
    const int64_t n = mix.decode_sequences / m + (k < mix.decode_sequences % m ? 1 : 0);
    out[k].decode_sequences = n;
    if (lengths) {  // each micro-batch its own sequences, in the batch's order
      for (int64_t q = 0; q < n; ++q) {
        out[k].decode_kv_lengths.push_back(mix.decode_kv_lengths[next]);
        out[k].decode_kv_tokens += mix.decode_kv_lengths[next++];
      }
    } else {  // KV tokens shared in proportion (the mean KV length is the mix's)
      out[k].decode_kv_tokens = mix.decode_sequences ? mix.decode_kv_tokens * n / mix.decode_sequences : 0;
    }
  }
  return out;
}

int64_t mix_tokens(const IterationMix& mix) {
  int64_t t = mix.decode_sequences;
  for (const auto& c : mix.prefill) t += c.tokens;
  return t;
}

// Rows of the LM head: one per decode sequence and one per prefill chunk (its last token's
// logits; a non-final chunk's are computed and dropped, as vLLM's chunked prefill does).
int64_t head_rows(const IterationMix& mix) { return mix.decode_sequences + static_cast<int64_t>(mix.prefill.size()); }

double pipeline_s(const std::vector<double>& stage_s, int pp) {
  if (stage_s.empty()) return 0;
  const double sum = std::accumulate(stage_s.begin(), stage_s.end(), 0.0);
  return sum + (pp - 1) * *std::max_element(stage_s.begin(), stage_s.end());
}

std::string lower_name(const fs::path& p) { return p.stem().string(); }

// Simulated chips: the cost table of one layer's pieces, TP collectives on the ICI links.
class ChipTarget final : public ServingTarget {
 public:
  ChipTarget(const TargetRequest& r, const fs::path& runner, const CostGrid* grid) : req_(r) {
    arch_ = load_arch_config(r.arch);
    model_ = load_llm_model(r.model);
    precision_.weights = parse_llm_dtype(r.weight_dtype, "--weight-dtype", true);
    precision_.kv = parse_llm_dtype(r.kv_dtype, "--kv-dtype", false);
    if (r.tp * r.pp > 1 && !arch_.has_chip_links) {
      throw InputError(r.arch + ": --tp " + std::to_string(r.tp) + " x --pp " + std::to_string(r.pp) +
                       " needs chip-to-chip links, and the config has no ici: section (docs/configs.md)");
    }
    // The MAC modes the layer graphs need (dense: activations x weights; attention at the KV
    // dtype), checked before any cost-table run.
    for (const auto& [a, b, flag] : {std::tuple{matmul_input(precision_), precision_.weights, "--weight-dtype"},
                                     std::tuple{precision_.kv, precision_.kv, "--kv-dtype"}}) {
      if (arch_.array.find_mode(a, b)) continue;
      throw InputError(std::string(flag) + ": " + model_.display_name + " would multiply " + std::string(dtype_name(a)) + " by " +
                       std::string(dtype_name(b)) + ", but " + arch_.name + " (" + r.arch +
                       ") has no such entry in array.mac_modes (it has: " + arch_.array.mode_names() + ")");
    }
    PlacementRequest pr;
    pr.tp = r.tp;
    pr.pp = r.pp;
    pr.weights = precision_.weights;
    pr.kv = precision_.kv;
    pr.block_tokens = r.block_tokens;
    pr.memory_bytes_per_chip = static_cast<int64_t>(arch_.weight_memory.capacity_bytes);
    pr.chip = arch_.name + " (" + r.arch + ")";
    place_ = place_model(model_, pr);
    CostTableRequest c;
    c.arch = fs::absolute(r.arch);
    c.model = model_;
    c.shard = place_.shard;
    c.precision = precision_;
    c.grid = grid ? *grid
                  : CostGrid::standard(kActivationReserveTokens, kMaxDecodeBatch, model_.context,
                                       std::max(arch_.array.rows, arch_.array.cols), place_.shard.heads / place_.shard.kv_heads);
    if (!grid) c.grid.kv_capacity_tokens = place_.kv_capacity_tokens();  // no decode batch holds more
    c.cache_dir = r.cache_dir;
    c.runner_exe = runner;
    c.jobs = 2;
    table_request_ = std::move(c);  // built on first use: the requests are checked before its runs
  }

  std::string name() const override {
    std::ostringstream o;
    o << arch_.name << " x" << chips();
    if (req_.tp > 1 || req_.pp > 1) o << " (tp " << req_.tp << (req_.pp > 1 ? ", pp " + std::to_string(req_.pp) : "") << ")";
    return o.str();
  }

  IterationCost iteration(const IterationMix& mix) const override {
    IterationCost total;
    std::vector<double> stage_s;
    for (const IterationMix& mb : micro_batches(mix, req_.pp)) {
      const int64_t tokens = mix_tokens(mb);
      if (tokens == 0) continue;
      CostPoint layer = table().dense(tokens);
      if (static_cast<int64_t>(mb.decode_kv_lengths.size()) == mb.decode_sequences) {
        add(layer, table().decode_attention(mb.decode_kv_lengths));  // each sequence at its own KV length
      } else {
        const int64_t mean_kv = mb.decode_sequences ? (mb.decode_kv_tokens + mb.decode_sequences - 1) / mb.decode_sequences : 0;
        add(layer, table().decode_attention(mb.decode_sequences, mean_kv));
      }
      for (const auto& c : mb.prefill) add(layer, table().prefill_attention(c.tokens, c.context_tokens));
      // Tensor parallelism: the attention output and the FFN output are all-reduced (one for
      // GPT-J's parallel block), activations in bf16.
      double collectives = 0;
      if (req_.tp > 1) {
        const int64_t bytes = elements_bytes(Dtype::kBf16, tokens * model_.hidden);
        collectives = (model_.parallel_attention ? 1 : 2) * models::all_reduce_s(arch_.ici, req_.tp, bytes);
      }
      const CostPoint head = table().lm_head(head_rows(mb));
      double head_s = head.seconds;
      if (req_.tp > 1) head_s += models::all_gather_s(arch_.ici, req_.tp, elements_bytes(Dtype::kBf16, head_rows(mb) * place_.shard.vocab));
      // The largest stage with the last one's LM head (every stage is paced by the slowest),
      // and with pp > 1 the activations' hop to the next stage over one ICI link.
      double stage = place_.layers_per_stage * (layer.seconds + collectives) + head_s;
      if (req_.pp > 1) {
        stage += arch_.ici.latency_ns * 1e-9 +
                 static_cast<double>(elements_bytes(Dtype::kBf16, tokens * model_.hidden)) / (arch_.ici.bandwidth_gb_per_s * 1e9);
      }
      stage_s.push_back(stage);
      total.energy_j += req_.tp * (model_.layers * layer.energy_j + head.energy_j);
    }
    total.seconds = pipeline_s(stage_s, req_.pp);
    return total;
  }

  int64_t kv_capacity_tokens() const override { return place_.kv_capacity_tokens(); }
  int64_t kv_bytes_per_token() const override { return place_.kv_bytes_per_token; }
  int64_t max_context_tokens() const override { return model_.context; }
  double swap_s(int64_t tokens) const override {
    // Each chip moves its share of the tokens' KV over its own host link, all at once.
    if (tokens <= 0) return 0;
    if (!arch_.has_host_link) return 0;
    const double bytes = static_cast<double>(place_.page_bytes_per_chip) / static_cast<double>(place_.block_tokens) * tokens;
    const auto& p = arch_.pcie;
    const double payload = static_cast<double>(p.max_payload_bytes) / static_cast<double>(p.max_payload_bytes + p.tlp_overhead_bytes);
    return p.latency_ns * 1e-9 + bytes / (p.link_bytes_per_s() * payload);
  }
  int chips() const override { return req_.tp * req_.pp; }
  double idle_power_w() const override { return chips() * table().idle_w; }
  void prepare() const override { table(); }

  // Largest decode batch the table simulates (beyond it the last segment extends).
  static constexpr int64_t kMaxDecodeBatch = 256;

 private:
  static void add(CostPoint& a, const CostPoint& b) {
    a.seconds += b.seconds;
    a.energy_j += b.energy_j;
  }
  const LayerCostTable& table() const {
    if (!table_) table_ = build_cost_table(table_request_);
    return *table_;
  }
  TargetRequest req_;
  ArchConfig arch_;
  LlmModelSpec model_;
  LayerPrecision precision_;
  Placement place_;
  CostTableRequest table_request_;
  mutable std::optional<LayerCostTable> table_;  // one thread per target: the study runs serially
};

// GPUs: the analytic baseline model (models/baseline) on the iteration's kernels, per GPU of
// the TP group; collectives on NVLink (the spec's chip_link) through the chip-link model.
class GpuTarget final : public ServingTarget {
 public:
  explicit GpuTarget(const TargetRequest& r) : req_(r) {
    spec_ = baseline::load_baseline_spec(r.arch);
    if (spec_.kind != baseline::Kind::kGpu) {
      throw InputError(r.arch + ": an LLM serving baseline must be a GPU (kind: gpu), this is a " +
                       std::string(baseline::kind_name(spec_.kind)));
    }
    model_ = load_llm_model(r.model);
    weights_ = parse_llm_dtype(r.weight_dtype, "--weight-dtype", true);
    kv_ = parse_llm_dtype(r.kv_dtype, "--kv-dtype", false);
    if (r.tp * r.pp > 1 && !spec_.chip_link) {
      throw InputError(r.arch + ": --tp/--pp over several GPUs needs a chip_link: section (NVLink) in the baseline spec");
    }
    // W8A8 (int8, fp8) runs the GEMMs at the 8-bit tensor-core rate; bf16/fp16/int4 (weight-only) at bf16.
    precision_ = (weights_ == Dtype::kInt8 || weights_ == Dtype::kFp8E4m3 || weights_ == Dtype::kFp8E5m2)
                     ? baseline::Precision::kInt8
                     : baseline::Precision::kBf16;
    spec_.peak_tops_at(precision_);  // refuses a part without the mode
    PlacementRequest pr;
    pr.tp = r.tp;
    pr.pp = r.pp;
    pr.weights = weights_;
    pr.kv = kv_;
    pr.block_tokens = r.block_tokens;
    pr.memory_bytes_per_chip = static_cast<int64_t>(spec_.memory_capacity_bytes);
    pr.chip = spec_.name + " (" + r.arch + ")";
    place_ = place_model(model_, pr);
  }

  std::string name() const override {
    std::ostringstream o;
    o << spec_.id << " x" << chips();
    if (req_.tp > 1 || req_.pp > 1) o << " (tp " << req_.tp << (req_.pp > 1 ? ", pp " + std::to_string(req_.pp) : "") << ")";
    return o.str();
  }

  IterationCost iteration(const IterationMix& mix) const override {
    std::vector<double> stage_s;
    for (const IterationMix& mb : micro_batches(mix, req_.pp)) {
      const int64_t tokens = mix_tokens(mb);
      if (tokens == 0) continue;
      const double layer = baseline::estimate(spec_, layer_work(mb), precision_).latency_s;
      double collectives = 0;
      if (req_.tp > 1) {
        collectives = (model_.parallel_attention ? 1 : 2) *
                      models::all_reduce_s(*spec_.chip_link, req_.tp, elements_bytes(Dtype::kBf16, tokens * model_.hidden));
      }
      double head = baseline::estimate(spec_, head_work(head_rows(mb)), precision_).latency_s;
      if (req_.tp > 1) {
        head += models::all_gather_s(*spec_.chip_link, req_.tp, elements_bytes(Dtype::kBf16, head_rows(mb) * place_.shard.vocab));
      }
      double stage = place_.layers_per_stage * (layer + collectives) + head;
      if (req_.pp > 1) {
        const auto& l = *spec_.chip_link;
        stage += l.latency_ns * 1e-9 + static_cast<double>(elements_bytes(Dtype::kBf16, tokens * model_.hidden)) /
                                            (l.bandwidth_gb_per_s * 1e9 * l.ports);
      }
      stage_s.push_back(stage);
    }
    IterationCost c;
    c.seconds = pipeline_s(stage_s, req_.pp);
    // Energy: every GPU at its running power for the iteration (the spec's power, TDP when that is all there is).
    if (spec_.power) c.energy_j = spec_.power->busy_w * chips() * c.seconds;
    return c;
  }

  int64_t kv_capacity_tokens() const override { return place_.kv_capacity_tokens(); }
  int64_t kv_bytes_per_token() const override { return place_.kv_bytes_per_token; }
  int64_t max_context_tokens() const override { return model_.context; }
  double swap_s(int64_t tokens) const override {
    if (tokens <= 0 || !spec_.host_link) return 0;
    const double bytes = static_cast<double>(place_.page_bytes_per_chip) / static_cast<double>(place_.block_tokens) * tokens;
    return spec_.host_link->latency_us * 1e-6 + bytes / (spec_.host_link->bandwidth_gb_per_s * 1e9);
  }
  int chips() const override { return req_.tp * req_.pp; }
  double idle_power_w() const override { return spec_.power ? spec_.power->idle_w * chips() : 0.0; }

 private:
  // Elements at the baseline's precision standing for `n` elements of dtype d (the model
  // counts every tensor at one precision's bytes: int4 weights are a quarter of bf16's).
  int64_t as_elements(Dtype d, int64_t n) const {
    const int64_t prec = baseline::precision_bytes(precision_);
    return (elements_bytes(d, n) + prec - 1) / prec;
  }
  baseline::LayerWork gemm(const std::string& name, int64_t m, int64_t k, int64_t n) const {
    baseline::LayerWork w;
    w.name = name;
    w.op = "fc";
    w.matrix = true;
    w.m = m;
    w.k = k;
    w.n = n;
    w.macs = m * k * n;
    w.weights = as_elements(weights_, k * n);
    w.inputs = {{m * k, false}};
    w.output = {m * n, false};
    return w;
  }
  baseline::LayerWork vector(const std::string& name, int64_t elements, int inputs = 1) const {
    baseline::LayerWork w;
    w.name = name;
    w.op = "elementwise";
    for (int k = 0; k < inputs; ++k) w.inputs.push_back({elements, false});
    w.output = {elements, false};
    return w;
  }
  // Attention of `groups` (sequence x KV head) groups: rows queries over kv KV tokens.
  baseline::LayerWork attention(const std::string& name, int64_t groups, int64_t rows, int64_t kv) const {
    baseline::LayerWork w;
    w.name = name;
    w.op = "matmul";
    w.matrix = true;
    w.m = rows;
    w.k = model_.head_dim;
    w.n = kv;
    w.macs = 2 * groups * rows * model_.head_dim * kv;  // scores and context
    w.inputs = {{groups * rows * model_.head_dim, false}, {as_elements(kv_, 2 * groups * kv * model_.head_dim), false}};
    w.output = {groups * rows * model_.head_dim, false};
    return w;
  }
  baseline::Workload layer_work(const IterationMix& mb) const {
    const LayerShard& s = place_.shard;
    const int64_t t = mix_tokens(mb), h = model_.hidden, d = model_.head_dim;
    baseline::Workload w;
    w.name = model_.name + " layer";
    w.layers.push_back(vector("norm1", t * h));
    w.layers.push_back(gemm("qkv", t, h, (s.heads + 2 * s.kv_heads) * d));
    w.layers.push_back(vector("rope", t * (s.heads + s.kv_heads) * d));
    if (mb.decode_sequences > 0) {
      const int64_t mean_kv = (mb.decode_kv_tokens + mb.decode_sequences - 1) / mb.decode_sequences;
      w.layers.push_back(attention("decode_attention", mb.decode_sequences * s.kv_heads, s.heads / s.kv_heads, mean_kv));
    }
    for (const auto& c : mb.prefill) {
      w.layers.push_back(attention("prefill_attention", s.kv_heads, (s.heads / s.kv_heads) * c.tokens, c.tokens + c.context_tokens));
    }
    w.layers.push_back(gemm("o", t, s.heads * d, h));
    w.layers.push_back(vector("residual1", t * h, 2));
    if (!model_.parallel_attention) w.layers.push_back(vector("norm2", t * h));
    auto ffn = [&](const std::string& pre, int64_t rows) {
      if (rows == 0) return;
      w.layers.push_back(gemm(pre + "up", rows, h, s.ffn * (model_.gated ? 2 : 1)));  // gate and up as one GEMM
      w.layers.push_back(vector(pre + "act", rows * s.ffn * (model_.gated ? 2 : 1)));
      w.layers.push_back(gemm(pre + "down", rows, s.ffn, h));
    };
    if (model_.moe) {
      w.layers.push_back(gemm("router", t, h, model_.moe->experts));
      for (int64_t e = 0; e < model_.moe->experts; ++e) ffn("e" + std::to_string(e) + "_", model_.moe->expert_slots(e, t * model_.moe->top_k));
    } else {
      ffn("", t);
    }
    w.layers.push_back(vector("residual2", t * h, 2));
    return w;
  }
  baseline::Workload head_work(int64_t rows) const {
    baseline::Workload w;
    w.name = model_.name + " lm head";
    w.layers.push_back(vector("norm_f", rows * model_.hidden));
    w.layers.push_back(gemm("lm_head", rows, model_.hidden, place_.shard.vocab));
    return w;
  }

  TargetRequest req_;
  baseline::BaselineSpec spec_;
  LlmModelSpec model_;
  Dtype weights_ = Dtype::kBf16, kv_ = Dtype::kBf16;
  baseline::Precision precision_ = baseline::Precision::kBf16;
  Placement place_;
};

// A baseline spec (kind: cpu/gpu) rather than a chip config: the file's top-level keys say.
bool is_baseline_spec(const fs::path& p) {
  const YamlNode root = YamlNode::load_file(p);
  return root.has("kind") && root.has("peak_tops");
}

}  // namespace

std::unique_ptr<ServingTarget> make_serving_target(const TargetRequest& r, const fs::path& runner_exe, const CostGrid* grid) {
  if (r.tp < 1) throw InputError("--tp must be >= 1, got " + std::to_string(r.tp));
  if (r.pp < 1) throw InputError("--pp must be >= 1, got " + std::to_string(r.pp));
  if (is_baseline_spec(r.arch)) return std::make_unique<GpuTarget>(r);
  return std::make_unique<ChipTarget>(r, runner_exe, grid);
}

std::unique_ptr<ServingTarget> make_serving_target(const TargetRequest& r) {
  // The simulations run as `tessera run` children: this executable when it is `tessera`,
  // else $TESSERA_EXE (tests, other drivers).
  fs::path exe = sweep::self_exe();
  if (const char* env = std::getenv("TESSERA_EXE"); env && *env) exe = env;
  return make_serving_target(r, exe);
}

}  // namespace tessera::serve::llm
