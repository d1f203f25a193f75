// The LLM iteration cost table (sim/serve/llm/cost_table.h) against direct simulation, on a
// tiny model and a small chip (tests/sim/serve/llm/tiny-*.yaml) so that CI can afford it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "sim/common/error.h"
#include "sim/compiler/compiler.h"
#include "sim/serve/llm/cost_table.h"
#include "sim/serve/llm/model_spec.h"

namespace fs = std::filesystem;
using namespace tessera::serve::llm;

namespace {

const fs::path kHere = fs::path(TESSERA_SOURCE_DIR) / "tests/sim/serve/llm";

CostTableRequest tiny_request() {
  set_pass_planner(&tessera::compiler::samples_per_pass);  // as the tessera executable wires it
  CostTableRequest r;
  r.arch = kHere / "tiny-chip.yaml";
  r.model = load_llm_model(kHere / "tiny-llm.yaml");
  r.shard = shard_layer(r.model, 1, "test");
  r.grid = CostGrid::standard(64, 8, r.model.context, 32, 4);  // tiny-chip.yaml: a 32 x 32 array; GQA groups of 4
  r.runner_exe = fs::path(TESSERA_BINARY_DIR) / "tessera";
  r.jobs = 2;
  return r;
}

double rel(double a, double b) { return std::abs(a - b) / b; }

}  // namespace

// 50 random mixes (one prefill chunk with context, a decode batch at a mean KV length): the
// iteration's layer cost (dense + decode attention + prefill attention) interpolated vs
// simulated at exactly those sizes, within 3% (issue 31; worst 0.34% at seed 31). Each piece
// alone within 5% (worst 3.7%).
TEST(LlmCostTable, InterpolationWithinThreePercentOfSimulation) {
  const CostTableRequest r = tiny_request();
  const LayerCostTable t = build_cost_table(r);
  ASSERT_GT(t.simulated, 50u);
  std::mt19937_64 rng(31);
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  struct Mix {
    int64_t chunk, context, batch, kv;
  };
  std::vector<Mix> mixes;
  std::vector<PieceQuery> pieces;
  using K = PieceQuery::Kind;
  for (int k = 0; k < 50; ++k) {
    Mix m{uniform(1, 48), uniform(0, 400), uniform(1, 8), uniform(16, 500)};
    mixes.push_back(m);
    pieces.push_back({K::kDense, m.chunk + m.batch, 0});
    pieces.push_back({K::kDecode, m.batch, m.kv});
    pieces.push_back({K::kPrefill, m.chunk, m.context});
  }
  const std::vector<CostPoint> sim = simulate_pieces(r, pieces);
  double worst = 0, worst_piece = 0;
  for (size_t k = 0; k < mixes.size(); ++k) {
    const Mix& m = mixes[k];
    const double dense = t.dense(m.chunk + m.batch).seconds, decode = t.decode_attention(m.batch, m.kv).seconds,
                 prefill = t.prefill_attention(m.chunk, m.context).seconds;
    const double s_dense = sim[3 * k].seconds, s_decode = sim[3 * k + 1].seconds, s_prefill = sim[3 * k + 2].seconds;
    worst_piece = std::max({worst_piece, rel(dense, s_dense), rel(decode, s_decode), rel(prefill, s_prefill)});
    EXPECT_LT(rel(dense, s_dense), 0.05) << "dense " << m.chunk + m.batch;
    EXPECT_LT(rel(decode, s_decode), 0.05) << "decode " << m.batch << " x " << m.kv;
    EXPECT_LT(rel(prefill, s_prefill), 0.05) << "prefill " << m.chunk << " over " << m.context;
    const double e = rel(dense + decode + prefill, s_dense + s_decode + s_prefill);
    worst = std::max(worst, e);
    EXPECT_LT(e, 0.03) << "mix " << k;
  }
  RecordProperty("worst_mix_error", std::to_string(worst));
  std::printf("worst mix error %.4f, worst piece error %.4f\n", worst, worst_piece);
}

// W8A8: int8 weights run int8 x int8 on the array (tpu-v6e's 2x-rate mode, half the weight
// bytes): the 64-token dense piece is faster than at bf16. fp8 and int4 weights need MAC modes
// the chip does not have (bf16 x int4, fp8 x fp8): the run's exit-2 error names them.
TEST(LlmCostTable, WeightDtypesRunOnTheChipsModes) {
  CostTableRequest r = tiny_request();
  using K = PieceQuery::Kind;
  const double bf16 = simulate_pieces(r, {{K::kDense, 64, 0}})[0].seconds;
  r.precision.weights = tessera::Dtype::kInt8;
  const double int8 = simulate_pieces(r, {{K::kDense, 64, 0}})[0].seconds;
  EXPECT_LT(int8, bf16);
  // The v6e template has fp8 and bf16 x int4 modes (as bf16, at its rate: configs/tpu-v6e.yaml);
  // their weights are narrower, so no slower than bf16.
  for (tessera::Dtype d : {tessera::Dtype::kInt4, tessera::Dtype::kFp8E4m3}) {
    r.precision.weights = d;
    EXPECT_LE(simulate_pieces(r, {{K::kDense, 64, 0}})[0].seconds, bf16) << tessera::dtype_name(d);
  }
  // A chip with only bf16 and int8 modes refuses them, naming mac_modes.
  const fs::path narrow = fs::path(::testing::TempDir()) / "tiny-chip-bf16-int8.yaml";
  {
    std::ofstream f(narrow);
    f << "base: " << (kHere / "tiny-chip.yaml").string() << "\n"
      << "matrix_units:\n  mac_modes: [{a: bf16, b: bf16, rate: 1.0}, {a: int8, b: int8, rate: 2.0}]\n";
  }
  r.arch = narrow;
  for (tessera::Dtype d : {tessera::Dtype::kInt4, tessera::Dtype::kFp8E4m3}) {
    r.precision.weights = d;
    try {
      simulate_pieces(r, {{K::kDense, 64, 0}});
      ADD_FAILURE() << "no error for " << tessera::dtype_name(d);
    } catch (const tessera::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("mac_modes"), std::string::npos) << e.what();
    }
  }
}

// Passes of S = 4 at one KV length (a hand-made table: one pass of 1, 2 and 4 sequences costs
// 1, 1.5 and 2.5 s, 10 J a second). More sequences run as full passes and a leftover, each
// costing what it costs alone (a later pass's hazards meet only the bytes it overwrites).
TEST(LlmCostTable, PassesAndTheLeftoverAddUp) {
  LayerCostTable::PassTable t;
  t.kv_tile = 1;
  t.tiles = {1};
  LayerCostTable::PassColumn c;
  c.kv = 1;
  c.samples = {1, 2, 4};
  c.cost = {{1.0, 10.0}, {1.5, 15.0}, {2.5, 25.0}};
  t.begun = {c};
  t.full = {c};
  t.passes = {{1, 4}};
  EXPECT_NEAR(t.cost(3, 1).seconds, 2.0, 1e-12);               // within one pass: interpolated
  EXPECT_NEAR(t.cost(8, 1).seconds, 2.5 + 2.5, 1e-12);         // two full passes
  EXPECT_NEAR(t.cost(9, 1).seconds, 2.5 + 2.5 + 1.0, 1e-12);   // and a leftover of 1
  EXPECT_NEAR(t.cost(11, 1).seconds, 2.5 + 2.5 + 2.0, 1e-12);  // a leftover of 3
  EXPECT_NEAR(t.cost(12, 1).seconds, 3 * 2.5, 1e-12);          // three full passes
  EXPECT_NEAR(t.cost(11, 1).energy_j, 70.0, 1e-9);
}

// A decode batch at its sequences' own KV lengths (issue 31 review): the batch's cost at the
// mean length, shared out by what each sequence alone costs. A hand-made table, 4-token
// tiles; one sequence: 1.0 s at a tile begun, 1.3 s full, +1 s a tile; two: 1.5 / 2.1, +2 s a
// tile; energy 10 J a second.
TEST(LlmCostTable, DecodeAttentionPerSequence) {
  LayerCostTable t;
  t.kv_tile = 4;
  auto pts = [](std::vector<double> s) {
    std::vector<CostPoint> v;
    for (double x : s) v.push_back({x, 10 * x});
    return v;
  };
  const std::vector<CostPoint> one_begun = pts({1.0, 2.0, 3.0}), one_full = pts({1.3, 2.3, 3.3}),
                                two_begun = pts({1.5, 3.5, 5.5}), two_full = pts({2.1, 4.1, 6.1});
  t.decode_table.kv_tile = 4;
  t.decode_table.tiles = {1, 2, 3};
  for (size_t k = 0; k < 3; ++k) {
    const int64_t tiles = static_cast<int64_t>(k) + 1;
    t.decode_table.begun.push_back({4 * tiles - 3, {1, 2}, {one_begun[k], two_begun[k]}});
    t.decode_table.full.push_back({4 * tiles, {1, 2}, {one_full[k], two_full[k]}});
  }
  t.fill_single_decode();
  // {4, 5}: mean ceil(9 / 2) = 5, the 2-row at 5 tokens (tile 2 begun) 3.5 s. Alone: 4 tokens
  // fill tile 1 (1.3 s), 5 begin tile 2 (2.0 s); at the mean 2.0 s. 3.5 x 3.3 / (2 x 2.0).
  const CostPoint mixed = t.decode_attention(std::vector<int64_t>{4, 5});
  EXPECT_NEAR(mixed.seconds, 3.5 * 3.3 / 4.0, 1e-12);
  EXPECT_NEAR(mixed.energy_j, 35 * 33 / 40.0, 1e-9);
  EXPECT_NEAR(t.decode_attention(2, 5).seconds, 3.5, 1e-12);  // the mean alone: the straddled tile not seen
  // One length: the batch at it. {7, 7}: tile 2 two thirds full, 3.5 + 2/3 x 0.6 = 3.9 s.
  EXPECT_NEAR(t.decode_attention(std::vector<int64_t>{7, 7}).seconds, 3.9, 1e-12);
  EXPECT_NEAR(t.decode_attention(std::vector<int64_t>{6}).seconds, 2.0 + 0.1, 1e-12);
  EXPECT_EQ(t.decode_attention(std::vector<int64_t>{}).seconds, 0.0);
}

// The KV capacity cuts the grid to the mixes an iteration can be (CostGrid::kv_capacity_tokens).
// 4-token tiles {1, 2, 3, 4, 6, 8}, capacity 20 tokens. Decode: two sequences (more than the
// first row's one) hold at most 20 tokens each on average: tiles to 4 (13-16 tokens) and the
// bracket 6 (first token 21); four (more than two): at most 10 each: tiles 1-3 and the bracket
// 4 (first token 13). Prefill, 4-row query blocks, 2 rows a token: 4 blocks (more than 2) hold
// more than 2 x 4 / 2 = 4 tokens, so their KV is at least 5 tokens: tile 2 on.
TEST(LlmCostTable, CapacityCutsTheGridToReachableMixes) {
  CostGrid g;
  g.kv_tile = 4;
  g.q_block_rows = 4;
  g.kv_tiles = {1, 2, 3, 4, 6, 8};
  g.decode_batch = {1, 2, 4};
  g.prefill_blocks = {1, 2, 4};
  using V = std::vector<int64_t>;
  EXPECT_EQ(g.decode_row_tiles(2), g.kv_tiles);  // no capacity given: the whole grid
  g.kv_capacity_tokens = 20;
  EXPECT_EQ(g.decode_row_tiles(0), g.kv_tiles);
  EXPECT_EQ(g.decode_row_tiles(1), (V{1, 2, 3, 4, 6}));
  EXPECT_EQ(g.decode_row_tiles(2), (V{1, 2, 3, 4}));
  EXPECT_EQ(g.prefill_row_tiles(0, 2), g.kv_tiles);
  EXPECT_EQ(g.prefill_row_tiles(1, 2), g.kv_tiles);  // 2 blocks: more than 2 tokens, tile 1
  EXPECT_EQ(g.prefill_row_tiles(2, 2), (V{2, 3, 4, 6, 8}));
}

// The decode batch in the compiler's passes (LayerCostTable::PassTable). tiny-chip.yaml's
// 4 MiB scratchpad holds, per sequence at L KV tokens (tiny-llm: 2 KV heads x 4 query rows,
// head dim 32, bf16), q 2x4x32x2 = 512 B, K and V 2x32xLx2 B each and the scores 2x4xLx2 B when
// the first product runs: 512 + 272 L B. At 256 KV that is 70,144 B: passes of 4,194,304 /
// 70,144 = 59 sequences; at 239 KV 65,520 B: 64; at 200 KV 54,912 B: 76. Passes add up: 118
// sequences (two full passes) cost twice 59, and 117 (a full pass and a leftover of 58) cost 59
// and 58 alone (a later pass's hazard regions do not meet the previous pass's: Lowering::
// pass_row_shift_samples_). At 256 KV (a tile column, its pass simulated) and 239 KV (between
// columns), batches mid-step (a leftover in either half of a pass, a third pass) are within 3%
// of direct simulation.
TEST(LlmCostTable, DecodeBatchStepsAtTheCompilersPasses) {
  CostTableRequest r = tiny_request();
  CostGrid& g = r.grid;
  g.kv_tile = 32;
  g.q_block_rows = 32;
  g.dense_tiles = {1};
  g.head_tiles = {1};
  g.prefill_blocks = {1};
  g.kv_tiles = {1, 2, 3, 4, 5, 6, 7, 8, 10, 12};
  g.decode_batch = {1, 2, 4, 8, 16, 32, 64, 128, 192};
  const LayerCostTable t = build_cost_table(r);
  EXPECT_EQ(t.decode_table.samples_per_pass(256), 59);
  EXPECT_EQ(t.decode_table.samples_per_pass(239), 64);
  EXPECT_EQ(t.decode_table.samples_per_pass(240), 63);
  EXPECT_EQ(t.decode_table.samples_per_pass(200), 76);
  using K = PieceQuery::Kind;
  const std::vector<std::pair<int64_t, int64_t>> mixes = {{59, 256}, {117, 256}, {118, 256}, {74, 256}, {104, 256},
                                                          {150, 256}, {80, 239}, {110, 239}, {150, 239}, {58, 256}};
  std::vector<PieceQuery> q;
  for (const auto& [b, kv] : mixes) q.push_back({K::kDecode, b, kv});
  const std::vector<CostPoint> sim = simulate_pieces(r, q);
  EXPECT_NEAR(sim[2].seconds, 2 * sim[0].seconds, 1e-3 * sim[2].seconds);  // passes add up
  EXPECT_NEAR(sim[1].seconds, sim[0].seconds + sim[9].seconds, 1e-3 * sim[1].seconds);  // a leftover as alone
  double worst = 0;
  for (size_t k = 0; k < mixes.size(); ++k) {
    const double e = rel(t.decode_attention(mixes[k].first, mixes[k].second).seconds, sim[k].seconds);
    worst = std::max(worst, e);
    EXPECT_LT(e, 0.03) << mixes[k].first << " x " << mixes[k].second;
  }
  std::printf("worst decode error across the passes %.4f\n", worst);
}
