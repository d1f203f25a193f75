#pragma once
// Iteration cost tables from the cycle model (issue 31 item 3). The pieces of one decoder
// layer (layer_graphs.h) are simulated on the chip over grids of their sizes, each a
// `tessera run` child started through the sweep's runner (SystemC elaborates once per
// process), and memoized on disk per (chip, model, precision, tensor-parallel degree, grid):
// a second build with the same inputs simulates nothing. Between grid points the cost is
// interpolated linearly (bilinearly over two axes; beyond the grid the last segment extends).
// KV lengths are rounded up to whole array tiles first: the score and context matmuls cost by
// the tile (a staircase in the KV length, ~20% a step on a 32-wide array), affine in the tile
// count; the tokens of the dense part and of a chunk stream through the array (affine).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/serve/llm/layer_graphs.h"
#include "sim/serve/llm/model_spec.h"

namespace tessera::serve::llm {

// The sizes simulated. Each axis doubles from its first value; prefill's second axis is the
// chunk's whole KV length (context + chunk tokens), from the chunk's own tokens in whole tiles.
struct CostGrid {
  int64_t kv_tile = 1;                  // KV lengths are costed in multiples of this (the array's width)
  std::vector<int64_t> dense_tokens;    // tokens of an iteration
  std::vector<int64_t> decode_batch;    // decode sequences
  std::vector<int64_t> decode_kv;       // mean KV tokens per decode sequence
  std::vector<int64_t> prefill_tokens;  // chunk tokens
  int64_t prefill_max_kv = 0;           // largest context + chunk
  std::vector<int64_t> head_rows;       // LM-head rows
  // Powers of two: dense up to max_tokens, decode batch up to max_batch, KV from one tile up to the context.
  static CostGrid doubling(int64_t max_tokens, int64_t max_batch, int64_t context, int64_t kv_tile);
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
  CostPoint prefill_attention(int64_t tokens, int64_t context_tokens) const;
  CostPoint lm_head(int64_t rows) const;

  int64_t kv_tile = 1;
  double idle_w = 0;      // the chip's idle power (the energy model's power_vs_load.idle_w)
  size_t simulated = 0;  // points this build simulated
  size_t cached = 0;     // ... found in the cache
  std::string key;       // the cache key (hex)

  // Filled by build_cost_table: one entry per grid point.
  struct Row {
    int64_t a = 0;  // dense/head: tokens/rows; decode: sequences; prefill: chunk tokens
    std::vector<int64_t> b;  // decode: KV tokens; prefill: whole KV lengths (context + chunk)
    std::vector<CostPoint> cost;  // one per b (one entry for dense/head)
  };
  std::vector<Row> dense_rows, decode_rows, prefill_rows, head_rows;
};

LayerCostTable build_cost_table(const CostTableRequest& r);

// The pieces at exactly these sizes, simulated (no table, no cache): what the interpolation
// is tested against. Each returns one value per request, in order.
struct PieceQuery {
  enum class Kind { kDense, kDecode, kPrefill, kHead } kind = Kind::kDense;
  int64_t a = 0, b = 0;  // dense/head: (tokens, -); decode: (sequences, KV tokens); prefill: (tokens, context)
};
std::vector<CostPoint> simulate_pieces(const CostTableRequest& r, const std::vector<PieceQuery>& pieces);

// Linear interpolation over an ascending grid xs, the end segments extended (not below half
// the smallest of the first two values).
double interpolate_linear(const std::vector<double>& xs, const std::vector<double>& ys, double x);

}  // namespace tessera::serve::llm
