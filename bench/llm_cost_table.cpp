// Times the LLM iteration cost table build (issue 31 item 3) for a model on a chip (default
// Llama-3-8B bf16 on tpu-v6e): a cold build into a fresh cache directory, then a warm one
// from the cache; with --check N, N random mixes interpolated vs simulated directly (the
// figure docs/serving.md "Iteration cost" records). A benchmark, not a test: run by hand.
//   build/bench/bench_llm_cost_table [--arch A] [--model M] [--tp N] [--check N] [--jobs N] [--full-grid]
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>

#include "sim/config/arch_config.h"
#include "sim/serve/llm/capacity.h"
#include "sim/serve/llm/cost_table.h"
#include "sim/serve/llm/model_spec.h"

namespace fs = std::filesystem;
using namespace tessera::serve::llm;

int main(int argc, char** argv) {
  fs::path arch = fs::path(TESSERA_SOURCE_DIR) / "configs/tpu-v6e.yaml";
  fs::path model = fs::path(TESSERA_SOURCE_DIR) / "workloads/llm/llama-3-8b.yaml";
  int tp = 1, check = 0, jobs = 2;
  bool full_grid = false;
  for (int k = 1; k < argc; ++k) {
    if (!std::strcmp(argv[k], "--full-grid")) {
      full_grid = true;
      continue;
    }
    if (k + 1 >= argc) break;
    if (!std::strcmp(argv[k], "--arch")) arch = fs::absolute(argv[k + 1]);
    if (!std::strcmp(argv[k], "--model")) model = fs::absolute(argv[k + 1]);
    if (!std::strcmp(argv[k], "--tp")) tp = std::stoi(argv[k + 1]);
    if (!std::strcmp(argv[k], "--check")) check = std::stoi(argv[k + 1]);
    if (!std::strcmp(argv[k], "--jobs")) jobs = std::stoi(argv[k + 1]);
    ++k;
  }
  const tessera::ArchConfig a = tessera::load_arch_config(arch);
  CostTableRequest r;
  r.arch = arch;
  r.model = load_llm_model(model);
  r.shard = shard_layer(r.model, tp, "--tp");
  r.grid = CostGrid::standard(kActivationReserveTokens, 256, r.model.context, std::max(a.array.rows, a.array.cols),
                              r.shard.heads / r.shard.kv_heads);
  // The replica's KV capacity cuts the decode rows to the batches that fit (CostGrid), as
  // make_serving_target does; --full-grid simulates the whole grid (the figure before the cut).
  PlacementRequest pr;
  pr.tp = tp;
  pr.memory_bytes_per_chip = static_cast<int64_t>(a.weight_memory.capacity_bytes);
  pr.chip = a.name;
  const int64_t capacity = place_model(r.model, pr).kv_capacity_tokens();
  if (!full_grid) r.grid.kv_capacity_tokens = capacity;
  r.runner_exe = fs::path(TESSERA_BINARY_DIR) / "tessera";
  r.jobs = jobs;
  r.cache_dir = fs::temp_directory_path() / "tessera-bench-llm-cost";
  const bool keep = std::getenv("KEEP_CACHE") != nullptr;  // reuse the last run's table (debugging the check)
  if (!keep) fs::remove_all(r.cache_dir);
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  const LayerCostTable cold = build_cost_table(r);
  const double cold_s = std::chrono::duration<double>(clock::now() - t0).count();
  t0 = clock::now();
  const LayerCostTable warm = build_cost_table(r);
  const double warm_s = std::chrono::duration<double>(clock::now() - t0).count();
  std::printf("%s on %s, tp %d: cold build %.1f s wall (%zu points simulated, %d jobs), warm build %.3f s (%zu from the cache)\n",
              r.model.display_name.c_str(), a.name.c_str(), tp, cold_s, cold.simulated, jobs, warm_s, warm.cached);
  if (check > 0) {
    std::mt19937_64 rng(31);
    auto uni = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
    std::vector<PieceQuery> pieces;
    std::vector<std::array<int64_t, 4>> mixes;
    using K = PieceQuery::Kind;
    for (int k = 0; k < check; ++k) {
      // chunk, context, batch, mean KV: a batch whose KV cache fits the replica (batch x KV <= capacity)
      const int64_t batch = uni(1, 256);
      const std::array<int64_t, 4> m = {uni(1, 2048), uni(0, 4096), batch, uni(16, std::max<int64_t>(16, std::min<int64_t>(4096, capacity / batch)))};
      mixes.push_back(m);
      pieces.push_back({K::kDense, m[0] + m[2], 0});
      pieces.push_back({K::kDecode, m[2], m[3]});
      pieces.push_back({K::kPrefill, m[0], m[1]});
    }
    t0 = clock::now();
    const std::vector<CostPoint> sim = simulate_pieces(r, pieces);
    const double sim_s = std::chrono::duration<double>(clock::now() - t0).count();
    double worst = 0, sum = 0;
    for (size_t k = 0; k < mixes.size(); ++k) {
      const auto& m = mixes[k];
      const double interp = cold.dense(m[0] + m[2]).seconds + cold.decode_attention(m[2], m[3]).seconds +
                            cold.prefill_attention(m[0], m[1]).seconds;
      const double direct = sim[3 * k].seconds + sim[3 * k + 1].seconds + sim[3 * k + 2].seconds;
      const double e = std::abs(interp - direct) / direct;
      if (e > 0.03) {
        std::printf("  mix %zu: chunk %lld over %lld, decode %lld x %lld: error %.1f%% (dense %.3g/%.3g, decode %.3g/%.3g, prefill %.3g/%.3g s)\n",
                    k, (long long)m[0], (long long)m[1], (long long)m[2], (long long)m[3], 100 * e, cold.dense(m[0] + m[2]).seconds,
                    sim[3 * k].seconds, cold.decode_attention(m[2], m[3]).seconds, sim[3 * k + 1].seconds,
                    cold.prefill_attention(m[0], m[1]).seconds, sim[3 * k + 2].seconds);
      }
      worst = std::max(worst, e);
      sum += e;
    }
    std::printf("%d random mixes (chunk 1-2048 over 0-4096, decode 1-256 x 16-min(4096, %lld / batch) KV): interpolation error mean %.2f%%, worst %.2f%% (direct simulation %.1f s)\n",
                check, (long long)capacity, 100 * sum / check, 100 * worst, sim_s);
  }
  if (!keep) fs::remove_all(r.cache_dir);
  return 0;
}
