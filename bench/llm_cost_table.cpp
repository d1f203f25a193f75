// Times the LLM iteration cost table build (issue 31 item 3) for a model on a chip (default
// Llama-3-8B bf16 on tpu-v6e): a cold build into a fresh cache directory, then a warm one
// from the cache; with --check N, N random mixes interpolated vs simulated directly (the
// figure docs/serving.md "Iteration cost" records). A benchmark, not a test: run by hand.
//   build/bench/bench_llm_cost_table [--arch A] [--model M] [--tp N] [--check N] [--jobs N] [--full-grid]
//                                    [--scan-decode KV [--scan-step N]]
// --scan-decode prints the directly simulated decode cost against the batch at one KV length
// (where it steps: the compiler's passes, LayerCostTable::DecodeColumn).
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>

#include <sys/resource.h>

#include "sim/compiler/compiler.h"
#include "sim/config/arch_config.h"
#include "sim/serve/llm/capacity.h"
#include "sim/serve/llm/cost_table.h"
#include "sim/serve/llm/model_spec.h"

namespace fs = std::filesystem;
using namespace tessera::serve::llm;

namespace {

// CPU seconds of this process and its waited-for children (the simulation runs), user + system.
double cpu_s() {
  double t = 0;
  for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage u{};
    getrusage(who, &u);
    t += static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  set_pass_planner(&tessera::compiler::samples_per_pass);  // as the tessera executable wires it
  fs::path arch = fs::path(TESSERA_SOURCE_DIR) / "configs/tpu-v6e.yaml";
  fs::path model = fs::path(TESSERA_SOURCE_DIR) / "workloads/llm/llama-3-8b.yaml";
  int tp = 1, check = 0, jobs = 2;
  int64_t scan_kv = 0, scan_step = 16, scan_batch = 0, scan_dense = 0, scan_prefill = 0;  // --scan-prefill KV: chunks of 1-32 blocks  // --scan-dense T: tokens T to T + 64 x step  // --scan-kv B: against the KV length at batch B  // --scan-decode KV [--scan-step N]: the directly simulated decode cost against batch
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
    if (!std::strcmp(argv[k], "--scan-decode")) scan_kv = std::stoll(argv[k + 1]);
    if (!std::strcmp(argv[k], "--scan-step")) scan_step = std::stoll(argv[k + 1]);
    if (!std::strcmp(argv[k], "--scan-kv")) scan_batch = std::stoll(argv[k + 1]);
    if (!std::strcmp(argv[k], "--scan-dense")) scan_dense = std::stoll(argv[k + 1]);
    if (!std::strcmp(argv[k], "--scan-prefill")) scan_prefill = std::stoll(argv[k + 1]);
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
  if (scan_kv > 0) {
    // Where the decode cost steps along the batch axis (the grid's batch points must bracket them).
    std::vector<PieceQuery> pieces;
    for (int64_t b = 1; b <= 256; b = (b == 1 && scan_step > 1) ? scan_step : b + scan_step) pieces.push_back({PieceQuery::Kind::kDecode, b, scan_kv});
    const std::vector<CostPoint> sim = simulate_pieces(r, pieces);
    for (size_t k = 0; k < pieces.size(); ++k)
      std::printf("decode %lld x %lld KV: %.3f us (%.4f us a sequence)\n", (long long)pieces[k].a, (long long)scan_kv,
                  1e6 * sim[k].seconds, 1e6 * sim[k].seconds / static_cast<double>(pieces[k].a));
    return 0;
  }
  if (scan_prefill > 0) {
    // A chunk of n query blocks (n x q_block_rows / query rows a token tokens) over the rest of scan_prefill KV tokens.
    std::vector<PieceQuery> pieces;
    const int64_t per_token = r.shard.heads / r.shard.kv_heads;
    for (int64_t n = 1; n <= 32; ++n) {
      const int64_t tokens = n * r.grid.q_block_rows / per_token;
      if (tokens <= scan_prefill) pieces.push_back({PieceQuery::Kind::kPrefill, tokens, scan_prefill - tokens});
    }
    const std::vector<CostPoint> sim = simulate_pieces(r, pieces);
    for (size_t k = 0; k < pieces.size(); ++k)
      std::printf("prefill %zu blocks (%lld samples) over %lld KV: %.3f us\n", k + 1, (long long)((k + 1) * r.shard.kv_heads),
                  (long long)scan_prefill, 1e6 * sim[k].seconds);
    return 0;
  }
  if (scan_dense > 0) {
    std::vector<PieceQuery> pieces;
    for (int64_t t = scan_dense; t <= scan_dense + 64 * scan_step; t += scan_step) pieces.push_back({PieceQuery::Kind::kDense, t, 0});
    const std::vector<CostPoint> sim = simulate_pieces(r, pieces);
    for (size_t k = 0; k < pieces.size(); ++k) std::printf("dense %lld tokens: %.3f us\n", (long long)pieces[k].a, 1e6 * sim[k].seconds);
    return 0;
  }
  if (scan_batch > 0) {
    std::vector<PieceQuery> pieces;
    for (int64_t kv = 1; kv <= 1024; kv = (kv == 1 && scan_step > 1) ? scan_step : kv + scan_step) pieces.push_back({PieceQuery::Kind::kDecode, scan_batch, kv});
    const std::vector<CostPoint> sim = simulate_pieces(r, pieces);
    for (size_t k = 0; k < pieces.size(); ++k)
      std::printf("decode %lld x %lld KV: %.3f us\n", (long long)scan_batch, (long long)pieces[k].b, 1e6 * sim[k].seconds);
    return 0;
  }
  const bool keep = std::getenv("KEEP_CACHE") != nullptr;  // reuse the last run's table (debugging the check)
  if (!keep) fs::remove_all(r.cache_dir);
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  const double cpu0 = cpu_s();
  const LayerCostTable cold = build_cost_table(r);
  const double cold_s = std::chrono::duration<double>(clock::now() - t0).count();
  const double cold_cpu_s = cpu_s() - cpu0;
  t0 = clock::now();
  const LayerCostTable warm = build_cost_table(r);
  const double warm_s = std::chrono::duration<double>(clock::now() - t0).count();
  std::printf("%s on %s, tp %d: cold build %.1f s wall, %.1f s CPU (%zu points simulated, %d jobs), warm build %.3f s (%zu from the cache)\n",
              r.model.display_name.c_str(), a.name.c_str(), tp, cold_s, cold_cpu_s, cold.simulated, jobs, warm_s, warm.cached);
  if (check > 0) {
    std::mt19937_64 rng(31);
    auto uni = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
    std::vector<PieceQuery> pieces;
    std::vector<std::array<int64_t, 4>> mixes;
    using K = PieceQuery::Kind;
    for (int k = 0; k < check; ++k) {
      // chunk, context, batch, mean KV: a batch whose KV cache fits the replica (batch x KV <= capacity),
      // a chunk and its context within the model's context (Llama-3-8B's 8,192 cut nothing; the
      // figures before the cut drew up to 6,144 tokens for Llama-2's 4,096 and GPT-J's 2,048)
      const int64_t batch = uni(1, 256), ctx = r.model.context;
      const int64_t chunk = uni(1, std::min<int64_t>(2048, ctx - 1));
      const std::array<int64_t, 4> m = {chunk, uni(0, std::min<int64_t>(4096, ctx - chunk)), batch,
                                        uni(16, std::max<int64_t>(16, std::min<int64_t>({4096, capacity / batch, ctx})))};
      mixes.push_back(m);
      pieces.push_back({K::kDense, m[0] + m[2], 0});
      pieces.push_back({K::kDecode, m[2], m[3]});
      pieces.push_back({K::kPrefill, m[0], m[1]});
    }
    t0 = clock::now();
    const std::vector<CostPoint> sim = simulate_pieces(r, pieces);
    const double sim_s = std::chrono::duration<double>(clock::now() - t0).count();
    double worst = 0, sum = 0;
    std::array<double, 3> piece_worst{}, piece_sum{};  // dense, decode, prefill alone
    for (size_t k = 0; k < mixes.size(); ++k) {
      const auto& m = mixes[k];
      const std::array<double, 3> alone = {cold.dense(m[0] + m[2]).seconds, cold.decode_attention(m[2], m[3]).seconds,
                                           cold.prefill_attention(m[0], m[1]).seconds};
      for (size_t p = 0; p < 3; ++p) {
        const double e = std::abs(alone[p] - sim[3 * k + p].seconds) / sim[3 * k + p].seconds;
        piece_worst[p] = std::max(piece_worst[p], e);
        piece_sum[p] += e;
      }
      const double interp = cold.dense(m[0] + m[2]).seconds + cold.decode_attention(m[2], m[3]).seconds +
                            cold.prefill_attention(m[0], m[1]).seconds;
      const double direct = sim[3 * k].seconds + sim[3 * k + 1].seconds + sim[3 * k + 2].seconds;
      const double e = std::abs(interp - direct) / direct;
      const bool piece_off = std::getenv("SHOW_PIECES") && std::abs(alone[1] - sim[3 * k + 1].seconds) > 0.03 * sim[3 * k + 1].seconds;
      if (e > 0.03 || piece_off) {
        std::printf("  mix %zu: chunk %lld over %lld, decode %lld x %lld: error %.1f%% (dense %.3g/%.3g, decode %.3g/%.3g, prefill %.3g/%.3g s)\n",
                    k, (long long)m[0], (long long)m[1], (long long)m[2], (long long)m[3], 100 * e, cold.dense(m[0] + m[2]).seconds,
                    sim[3 * k].seconds, cold.decode_attention(m[2], m[3]).seconds, sim[3 * k + 1].seconds,
                    cold.prefill_attention(m[0], m[1]).seconds, sim[3 * k + 2].seconds);
      }
      worst = std::max(worst, e);
      sum += e;
    }
    std::printf("%d random mixes (chunk 1-2048 over 0-4096, chunk + context <= %lld, decode 1-256 x 16-min(4096, %lld / batch) KV): interpolation error mean %.2f%%, worst %.2f%% (direct simulation %.1f s)\n",
                check, (long long)r.model.context, (long long)capacity, 100 * sum / check, 100 * worst, sim_s);
    std::printf("  each piece alone, mean / worst: dense %.2f%% / %.2f%%, decode %.2f%% / %.2f%%, prefill %.2f%% / %.2f%%\n",
                100 * piece_sum[0] / check, 100 * piece_worst[0], 100 * piece_sum[1] / check, 100 * piece_worst[1],
                100 * piece_sum[2] / check, 100 * piece_worst[2]);
  }
  if (!keep) fs::remove_all(r.cache_dir);
  return 0;
}
