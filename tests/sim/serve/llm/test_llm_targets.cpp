// LLM serving targets by hand: model configs (parameter counts), capacity and KV pages on a
// tiny model, the tensor-parallel split, bad input (exit-2 errors), the GPU baseline target
// and a simulated chip target end to end on the tiny model.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <filesystem>

#include "sim/common/error.h"
#include "sim/serve/llm/capacity.h"
#include "sim/serve/llm/cost_table.h"
#include "sim/serve/llm/model_spec.h"
#include "sim/serve/llm/targets.h"

namespace fs = std::filesystem;
using namespace tessera;
using namespace tessera::serve::llm;

namespace {

const fs::path kSrc = fs::path(TESSERA_SOURCE_DIR);
const fs::path kHere = kSrc / "tests/sim/serve/llm";

LlmModelSpec tiny() { return load_llm_model(kHere / "tiny-llm.yaml"); }

PlacementRequest tiny_chip(int tp, int pp = 1) {
  PlacementRequest r;
  r.tp = tp;
  r.pp = pp;
  r.memory_bytes_per_chip = 64 << 20;  // tiny-chip.yaml: 64 MiB
  r.chip = "tiny-chip";
  return r;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// Published parameter counts: Llama-3-8B 8,030,261,248 (HF model card / safetensors total);
// Llama-2-7B 6,738,415,616; Mixtral-8x7B 46,702,792,704 (HF safetensors totals).
TEST(LlmModelSpec, ParameterCountsMatchThePublishedOnes) {
  EXPECT_EQ(load_llm_model(kSrc / "workloads/llm/llama-3-8b.yaml").total_weights(), 8030261248);
  EXPECT_EQ(load_llm_model(kSrc / "workloads/llm/llama-2-7b.yaml").total_weights(), 6738415616);
  EXPECT_EQ(load_llm_model(kSrc / "workloads/llm/mixtral-8x7b.yaml").total_weights(), 46702792704);
  // Every model config (workloads/llm/traces/ holds request traces, not models).
  for (const auto& e : fs::directory_iterator(kSrc / "workloads/llm")) {
    if (e.path().extension() == ".yaml") EXPECT_NO_THROW(load_llm_model(e.path())) << e.path();
  }
}

TEST(LlmModelSpec, BadConfigsAreLocated) {
  const fs::path dir = fs::temp_directory_path() / ("tessera-llm-spec-test-" + std::to_string(::getpid()));  // per process: worktrees share /tmp
  fs::create_directories(dir);
  auto write = [&](const std::string& text) {
    std::ofstream(dir / "m.yaml") << text;
    return error_of([&] { load_llm_model(dir / "m.yaml"); });
  };
  const std::string base = "name: m\nlayers: 2\nhidden: 64\nheads: 4\nhead_dim: 16\nffn: 128\nvocab: 10\ncontext: 64\nactivation: silu\ngated: true\nnorm: rms\n";
  EXPECT_NE(write(base + "kv_heads: 3\n").find("m.yaml:12"), std::string::npos);  // 3 does not divide 4 heads
  EXPECT_NE(write(base + "kv_heads: 2\nactivation2: relu\n").find("activation2"), std::string::npos);
  EXPECT_NE(write(base + "kv_heads: 2\nmoe: {experts: 4, top_k: 5, routing_skew: 1}\n").find("top_k"), std::string::npos);
  fs::remove_all(dir);
}

// Mixtral's routing skew 1.25 over 8 experts: shares fall linearly from 1.25/8 to 0.75/8.
// 1000 tokens x top-2 = 2000 slots: the busiest gets floor(312.5) = 312 + 1 of the 4 left over.
TEST(LlmModelSpec, RoutingSkewSharesTheSlots) {
  MoeSpec m{8, 2, 1.25};
  int64_t sum = 0;
  for (int e = 0; e < 8; ++e) sum += m.expert_slots(e, 2000);
  EXPECT_EQ(sum, 2000);
  EXPECT_EQ(m.expert_slots(0, 2000), 313);  // 2000 x 1.25 / 8 = 312.5
  EXPECT_EQ(m.expert_slots(7, 2000), 187);  // 2000 x 0.75 / 8 = 187.5 -> 187
}

// Tiny model (2 layers, hidden 256, 8 heads / 2 KV heads of 32, FFN 512 SwiGLU, vocab 1000)
// on 64 MiB, bf16, 16-token pages:
//   layer weights 256x(8+2x2)x32 + 8x32x256 + 3x256x512 + 2x256 = 557,568
//   weights 2 x 557,568 + 2 x 1000x256 + 256 = 1,627,392 elements = 3,254,784 bytes
//   activations 8192 x (2x256 + 12x32 + 2x512) x 2 B = 31,457,280 bytes
//   page 16 tokens x 2 layers x (K, V) x 2 heads x 32 x 2 B = 8,192 bytes
//   pages (67,108,864 - 3,254,784 - 31,457,280) / 8,192 = 3,954 (3,954.7) -> 63,264 tokens
TEST(LlmCapacity, KvPagesOnTheTinyModel) {
  const Placement p = place_model(tiny(), tiny_chip(1));
  EXPECT_EQ(p.weight_bytes_per_chip, 3254784);
  EXPECT_EQ(p.activation_bytes_per_chip, 31457280);
  EXPECT_EQ(p.page_bytes_per_chip, 8192);
  EXPECT_EQ(p.pages, 3954);
  EXPECT_EQ(p.kv_capacity_tokens(), 63264);
  EXPECT_EQ(p.kv_bytes_per_token, 512);  // 2 layers x 2 x 2 heads x 32 x 2 B
}

// TP 2: 4 heads, 1 KV head, FFN 256, vocab 500 per chip:
//   layer 256x(4+2)x32 + 4x32x256 + 3x256x256 + 512 = 279,040; weights 2 x 279,040 + 2 x 500x256 + 256
//   = 814,336 elements = 1,628,672 bytes (half of tp 1's, norms replicated);
//   activations 8192 x (512 + 6x32 + 2x256) x 2 = 19,922,944; page 16 x 2 x 2 x 1 x 32 x 2 = 4,096;
//   pages (67,108,864 - 1,628,672 - 19,922,944) / 4,096 = 11,122 -> 177,952 tokens.
// TP 4 exceeds the 2 KV heads: each chip holds one (replicated twice), so the replica's
// bytes per token double to 1,024.
TEST(LlmCapacity, TensorParallelSplitsWeightsAndKv) {
  const Placement p2 = place_model(tiny(), tiny_chip(2));
  EXPECT_EQ(p2.shard.heads, 4);
  EXPECT_EQ(p2.shard.kv_heads, 1);
  EXPECT_EQ(p2.weight_bytes_per_chip, 1628672);
  EXPECT_EQ(p2.activation_bytes_per_chip, 19922944);
  EXPECT_EQ(p2.page_bytes_per_chip, 4096);
  EXPECT_EQ(p2.kv_capacity_tokens(), 177952);
  EXPECT_EQ(p2.kv_bytes_per_token, 512);
  const Placement p4 = place_model(tiny(), tiny_chip(4));
  EXPECT_TRUE(p4.shard.kv_replicated);
  EXPECT_EQ(p4.kv_bytes_per_token, 1024);
  // PP 2: one layer per stage; the first stage holds the embedding, the last the LM head.
  const Placement pp2 = place_model(tiny(), tiny_chip(1, 2));
  EXPECT_EQ(pp2.layers_per_stage, 1);
  EXPECT_EQ(pp2.weight_bytes_per_chip, 2 * (557568 + 256000 + 256));  // the last stage
  EXPECT_EQ(pp2.page_bytes_per_chip, 4096);
}

TEST(LlmCapacity, BadParallelismAndWeightsThatDoNotFit) {
  EXPECT_NE(error_of([] { place_model(tiny(), tiny_chip(3)); }).find("does not divide Tiny-LLM's 8 attention heads"),
            std::string::npos);
  EXPECT_NE(error_of([] { place_model(tiny(), tiny_chip(1, 3)); }).find("--pp 3"), std::string::npos);
  // Llama-2-70B bf16 on 16 GB chips (tpu-v5e): 138 GB of weights. Counted by hand per
  // (tp, pp) as above, the fewest chips with room for a page are 10, as tp 1 x pp 10 (8
  // layers a stage: 8 x 856,178,688 x 2 B + the 32000x8192 LM head = 14.2 GB + 0.9 GB of activations).
  PlacementRequest r;
  r.memory_bytes_per_chip = 16000000000;
  r.chip = "tpu-v5e";
  const std::string e = error_of([&] { place_model(load_llm_model(kSrc / "workloads/llm/llama-2-70b.yaml"), r); });
  EXPECT_NE(e.find("does not fit tpu-v5e at tp 1 x pp 1"), std::string::npos) << e;
  EXPECT_NE(e.find("10 chips would (tp 1 x pp 10)"), std::string::npos) << e;
}

// The H100 target from the baseline model: a decode iteration of 1 sequence is bound by
// reading the weights: 8.03e9 x 2 B / (3350 GB/s x 0.85) = 5.64 ms, plus 32 layers' kernel
// launches; the KV capacity is what 80 GB leaves.
TEST(LlmGpuTarget, H100ServesLlama3From80Gb) {
  TargetRequest r;
  r.arch = (kSrc / "configs/baselines/h100-sxm.yaml").string();
  r.model = (kSrc / "workloads/llm/llama-3-8b.yaml").string();
  const auto t = make_serving_target(r);
  EXPECT_EQ(t->name(), "h100-sxm x1");
  EXPECT_EQ(t->chips(), 1);
  EXPECT_EQ(t->kv_bytes_per_token(), 131072);  // 32 layers x 2 x 8 heads x 128 x 2 B
  IterationMix one;
  one.decode_sequences = 1;
  one.decode_kv_tokens = 100;
  const double s = t->iteration(one).seconds;
  EXPECT_GT(s, 8.03e9 * 2 / (3350e9 * 0.85));
  EXPECT_LT(s, 8.03e9 * 2 / (3350e9 * 0.85) + 32 * 20 * 4e-6);
  // 4-way TP: two all-reduces a layer on NVLink make it more than a quarter of one GPU's time.
  r.tp = 4;
  const auto t4 = make_serving_target(r);
  EXPECT_EQ(t4->name(), "h100-sxm x4 (tp 4)");
  EXPECT_GT(t4->iteration(one).seconds, s / 4);
  EXPECT_GT(t4->kv_capacity_tokens(), 4 * t->kv_capacity_tokens());  // weights split: more room per GPU
}

// Pipeline parallelism, GPipe order: two identical micro-batches (one decode sequence each)
// over 2 stages take t1 + t2 + (2 - 1) x max = 3 stage times; one alone takes 2 (it passes both
// stages). So the 2-sequence iteration is 1.5x the 1-sequence one.
TEST(LlmGpuTarget, PipelineStagesFollowTheGpipeSchedule) {
  TargetRequest r;
  r.arch = (kSrc / "configs/baselines/h100-sxm.yaml").string();
  r.model = (kSrc / "workloads/llm/llama-3-8b.yaml").string();
  r.pp = 2;
  const auto t = make_serving_target(r);
  IterationMix one, two;
  one.decode_sequences = 1;
  one.decode_kv_tokens = 512;
  two.decode_sequences = 2;
  two.decode_kv_tokens = 1024;
  EXPECT_NEAR(t->iteration(two).seconds, 1.5 * t->iteration(one).seconds, 1e-12);
  EXPECT_EQ(t->chips(), 2);
}

// End to end on the simulated tiny chip: the table builds (memoized: a second target on the
// same cache simulates nothing) and a 2-chip TP target pays its all-reduces.
TEST(LlmChipTarget, TinyModelOnTinyChip) {
  const fs::path cache = fs::temp_directory_path() / ("tessera-llm-target-test-" + std::to_string(::getpid()));  // per process: worktrees share /tmp
  fs::remove_all(cache);
  TargetRequest r;
  r.arch = (kHere / "tiny-chip.yaml").string();
  r.model = (kHere / "tiny-llm.yaml").string();
  r.cache_dir = cache.string();
  const fs::path exe = fs::path(TESSERA_BINARY_DIR) / "tessera";
  const CostGrid small = CostGrid::standard(48, 4, 128, 32, 4);  // CI-sized; beyond it the last segments extend
  const auto t = make_serving_target(r, exe, &small);
  EXPECT_EQ(t->kv_capacity_tokens(), 63264);
  IterationMix mix;
  mix.prefill = {{32, 0}};
  mix.decode_sequences = 4;
  mix.decode_kv_tokens = 400;
  const IterationCost c = t->iteration(mix);
  EXPECT_GT(c.seconds, 0);
  EXPECT_GT(c.energy_j, 0);
  EXPECT_GT(t->idle_power_w(), 0);
  const auto again = make_serving_target(r, exe, &small);
  EXPECT_DOUBLE_EQ(again->iteration(mix).seconds, c.seconds);  // deterministic, from the cache
  r.tp = 2;
  const auto t2 = make_serving_target(r, exe, &small);
  EXPECT_EQ(t2->chips(), 2);
  EXPECT_GT(t2->iteration(mix).seconds, 0);
  fs::remove_all(cache);
}
