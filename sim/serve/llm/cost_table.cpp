#include "sim/serve/llm/cost_table.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <fstream>
#include <iostream>
#include <map>
#include <limits>
#include <optional>
#include <sstream>

#include "sim/common/config_files_hash.h"
#include "sim/common/error.h"
#include "sim/common/fnv_hash.h"
#include "sim/common/yaml_reader.h"
#include "sim/config/arch_config.h"
#include "sim/graph/graph.h"
#include "sim/sweep/experiment.h"
#include "sim/sweep/runner.h"
#include "sim/sweep/sweep_files.h"

namespace fs = std::filesystem;

namespace tessera::serve::llm {
namespace {

constexpr int kCacheVersion = 1;  // points are keyed by piece: new ones are simulated and added


// Everything but the piece sizes that decides a simulated cost.
std::string table_key(const CostTableRequest& r) {
  Fnv1a64 f;
  f.add_line("tessera llm cost table v" + std::to_string(kCacheVersion));
  f.add_file(r.runner_exe);
  add_config_files(f, r.arch);  // and its `base:` chain
  f.add_file(r.model.source);
  f.add_line("tp " + std::to_string(r.shard.tp));
  f.add_line("weights " + std::string(dtype_name(r.precision.weights)) + " kv " + std::string(dtype_name(r.precision.kv)));
  return f.hex();
}

// What is simulated: the public queries mapped onto the table's axes (prefill chunks to query blocks).
struct Piece {
  enum class Kind { kDense, kDecode, kPrefill, kHead } kind = Kind::kDense;
  int64_t a = 0, b = 0;  // dense/head: (tokens, -); decode: (sequences, KV tokens); prefill: (blocks, KV tokens)
};

std::string piece_id(const Piece& q) {
  switch (q.kind) {
    case Piece::Kind::kDense: return "dense_t" + std::to_string(q.a);
    case Piece::Kind::kDecode: return "decode_b" + std::to_string(q.a) + "_l" + std::to_string(q.b);
    case Piece::Kind::kPrefill: return "prefill_n" + std::to_string(q.a) + "_kv" + std::to_string(q.b);
    case Piece::Kind::kHead: return "head_n" + std::to_string(q.a);
  }
  return "";
}

std::string json_string(const std::string& s) { return nlohmann::json(s).dump(); }

// Waits for other builds on the same cache directory (a sweep's points share one table).
class CacheLock {
 public:
  explicit CacheLock(const fs::path& dir) {
    fd_ = sweep::open_no_follow(dir / ".llm-cost.lock", O_RDWR | O_CREAT, "cannot create");
    ::flock(fd_, LOCK_EX);
  }
  ~CacheLock() { ::close(fd_); }
  CacheLock(const CacheLock&) = delete;
  CacheLock& operator=(const CacheLock&) = delete;

 private:
  int fd_ = -1;
};

// Simulates `pieces` (distinct) in `work`, jobs at a time, through the sweep's runner.
std::vector<CostPoint> run_pieces(const CostTableRequest& r, const std::vector<Piece>& pieces, const fs::path& work) {
  std::vector<CostPoint> out(pieces.size());
  if (pieces.empty()) return out;
  sweep::make_output_dir(work);
  sweep::make_output_dir(work / "graphs");
  std::ostringstream y;
  y << "name: llm-cost-table\n";
  y << "base: " << json_string(r.arch.string()) << "\n";
  y << "workloads:\n";
  std::map<std::string, size_t> index;
  for (size_t k = 0; k < pieces.size(); ++k) {
    const Piece& q = pieces[k];
    std::string text;
    int64_t batch = 1;
    switch (q.kind) {
      case Piece::Kind::kDense: text = dense_graph_yaml(r.model, r.shard, r.precision, q.a); break;
      case Piece::Kind::kDecode:
        text = decode_attention_graph_yaml(r.model, r.shard, r.precision, q.a, q.b);
        batch = q.a;
        break;
      case Piece::Kind::kPrefill:
        text = prefill_attention_graph_yaml(r.model, r.shard, r.precision, q.a, r.grid.q_block_rows, q.b);
        batch = q.a * r.shard.kv_heads;
        break;
      case Piece::Kind::kHead: text = lm_head_graph_yaml(r.model, r.shard, r.precision, q.a); break;
    }
    const std::string id = piece_id(q);
    const fs::path file = work / "graphs" / (id + ".yaml");
    sweep::replace_file(file, text);
    index[id] = k;
    y << "  - path: " << json_string(file.string()) << "\n    name: " << id << "\n    batch: [" << batch << "]\n";
  }
  y << "metrics: [summary.latency_s, summary.energy_j, summary.power_vs_load.idle_w]\n";
  const sweep::Experiment e = sweep::parse_experiment(YamlNode::load_string(y.str(), "<llm cost table>"), work);
  sweep::RunSettings s;
  s.out_dir = work;
  s.runner_exe = r.runner_exe;
  s.jobs = std::max(1, r.jobs);
  s.keep_reports = false;
  if (!r.quiet) {
    std::cerr << "serve-llm: simulating " << pieces.size() << " layer piece(s) of " << r.model.display_name << " on "
              << r.arch.filename().string() << " (" << s.jobs << " at a time)\n";
  }
  sweep::LocalPool pool(e, s);
  size_t next = 0, done = 0;
  std::string first_error;
  bool input_error = false;
  while (done < e.points.size()) {
    while (pool.has_room() && next < e.points.size()) pool.start(e.points[next++]);
    for (const sweep::Row& row : pool.poll(200)) {
      ++done;
      if (!row.ok) {
        if (first_error.empty()) {
          first_error = row.workload + ": " + row.error;
          input_error = row.error.rfind("exit 2", 0) == 0;
        }
        continue;
      }
      CostPoint c;
      for (const auto& [name, value] : row.metrics) {
        const double v = value.kind == sweep::Value::Kind::kInt ? static_cast<double>(value.i) : value.d;
        if (name == "summary.latency_s") c.seconds = v;
        if (name == "summary.energy_j") c.energy_j = v;
        if (name == "summary.power_vs_load.idle_w") c.idle_w = v;
      }
      out[index.at(row.workload)] = c;
    }
  }
  if (!first_error.empty()) {
    const std::string msg = "simulating the iteration cost of " + r.model.display_name + " on " + r.arch.string() + ": " + first_error;
    if (input_error) throw InputError(msg);
    throw std::runtime_error(msg);
  }
  return out;
}

// A private directory for runs when no cache directory is given.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "tessera-llm-cost-XXXXXX").string();
    if (!::mkdtemp(t.data())) throw std::runtime_error("cannot create a temporary directory for the cost table");
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// first x {1, 2, 3, 4, 6, 8, ...} (two points an octave) or x {1, 2, 4, ...} up to last (included).
std::vector<int64_t> octave_points(int64_t first, int64_t last, int per_octave) {
  std::vector<int64_t> v;
  for (int64_t x = first; x < last;) {
    v.push_back(x);
    int64_t step = x;  // the next point: x + x / per_octave ... at least 1
    if (per_octave == 2) step = (x & (x - 1)) == 0 ? x / 2 : x / 3;
    if (per_octave == 4) {
      int64_t p = 1;
      while (p * 2 <= x) p *= 2;
      step = p / 4;
    }
    x += std::max<int64_t>(1, step);
  }
  v.push_back(std::max(first, last));
  return v;
}

int64_t ceil_div(int64_t x, int64_t q) { return (x + q - 1) / q; }

}  // namespace

CostGrid CostGrid::standard(int64_t max_tokens, int64_t max_batch, int64_t context, int64_t kv_tile,
                            int64_t query_rows_per_token) {
  CostGrid g;
  g.kv_tile = kv_tile;
  g.q_block_rows = kv_tile;
  auto tiles_to = [](int64_t tiles) {
    std::vector<int64_t> v;
    for (int64_t k = 1; k < std::min<int64_t>(8, tiles); ++k) v.push_back(k);
    for (int64_t k : octave_points(std::min<int64_t>(8, tiles), tiles, 2)) v.push_back(k);
    return v;
  };
  // Every tile of the dense part: its steps are uneven (Llama-2-7B / tpu-v5e at tp 8: +10% at
  // the 9th 256-token tile, then 0.04 us a token where it was 0.3), so that a tile count
  // interpolated over octaves, or a midpoint on the chord, missed it by 8%.
  for (int64_t k = 1; k <= ceil_div(max_tokens, kv_tile); ++k) g.dense_tiles.push_back(k);
  g.decode_batch = octave_points(1, max_batch, 2);  // two an octave: doubling rows missed 12% mid-octave (Llama-3-8B, 216 x 213 KV)
  g.kv_tiles = tiles_to(ceil_div(context, kv_tile));
  g.prefill_blocks = octave_points(1, ceil_div(std::min(max_tokens, context) * query_rows_per_token, g.q_block_rows), 1);
  g.head_tiles = tiles_to(ceil_div(std::min(max_tokens, max_batch * 2), kv_tile));
  return g;
}

// The KV tile counts decode row `row` simulates (CostGrid::kv_capacity_tokens): a batch of more
// sequences than the previous row's holds under capacity / that many tokens a sequence on
// average, so the row stops at the first tile point whose first token is beyond that.
std::vector<int64_t> CostGrid::decode_row_tiles(size_t row) const {
  const CostGrid& g = *this;
  if (g.kv_capacity_tokens <= 0 || row == 0) return g.kv_tiles;
  const int64_t reach = g.kv_capacity_tokens / g.decode_batch[row - 1];
  std::vector<int64_t> v;
  for (int64_t k : g.kv_tiles) {
    v.push_back(k);
    if ((k - 1) * g.kv_tile + 1 > reach) break;
  }
  return v;
}

// The KV tile counts prefill row `row` simulates: a chunk of more query blocks than the
// previous row's has more than previous x q_block_rows / query_rows_per_token tokens, and it
// attends over itself, so the row starts at the last tile point at or below that length's tile.
std::vector<int64_t> CostGrid::prefill_row_tiles(size_t row, int64_t query_rows_per_token) const {
  const CostGrid& g = *this;
  if (g.kv_capacity_tokens <= 0 || row == 0) return g.kv_tiles;
  const int64_t shortest = g.prefill_blocks[row - 1] * g.q_block_rows / query_rows_per_token + 1;
  const int64_t first_tile = ceil_div(shortest, g.kv_tile);
  size_t from = 0;
  for (size_t j = 0; j < g.kv_tiles.size(); ++j)
    if (g.kv_tiles[j] <= first_tile) from = j;
  return {g.kv_tiles.begin() + static_cast<std::ptrdiff_t>(from), g.kv_tiles.end()};
}

namespace {

int64_t begun(int64_t tiles, int64_t w) { return (tiles - 1) * w + 1; }

int64_t passes_at(const std::vector<std::pair<int64_t, int64_t>>& runs, int64_t kv) {
  if (runs.empty()) return std::numeric_limits<int64_t>::max();
  auto it = std::upper_bound(runs.begin(), runs.end(), std::make_pair(std::max<int64_t>(kv, 1), std::numeric_limits<int64_t>::max()));
  return it == runs.begin() ? runs.front().second : std::prev(it)->second;
}

// An attention piece's first axis in samples (the graph's batch): decode sequences. (Prefill
// chunks run in passes too, of query blocks x KV heads, but costed so, the prefill piece came
// out worse: mean 2.4% against 1.5% alone at the 50 mixes of Llama-3-8B / tpu-v6e; its blocks
// stay rows, doubling.)
struct SampleAxis {
  std::vector<int64_t> samples;                 // the grid's sizes, ascending
  std::vector<std::vector<int64_t>> row_tiles;  // the KV tiles each size simulates (the capacity's cut)
  int64_t cap() const { return samples.empty() ? 1 : samples.back(); }
};

SampleAxis decode_axis(const CostGrid& g) {
  SampleAxis x;
  x.samples = g.decode_batch;
  for (size_t i = 0; i < g.decode_batch.size(); ++i) x.row_tiles.push_back(g.decode_row_tiles(i));
  return x;
}

// The points simulated, (samples, KV tokens): each KV column (a tile begun and full) at the
// grid's sizes that run in one pass there (and that the capacity lets reach it), and the pass
// itself when smaller than the grid's largest.
std::vector<std::pair<int64_t, int64_t>> pass_points(const CostGrid& g, const SampleAxis& x,
                                                     const std::vector<std::pair<int64_t, int64_t>>& passes) {
  std::vector<std::pair<int64_t, int64_t>> v;
  for (int64_t k : g.kv_tiles) {
    for (int64_t kv : {begun(k, g.kv_tile), k * g.kv_tile}) {
      const int64_t s = passes_at(passes, kv);
      for (size_t i = 0; i < x.samples.size(); ++i) {
        const auto& t = x.row_tiles[i];
        if (x.samples[i] <= s && std::find(t.begin(), t.end(), k) != t.end()) v.emplace_back(x.samples[i], kv);
      }
      if (s < x.cap()) v.emplace_back(s, kv);
      if (g.kv_tile == 1) break;
    }
  }
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::vector<Piece> grid_pieces(const CostGrid& g, int64_t query_rows_per_token, const SampleAxis& decode,
                               const std::vector<std::pair<int64_t, int64_t>>& decode_passes) {
  std::vector<Piece> v;
  using K = Piece::Kind;
  for (int64_t k : g.dense_tiles) {
    v.push_back({K::kDense, begun(k, g.kv_tile), 0});
    if (g.kv_tile > 1) v.push_back({K::kDense, k * g.kv_tile, 0});
  }
  for (const auto& [n, kv] : pass_points(g, decode, decode_passes)) v.push_back({K::kDecode, n, kv});
  for (size_t i = 0; i < g.prefill_blocks.size(); ++i)
    for (int64_t k : g.prefill_row_tiles(i, query_rows_per_token)) {
      v.push_back({K::kPrefill, g.prefill_blocks[i], begun(k, g.kv_tile)});
      if (g.kv_tile > 1) v.push_back({K::kPrefill, g.prefill_blocks[i], k * g.kv_tile});
    }
  for (int64_t k : g.head_tiles) {
    v.push_back({K::kHead, begun(k, g.kv_tile), 0});
    if (g.kv_tile > 1) v.push_back({K::kHead, k * g.kv_tile, 0});
  }
  return v;
}

// Linear interpolation over an ascending grid xs, the end segments extended; below the grid a
// cost cannot fall under half the smaller of the first two points' (the fixed part of a run).
// One point: proportional. y(k) is the k-th point's cost, read only at the first two and the
// bracket of x (the scheduler asks for every iteration: nothing else is evaluated).
template <typename Y>
CostPoint lerp_at(const std::vector<int64_t>& xs, Y y, double x) {
  const size_t n = xs.size();
  if (n == 1) {
    const CostPoint p = y(0);
    const double f = x / static_cast<double>(xs[0]);
    return {p.seconds * f, p.energy_j * f};
  }
  size_t i = 0;
  while (i + 2 < n && x > static_cast<double>(xs[i + 1])) ++i;
  const double t = (x - static_cast<double>(xs[i])) / static_cast<double>(xs[i + 1] - xs[i]);
  const CostPoint y0 = y(0), y1 = y(1), a = i == 0 ? y0 : i == 1 ? y1 : y(i), b = i == 0 ? y1 : y(i + 1);
  return {std::max(a.seconds + t * (b.seconds - a.seconds), 0.5 * std::min(y0.seconds, y1.seconds)),
          std::max(a.energy_j + t * (b.energy_j - a.energy_j), 0.5 * std::min(y0.energy_j, y1.energy_j))};
}

// The fill of the last tile, as eval_row weighs begun and full.
CostPoint between(const CostPoint& lo, const CostPoint& hi, int64_t kv, int64_t k, int64_t w) {
  const double fill = w > 1 ? static_cast<double>(kv - begun(k, w)) / static_cast<double>(w - 1) : 0.0;
  return {lo.seconds + fill * (hi.seconds - lo.seconds), lo.energy_j + fill * (hi.energy_j - lo.energy_j)};
}

// A row at `kv` tokens: the tile count's begun and full costs (each interpolated over the
// tile grid), then between them by how full the last tile is.
CostPoint eval_row(const LayerCostTable::Row& row, int64_t kv, int64_t w) {
  if (row.tiles.empty()) return row.full.at(0);
  const int64_t k = ceil_div(std::max<int64_t>(kv, 1), w);
  const double x = static_cast<double>(k);
  const CostPoint lo = lerp_at(row.tiles, [&](size_t c) { return row.begun[c]; }, x);
  const CostPoint hi = lerp_at(row.tiles, [&](size_t c) { return row.full[c]; }, x);
  return between(lo, hi, kv, k, w);
}

CostPoint eval_rows(const std::vector<LayerCostTable::Row>& rows, double a, int64_t kv, int64_t w) {
  std::vector<int64_t> xs;
  for (const auto& row : rows) xs.push_back(row.a);
  return lerp_at(xs, [&](size_t k) { return eval_row(rows[k], kv, w); }, a);  // the bracketing rows only
}

Piece to_piece(const PieceQuery& q, const CostGrid& g, const LayerShard& s) {
  using K = Piece::Kind;
  switch (q.kind) {
    case PieceQuery::Kind::kDense: return {K::kDense, q.a, 0};
    case PieceQuery::Kind::kDecode: return {K::kDecode, q.a, q.b};
    case PieceQuery::Kind::kPrefill:
      return {K::kPrefill, ceil_div(q.a * (s.heads / s.kv_heads), g.q_block_rows), q.a + q.b};
    case PieceQuery::Kind::kHead: return {K::kHead, q.a, 0};
  }
  return {};
}

}  // namespace

CostPoint LayerCostTable::dense(int64_t tokens) const {
  if (tokens <= 0) return {};
  return eval_rows(dense_rows, 1, tokens, 1);  // refined points, in tokens
}
int64_t LayerCostTable::PassTable::samples_per_pass(int64_t kv_tokens) const { return passes_at(passes, kv_tokens); }

namespace {

CostPoint column_at(const LayerCostTable::PassColumn& c, double samples) {
  return lerp_at(c.samples, [&](size_t k) { return c.cost[k]; }, samples);
}

}  // namespace

CostPoint LayerCostTable::PassTable::single_pass(double samples, int64_t kv_tokens) const {
  if (tiles.empty() || samples <= 0) return {};
  const int64_t kv = std::max<int64_t>(kv_tokens, 1);
  const int64_t k = ceil_div(kv, kv_tile);
  const double x = static_cast<double>(k);
  const CostPoint lo = lerp_at(tiles, [&](size_t c) { return column_at(begun[c], samples); }, x);
  const CostPoint hi = lerp_at(tiles, [&](size_t c) { return column_at(full[c], samples); }, x);
  return between(lo, hi, kv, k, kv_tile);
}

CostPoint LayerCostTable::PassTable::cost(int64_t samples, int64_t kv_tokens) const {
  if (samples <= 0) return {};
  const int64_t kv = std::max<int64_t>(kv_tokens, 1);
  const int64_t s = samples_per_pass(kv);
  if (samples <= s) return single_pass(static_cast<double>(samples), kv);
  // Full passes of s, then a leftover of r in [1, s]: each costs what it costs alone.
  const int64_t n_full = (samples - 1) / s;
  const int64_t r = samples - n_full * s;
  const CostPoint pass = single_pass(static_cast<double>(s), kv);
  const CostPoint rest = r == s ? pass : single_pass(static_cast<double>(r), kv);
  const double n = static_cast<double>(n_full);
  return {n * pass.seconds + rest.seconds, n * pass.energy_j + rest.energy_j};
}

CostPoint LayerCostTable::decode_attention(int64_t sequences, int64_t kv_tokens) const {
  return decode_table.cost(sequences, kv_tokens);
}

void LayerCostTable::fill_single_decode() {
  single_decode = {};
  if (decode_table.tiles.empty()) return;
  for (int64_t k = 1; k <= decode_table.tiles.back(); ++k) {
    single_decode.begun.push_back(decode_table.single_pass(1, begun(k, kv_tile)));
    single_decode.full.push_back(decode_table.single_pass(1, k * kv_tile));
  }
}

CostPoint LayerCostTable::decode_attention(const std::vector<int64_t>& kv_lengths) const {
  if (kv_lengths.empty()) return {};
  const int64_t b = static_cast<int64_t>(kv_lengths.size());
  int64_t sum = 0;
  for (int64_t l : kv_lengths) sum += std::max<int64_t>(l, 1);
  const int64_t mean = (sum + b - 1) / b;
  const CostPoint batch = decode_attention(b, mean);
  if (single_decode.begun.empty()) return batch;
  auto alone = [&](int64_t kv) {
    kv = std::max<int64_t>(kv, 1);
    const int64_t k = ceil_div(kv, kv_tile);
    if (k > static_cast<int64_t>(single_decode.begun.size())) return decode_table.single_pass(1, kv);
    return between(single_decode.begun[static_cast<size_t>(k - 1)], single_decode.full[static_cast<size_t>(k - 1)], kv, k, kv_tile);
  };
  double s = 0, j = 0;
  for (int64_t l : kv_lengths) {
    const CostPoint c = alone(l);
    s += c.seconds;
    j += c.energy_j;
  }
  const CostPoint at_mean = alone(mean);
  const double n = static_cast<double>(b);
  return {at_mean.seconds > 0 ? batch.seconds * s / (n * at_mean.seconds) : batch.seconds,
          at_mean.energy_j > 0 ? batch.energy_j * j / (n * at_mean.energy_j) : batch.energy_j};
}

CostPoint LayerCostTable::prefill_attention(int64_t tokens, int64_t context_tokens) const {
  if (tokens <= 0) return {};
  const int64_t blocks = ceil_div(tokens * query_rows_per_token, q_block_rows);
  return eval_rows(prefill_rows, static_cast<double>(blocks), tokens + context_tokens, kv_tile);
}
CostPoint LayerCostTable::lm_head(int64_t rows) const {
  if (rows <= 0) return {};
  return eval_rows(head_rows, 1, rows, kv_tile);
}

std::vector<CostPoint> simulate_pieces(const CostTableRequest& r, const std::vector<PieceQuery>& queries) {
  TempDir tmp;
  std::vector<Piece> distinct;
  std::map<std::string, size_t> at;
  std::vector<std::string> ids;
  for (const auto& q : queries) {
    const Piece p = to_piece(q, r.grid, r.shard);
    ids.push_back(piece_id(p));
    if (at.emplace(ids.back(), distinct.size()).second) distinct.push_back(p);
  }
  const std::vector<CostPoint> got = run_pieces(r, distinct, tmp.path / "runs");
  std::vector<CostPoint> out;
  for (const auto& id : ids) out.push_back(got[at.at(id)]);
  return out;
}

namespace {

// The dense part's cost has steps the tile grid does not find: the compiler re-tiles a layer
// when its tensors outgrow the on-chip buffer, at token counts that are not multiples of the
// array width (Llama-3-8B / tpu-v6e: +10-16% at 1,025, 1,312 and 1,568 tokens). So the dense
// axis is refined: each interval whose simulated midpoint is off the chord by more than
// kRefineTolerance is halved, down to kRefineMinGap tokens; the points join the cache, so a
// second build simulates nothing. Deterministic: the refinement depends only on simulated costs.
constexpr double kRefineTolerance = 0.01;
constexpr int64_t kRefineMinGap = 1;
constexpr int kRefineRounds = 12;

LayerCostTable::Row refine_dense(const CostTableRequest& r, nlohmann::json& cache, const fs::path& file, const fs::path& dir,
                                 LayerCostTable& t) {
  using K = Piece::Kind;
  std::map<int64_t, CostPoint> pts;
  auto load = [&](int64_t n) {
    const auto& e = cache["points"][piece_id({K::kDense, n, 0})];
    pts[n] = CostPoint{e.at("s").get<double>(), e.at("j").get<double>()};
  };
  for (int64_t k : r.grid.dense_tiles) {
    load(begun(k, r.grid.kv_tile));
    load(k * r.grid.kv_tile);
  }
  std::vector<std::pair<int64_t, int64_t>> open;
  for (auto it = pts.begin(); std::next(it) != pts.end(); ++it) open.emplace_back(it->first, std::next(it)->first);
  for (int round = 0; round < kRefineRounds && !open.empty(); ++round) {
    std::vector<Piece> missing;
    std::vector<std::pair<int64_t, int64_t>> splittable;
    for (const auto& [a, b] : open) {
      if (b - a <= kRefineMinGap) continue;
      splittable.emplace_back(a, b);
      const int64_t m = (a + b) / 2;
      if (!cache["points"].contains(piece_id({K::kDense, m, 0}))) missing.push_back({K::kDense, m, 0});
    }
    if (!missing.empty()) {
      std::error_code ec;
      const fs::path work = dir / ("llm-runs-" + t.key);
      const std::vector<CostPoint> got = run_pieces(r, missing, work);
      fs::remove_all(work, ec);
      for (size_t k = 0; k < missing.size(); ++k) {
        cache["points"][piece_id(missing[k])] = {{"s", got[k].seconds}, {"j", got[k].energy_j}};
        if (cache.value("idle_w", 0.0) == 0.0) cache["idle_w"] = got[k].idle_w;
      }
      sweep::replace_file(file, cache.dump(1) + "\n");
      t.simulated += missing.size();
    }
    open.clear();
    for (const auto& [a, b] : splittable) {
      const int64_t m = (a + b) / 2;
      load(m);
      const double chord = pts[a].seconds + (pts[b].seconds - pts[a].seconds) * static_cast<double>(m - a) / static_cast<double>(b - a);
      if (std::abs(chord - pts[m].seconds) > kRefineTolerance * pts[m].seconds) {
        open.emplace_back(a, m);
        open.emplace_back(m, b);
      }
    }
  }
  LayerCostTable::Row row{1, {}, {}, {}};
  for (const auto& [n, c] : pts) {
    row.tiles.push_back(n);
    row.begun.push_back(c);
    row.full.push_back(c);
  }
  return row;
}

// The compiler's pass (samples_per_pass) of an attention piece at every KV length up to the
// grid's last, capped at the grid's largest size, as runs (first KV length, S). S does not grow
// with the KV length (each sample's K, V and scores grow with it), so an interval whose ends
// have one S has it throughout and the runs are found by halving the others: a few hundred
// plans (lowering's memory plan only, no instructions), kept in the cache file with the points
// under `field`. `graph_at(kv)` is the piece's graph text at that KV length.
PassPlanner g_pass_planner = nullptr;

std::vector<std::pair<int64_t, int64_t>> pass_runs(const CostTableRequest& r, const nlohmann::json& cache, const std::string& field,
                                                   int64_t cap, const std::function<std::string(int64_t)>& graph_at) {
  const int64_t kv_max = r.grid.kv_tiles.empty() ? 1 : r.grid.kv_tiles.back() * r.grid.kv_tile;
  if (cache.contains(field)) {
    const auto& p = cache[field];
    if (p.value("samples", int64_t{0}) == cap && p.value("kv", int64_t{0}) == kv_max)
      return p.at("runs").get<std::vector<std::pair<int64_t, int64_t>>>();
  }
  if (!g_pass_planner) return {};
  const ArchConfig arch = load_arch_config(r.arch);
  std::map<int64_t, int64_t> at;
  auto samples = [&](int64_t kv) {
    auto it = at.find(kv);
    if (it != at.end()) return it->second;
    const graph::Graph g = graph::parse_graph_yaml(YamlNode::load_string(graph_at(kv), "<" + field + ">"));
    return at[kv] = g_pass_planner(g, arch, cap);
  };
  std::function<void(int64_t, int64_t)> split = [&](int64_t lo, int64_t hi) {
    if (hi - lo <= 1 || samples(lo) == samples(hi)) return;
    const int64_t mid = lo + (hi - lo) / 2;
    split(lo, mid);
    split(mid, hi);
  };
  samples(1);
  samples(kv_max);
  split(1, kv_max);
  std::vector<std::pair<int64_t, int64_t>> runs;
  for (const auto& [kv, s] : at)
    if (runs.empty() || runs.back().second != s) runs.emplace_back(kv, s);
  return runs;
}

nlohmann::json runs_json(const CostTableRequest& r, int64_t cap, const std::vector<std::pair<int64_t, int64_t>>& runs) {
  return {{"samples", cap}, {"kv", r.grid.kv_tiles.back() * r.grid.kv_tile}, {"runs", runs}};
}

// A PassTable from the simulated points (pass_points), `cost` reading one.
template <typename Cost>
LayerCostTable::PassTable pass_table(const CostGrid& g, const SampleAxis& x, const std::vector<std::pair<int64_t, int64_t>>& passes,
                                     Cost cost) {
  LayerCostTable::PassTable t;
  t.kv_tile = g.kv_tile;
  t.passes = passes;
  std::map<int64_t, LayerCostTable::PassColumn> columns;
  for (const auto& [n, kv] : pass_points(g, x, passes)) {
    auto& c = columns[kv];
    c.kv = kv;
    c.samples.push_back(n);
    c.cost.push_back(cost(n, kv));
  }
  for (int64_t k : g.kv_tiles) {
    t.tiles.push_back(k);
    t.begun.push_back(columns.at(begun(k, g.kv_tile)));
    t.full.push_back(columns.at(k * g.kv_tile));
  }
  return t;
}

}  // namespace

void set_pass_planner(PassPlanner planner) { g_pass_planner = planner; }

LayerCostTable build_cost_table(const CostTableRequest& r) {
  LayerCostTable t;
  t.key = table_key(r);
  const int64_t query_rows_per_token = r.shard.heads / r.shard.kv_heads;
  std::optional<TempDir> tmp;
  fs::path dir = r.cache_dir;
  if (dir.empty()) {
    tmp.emplace();
    dir = tmp->path;
  }
  sweep::make_output_dir(dir);
  CacheLock lock(dir);
  const fs::path file = dir / ("llm-cost-" + t.key + ".json");
  nlohmann::json cache = {{"format", "tessera-llm-cost-table"}, {"version", kCacheVersion}, {"points", nlohmann::json::object()}};
  std::error_code ec;
  if (fs::exists(fs::symlink_status(file, ec))) {
    try {
      nlohmann::json j = nlohmann::json::parse(sweep::read_no_follow(file));
      if (j.value("format", "") == "tessera-llm-cost-table" && j.value("version", 0) == kCacheVersion && j.contains("points")) cache = j;
    } catch (const sweep::UnsafeOutputPath&) {
      throw;
    } catch (const std::exception&) {
    }
  }
  const SampleAxis decode = decode_axis(r.grid);
  const std::vector<std::pair<int64_t, int64_t>> decode_passes =
      pass_runs(r, cache, "decode_passes", decode.cap(), [&](int64_t kv) {
        return decode_attention_graph_yaml(r.model, r.shard, r.precision, decode.cap(), kv);
      });
  const std::vector<Piece> pieces = grid_pieces(r.grid, query_rows_per_token, decode, decode_passes);
  std::vector<Piece> missing;
  std::map<std::string, bool> seen;
  for (const auto& q : pieces) {
    const std::string id = piece_id(q);
    if (!cache["points"].contains(id) && seen.emplace(id, true).second) missing.push_back(q);
  }
  t.cached = pieces.size() - missing.size();
  t.simulated = missing.size();
  if (!missing.empty() || (!cache.contains("decode_passes") && !decode_passes.empty())) {
    if (!decode_passes.empty()) cache["decode_passes"] = runs_json(r, decode.cap(), decode_passes);  // found by the planner only
    cache["model"] = r.model.name;
    cache["arch"] = r.arch.filename().string();
    cache["tp"] = r.shard.tp;
    const fs::path work = dir / ("llm-runs-" + t.key);
    const std::vector<CostPoint> got = run_pieces(r, missing, work);
    fs::remove_all(work, ec);
    for (size_t k = 0; k < missing.size(); ++k) {
      cache["points"][piece_id(missing[k])] = {{"s", got[k].seconds}, {"j", got[k].energy_j}};
      cache["idle_w"] = got[k].idle_w;
    }
    sweep::replace_file(file, cache.dump(1) + "\n");
  }
  auto cost = [&](const Piece& q) {
    const auto& e = cache["points"][piece_id(q)];
    return CostPoint{e.at("s").get<double>(), e.at("j").get<double>()};
  };
  using K = Piece::Kind;
  const int64_t w = r.grid.kv_tile;
  // Dense and LM head: one row over their tiles (the piece's size is its second axis).
  auto size_row = [&](K kind, const std::vector<int64_t>& tiles) {
    LayerCostTable::Row row{1, tiles, {}, {}};
    for (int64_t k : tiles) {
      row.begun.push_back(cost({kind, begun(k, w), 0}));
      row.full.push_back(w > 1 ? cost({kind, k * w, 0}) : row.begun.back());
    }
    return row;
  };
  t.dense_rows = {refine_dense(r, cache, file, dir, t)};
  t.head_rows = {size_row(K::kHead, r.grid.head_tiles)};
  t.decode_table = pass_table(r.grid, decode, decode_passes, [&](int64_t n, int64_t kv) { return cost({K::kDecode, n, kv}); });
  for (size_t i = 0; i < r.grid.prefill_blocks.size(); ++i) {
    const int64_t n = r.grid.prefill_blocks[i];
    LayerCostTable::Row row{n, r.grid.prefill_row_tiles(i, query_rows_per_token), {}, {}};
    for (int64_t k : row.tiles) {
      row.begun.push_back(cost({K::kPrefill, n, begun(k, w)}));
      row.full.push_back(w > 1 ? cost({K::kPrefill, n, k * w}) : row.begun.back());
    }
    t.prefill_rows.push_back(row);
  }
  t.kv_tile = w;
  t.q_block_rows = r.grid.q_block_rows;
  t.query_rows_per_token = query_rows_per_token;
  t.idle_w = cache.value("idle_w", 0.0);
  t.fill_single_decode();
  return t;
}

}  // namespace tessera::serve::llm
