#pragma once
// Iteration cost tables from the cycle model (issue 31 item 3). The pieces of one decoder
// layer (layer_graphs.h) are simulated on the chip over grids of their sizes, each a
// `tessera run` child started through the sweep's runner (SystemC elaborates once per
// process), and memoized on disk per (chip, model, precision, tensor-parallel degree, grid):
// a second build with the same inputs simulates nothing. Between grid points the cost is
// interpolated linearly (beyond the grid the last segment extends); see CostGrid for the KV
// axis and the prefill query blocks.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/config/arch_config.h"
#include "sim/graph/graph.h"
#include "sim/serve/llm/layer_graphs.h"
#include "sim/serve/llm/model_spec.h"

namespace tessera::serve::llm {

// The sizes simulated. KV lengths are costed by array tiles of `kv_tile` tokens: for each tile
// count k of the grid, two points, the tile just begun ((k-1) x kv_tile + 1 tokens) and full
// (k x kv_tile): a matmul that costs by the tile (compute-bound: a staircase) and one that
// costs by the byte (memory-bound: a line) are both affine between those two, and affine in k
// across the grid. A prefill chunk's queries run in blocks of `q_block_rows` rows (the query
// heads of a GQA group x its tokens), each block over the whole KV length, as a flash-
// attention kernel tiles them: its cost is affine in the block count.
struct CostGrid {
  int64_t kv_tile = 1;
  int64_t q_block_rows = 1;
  std::vector<int64_t> dense_tiles;     // the iteration's tokens, in tiles of kv_tile rows
  std::vector<int64_t> decode_batch;    // decode sequences
  std::vector<int64_t> kv_tiles;        // tile counts (decode and prefill KV lengths)
  std::vector<int64_t> prefill_blocks;  // query blocks of a chunk
  std::vector<int64_t> head_tiles;      // LM-head rows, in tiles of kv_tile rows
  // > 0: the replica's KV-cache capacity in tokens. A decode batch of B sequences never holds
  // more than this in all, so a decode row simulates KV lengths only up to what a batch of
  // the previous row's size can reach (capacity / that size), and the tile point just beyond
  // (the interpolation's bracket); a prefill row of N query blocks only KV lengths from what a
  // chunk of more blocks than the previous row's holds (a chunk attends over itself at least).
  // The points left out are mixes no iteration can be. 0: the whole grid.
  int64_t kv_capacity_tokens = 0;
  // The KV tile counts decode row `row` (decode_batch[row]) and prefill row `row`
  // (prefill_blocks[row]) simulate: kv_tiles, cut as kv_capacity_tokens says.
  std::vector<int64_t> decode_row_tiles(size_t row) const;
  std::vector<int64_t> prefill_row_tiles(size_t row, int64_t query_rows_per_token) const;
  // The tokens of the dense part and the LM head's rows are tiled as the KV lengths are (their
  // cost is a staircase of the array width too once compute-bound: +16% a step at 1,024-1,600
  // tokens of Llama-3-8B on tpu-v6e). Tile counts every one to 8, then two an octave; decode
  // batches two an octave, prefill blocks doubling.
  static CostGrid standard(int64_t max_tokens, int64_t max_batch, int64_t context, int64_t kv_tile,
                           int64_t query_rows_per_token);
};

struct CostPoint {
  double seconds = 0;
  double energy_j = 0;
  double idle_w = 0;  // simulate_pieces only: the run's idle power
};

struct CostTableRequest {
  std::filesystem::path arch;        // chip config, absolute
  LlmModelSpec model;
  LayerShard shard;
  LayerPrecision precision;
  CostGrid grid;
  std::filesystem::path cache_dir;   // "" = a temporary directory, removed after the build
  std::filesystem::path runner_exe;  // the `tessera` executable
  int jobs = 2;
  bool quiet = true;
};

// One layer's pieces on one chip, interpolated. Costs are per layer (multiply by layers).
class LayerCostTable {
 public:
  CostPoint dense(int64_t tokens) const;
  CostPoint decode_attention(int64_t sequences, int64_t kv_tokens) const;
  // A decode batch of sequences at their own KV lengths: the batch simulated at the mean
  // length (its total KV tokens over its size, rounded up), shared out in proportion to what
  // each sequence alone costs at its length, so that a batch at one length costs what the
  // table says and a batch whose lengths straddle array tiles pays each one's tiles.
  CostPoint decode_attention(const std::vector<int64_t>& kv_lengths) const;
  CostPoint prefill_attention(int64_t tokens, int64_t context_tokens) const;
  CostPoint lm_head(int64_t rows) const;

  int64_t kv_tile = 1;
  int64_t q_block_rows = 1;
  int64_t query_rows_per_token = 1;
  double idle_w = 0;      // the chip's idle power (the energy model's power_vs_load.idle_w)
  size_t simulated = 0;   // points this build simulated
  size_t cached = 0;      // ... found in the cache
  std::string key;        // the cache key (hex)

  // One value of the first axis: dense/head tokens or rows (no tiles), prefill query blocks;
  // over the tile grid, the costs at a tile begun and full.
  struct Row {
    int64_t a = 0;
    std::vector<int64_t> tiles;
    std::vector<CostPoint> begun, full;
  };
  std::vector<Row> dense_rows, prefill_rows, head_rows;

  // Decode attention runs its samples (the graph's batch: one a sequence) in the compiler's
  // passes: when they do not fit the unified buffer at a KV length, passes of S samples (the
  // most that fit, samples_per_pass), then one pass of the rest. Costs add up pass by pass, the
  // leftover included: GPT-J-6B on tpu-v6e at 83 KV, S = 97, 216 sequences cost twice 97 and 22
  // alone (468.184 us), seconds and joules. So the first axis steps at multiples of S, and S
  // halves as the KV length doubles: no fixed grid of batches brackets the steps. A PassTable
  // costs B samples as their passes, each a single pass interpolated over KV columns that hold
  // only single-pass sizes (<= S at the column's KV).
  struct PassColumn {
    int64_t kv = 0;
    std::vector<int64_t> samples;  // ascending, each <= the column's pass (one pass)
    std::vector<CostPoint> cost;
  };
  struct PassTable {
    int64_t kv_tile = 1;
    std::vector<int64_t> tiles;                // KV tile counts of the columns
    std::vector<PassColumn> begun, full;       // [i]: at tiles[i], a tile begun / full
    // The compiler's pass in samples from each KV length on: (first KV length, S), ascending
    // KV; S capped at the grid's largest size (no step within it). Empty: one pass always.
    std::vector<std::pair<int64_t, int64_t>> passes;
    int64_t samples_per_pass(int64_t kv_tokens) const;
    // One pass of `samples` (at most a pass) at kv_tokens: the columns interpolated.
    CostPoint single_pass(double samples, int64_t kv_tokens) const;
    // `samples` in passes.
    CostPoint cost(int64_t samples, int64_t kv_tokens) const;
  };
  PassTable decode_table;

  // One sequence's decode cost by KV tiles (one sequence, evaluated at every tile count up to
  // the grid's last: a lookup per sequence instead of an interpolation).
  // Filled by build_cost_table; decode_attention(lengths) falls back to the columns without it.
  struct TileCosts {
    std::vector<CostPoint> begun, full;  // [k - 1]: at k tiles
  };
  TileCosts single_decode;
  void fill_single_decode();
};

LayerCostTable build_cost_table(const CostTableRequest& r);

// The compiler's pass: the samples of `batch` one pass through `graph` holds on the chip
// (compiler::samples_per_pass). Serving does not include the compiler (DESIGN.md §2: its costs
// come from `tessera run` children), so the executable wires it in (sim/cli/main.cpp; bench and
// tests likewise). Not set: decode batches are costed as one pass (the columns' batches, all).
using PassPlanner = int64_t (*)(const graph::Graph& graph, const ArchConfig& arch, int64_t batch);
void set_pass_planner(PassPlanner planner);

// The pieces at exactly these sizes, simulated (no table, no cache): what the interpolation
// is tested against. Each returns one value per request, in order.
struct PieceQuery {
  enum class Kind { kDense, kDecode, kPrefill, kHead } kind = Kind::kDense;
  int64_t a = 0, b = 0;  // dense/head: (tokens, -); decode: (sequences, KV tokens); prefill: (tokens, context)
};
std::vector<CostPoint> simulate_pieces(const CostTableRequest& r, const std::vector<PieceQuery>& pieces);

}  // namespace tessera::serve::llm
