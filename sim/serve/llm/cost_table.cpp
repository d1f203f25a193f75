#include "sim/serve/llm/cost_table.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/sweep/experiment.h"
#include "sim/sweep/runner.h"
#include "sim/sweep/sweep_files.h"

namespace fs = std::filesystem;

namespace tessera::serve::llm {
namespace {

constexpr int kCacheVersion = 1;

struct Fnv {
  uint64_t h = 0xcbf29ce484222325ULL;
  void add(const char* p, size_t n) {
    for (size_t k = 0; k < n; ++k) {
      h ^= static_cast<unsigned char>(p[k]);
      h *= 0x100000001b3ULL;
    }
  }
  void add(const std::string& s) {
    add(s.data(), s.size());
    add("\n", 1);
  }
  void add_file(const fs::path& p) {
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) {
      add("<not a regular file " + p.string() + ">");
      return;
    }
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    add(ss.str());
  }
};

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Everything but the piece sizes that decides a simulated cost.
std::string table_key(const CostTableRequest& r) {
  Fnv f;
  f.add("tessera llm cost table v" + std::to_string(kCacheVersion));
  f.add_file(r.runner_exe);
  f.add_file(r.arch);
  try {
    std::vector<fs::path> chain;
    YamlNode::load_composed(r.arch, &chain);
    for (size_t i = 1; i < chain.size(); ++i) f.add_file(chain[i]);
  } catch (const InputError&) {
    f.add("<unreadable base chain>");  // the run itself reports what is wrong
  }
  f.add_file(r.model.source);
  f.add("tp " + std::to_string(r.shard.tp));
  f.add("weights " + std::string(dtype_name(r.precision.weights)) + " kv " + std::string(dtype_name(r.precision.kv)));
  return hex(f.h);
}

std::string piece_id(const PieceQuery& q) {
  switch (q.kind) {
    case PieceQuery::Kind::kDense: return "dense_t" + std::to_string(q.a);
    case PieceQuery::Kind::kDecode: return "decode_b" + std::to_string(q.a) + "_l" + std::to_string(q.b);
    case PieceQuery::Kind::kPrefill: return "prefill_t" + std::to_string(q.a) + "_c" + std::to_string(q.b);
    case PieceQuery::Kind::kHead: return "head_n" + std::to_string(q.a);
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
std::vector<CostPoint> run_pieces(const CostTableRequest& r, const std::vector<PieceQuery>& pieces, const fs::path& work) {
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
    const PieceQuery& q = pieces[k];
    std::string text;
    int64_t batch = 1;
    switch (q.kind) {
      case PieceQuery::Kind::kDense: text = dense_graph_yaml(r.model, r.shard, r.precision, q.a); break;
      case PieceQuery::Kind::kDecode:
        text = decode_attention_graph_yaml(r.model, r.shard, r.precision, q.a, q.b);
        batch = q.a;
        break;
      case PieceQuery::Kind::kPrefill: text = prefill_attention_graph_yaml(r.model, r.shard, r.precision, q.a, q.b); break;
      case PieceQuery::Kind::kHead: text = lm_head_graph_yaml(r.model, r.shard, r.precision, q.a); break;
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

// first x {1, 2, 3, 4, 6, 8, 12, ...} up to last (included): two points an octave. A cost that
// turns from memory- to compute-bound bends between two points; a step of 1.5 keeps the
// chord within ~1% of the simulated bend (tests/sim/serve/llm: 3% at 50 random mixes).
std::vector<int64_t> doubling_from(int64_t first, int64_t last) {
  std::vector<int64_t> v;
  for (int64_t x = 1; x * first < last; x = (x < 2 ? x + 1 : (x & (x - 1)) == 0 ? x + x / 2 : x / 3 * 4)) v.push_back(x * first);
  v.push_back(std::max(first, last));
  return v;
}

}  // namespace

namespace {

int64_t round_up(int64_t x, int64_t q) { return (x + q - 1) / q * q; }

// KV lengths in whole tiles: every tile count up to 8 (short sequences, where a tile more is a
// large step), then two points an octave.
std::vector<int64_t> tile_points(int64_t first_tiles, int64_t last_tiles, int64_t tile) {
  std::vector<int64_t> v;
  int64_t k = first_tiles;
  for (; k < std::min<int64_t>(8, last_tiles); ++k) v.push_back(k * tile);
  for (int64_t x : doubling_from(std::max<int64_t>(k, 1), last_tiles)) {
    if (x >= k) v.push_back(x * tile);
  }
  return v;
}

}  // namespace

CostGrid CostGrid::doubling(int64_t max_tokens, int64_t max_batch, int64_t context, int64_t kv_tile) {
  CostGrid g;
  g.kv_tile = kv_tile;
  g.dense_tokens = doubling_from(1, max_tokens);
  g.decode_batch = doubling_from(1, max_batch);
  g.decode_kv = tile_points(1, (context + kv_tile - 1) / kv_tile, kv_tile);
  g.prefill_tokens = doubling_from(1, std::min(max_tokens, context));
  g.prefill_max_kv = context;
  g.head_rows = doubling_from(1, std::min(max_tokens, max_batch * 2));
  return g;
}

double interpolate_linear(const std::vector<double>& xs, const std::vector<double>& ys, double x) {
  if (xs.size() == 1) return ys[0] * (x / xs[0]);  // one point: proportional
  size_t i = 0;
  while (i + 2 < xs.size() && x > xs[i + 1]) ++i;
  const double t = (x - xs[i]) / (xs[i + 1] - xs[i]);
  // Below the grid a cost cannot fall under half the first point's (the fixed part of a run).
  return std::max(ys[i] + t * (ys[i + 1] - ys[i]), 0.5 * std::min(ys[0], ys[1]));
}

namespace {

// A chunk's KV lengths simulated: from its own tokens (rounded up to whole tiles) doubling to the context.
std::vector<int64_t> prefill_kv_points(const CostGrid& g, int64_t t) {
  std::vector<int64_t> v;
  const int64_t last = round_up(std::max(g.prefill_max_kv, t), g.kv_tile);
  return tile_points(round_up(t, g.kv_tile) / g.kv_tile, last / g.kv_tile, g.kv_tile);
}

std::vector<PieceQuery> grid_pieces(const CostGrid& g) {
  std::vector<PieceQuery> v;
  using K = PieceQuery::Kind;
  for (int64_t t : g.dense_tokens) v.push_back({K::kDense, t, 0});
  for (int64_t b : g.decode_batch)
    for (int64_t l : g.decode_kv) v.push_back({K::kDecode, b, l});
  for (int64_t t : g.prefill_tokens)
    for (int64_t kv : prefill_kv_points(g, t)) v.push_back({K::kPrefill, t, kv - t});
  for (int64_t n : g.head_rows) v.push_back({K::kHead, n, 0});
  return v;
}

CostPoint interp_row(const LayerCostTable::Row& row, double b) {
  std::vector<double> xs, s, j;
  for (size_t k = 0; k < row.b.size(); ++k) {
    xs.push_back(static_cast<double>(row.b[k]));
    s.push_back(std::max(row.cost[k].seconds, 1e-15));
    j.push_back(std::max(row.cost[k].energy_j, 1e-18));
  }
  return {interpolate_linear(xs, s, b), interpolate_linear(xs, j, b)};
}

// Interpolates over rows (first axis a), each row over its own second axis.
CostPoint interp_2d(const std::vector<LayerCostTable::Row>& rows, double a, double b) {
  std::vector<double> xs, s, j;
  for (const auto& row : rows) {
    const CostPoint c = interp_row(row, b);
    xs.push_back(static_cast<double>(row.a));
    s.push_back(c.seconds);
    j.push_back(c.energy_j);
  }
  return {interpolate_linear(xs, s, a), interpolate_linear(xs, j, a)};
}

}  // namespace

CostPoint LayerCostTable::dense(int64_t tokens) const {
  if (tokens <= 0) return {};
  return interp_2d(dense_rows, static_cast<double>(tokens), 1);
}
CostPoint LayerCostTable::decode_attention(int64_t sequences, int64_t kv_tokens) const {
  if (sequences <= 0) return {};
  return interp_2d(decode_rows, static_cast<double>(sequences), static_cast<double>(round_up(std::max<int64_t>(kv_tokens, 1), kv_tile)));
}
CostPoint LayerCostTable::prefill_attention(int64_t tokens, int64_t context_tokens) const {
  if (tokens <= 0) return {};
  return interp_2d(prefill_rows, static_cast<double>(tokens), static_cast<double>(round_up(tokens + context_tokens, kv_tile)));
}
CostPoint LayerCostTable::lm_head(int64_t rows) const {
  if (rows <= 0) return {};
  return interp_2d(head_rows, static_cast<double>(rows), 1);
}

std::vector<CostPoint> simulate_pieces(const CostTableRequest& r, const std::vector<PieceQuery>& pieces) {
  TempDir tmp;
  std::vector<PieceQuery> distinct;
  std::map<std::string, size_t> at;
  for (const auto& q : pieces) {
    if (at.emplace(piece_id(q), distinct.size()).second) distinct.push_back(q);
  }
  const std::vector<CostPoint> got = run_pieces(r, distinct, tmp.path / "runs");
  std::vector<CostPoint> out;
  for (const auto& q : pieces) out.push_back(got[at.at(piece_id(q))]);
  return out;
}

LayerCostTable build_cost_table(const CostTableRequest& r) {
  LayerCostTable t;
  t.key = table_key(r);
  const std::vector<PieceQuery> pieces = grid_pieces(r.grid);
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
  std::vector<PieceQuery> missing;
  for (const auto& q : pieces) {
    if (!cache["points"].contains(piece_id(q))) missing.push_back(q);
  }
  t.cached = pieces.size() - missing.size();
  t.simulated = missing.size();
  if (!missing.empty()) {
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
  auto cost = [&](const PieceQuery& q) {
    const auto& e = cache["points"][piece_id(q)];
    return CostPoint{e.at("s").get<double>(), e.at("j").get<double>()};
  };
  using K = PieceQuery::Kind;
  for (int64_t n : r.grid.dense_tokens) t.dense_rows.push_back({n, {1}, {cost({K::kDense, n, 0})}});
  for (int64_t n : r.grid.head_rows) t.head_rows.push_back({n, {1}, {cost({K::kHead, n, 0})}});
  for (int64_t b : r.grid.decode_batch) {
    LayerCostTable::Row row{b, {}, {}};
    for (int64_t l : r.grid.decode_kv) {
      row.b.push_back(l);
      row.cost.push_back(cost({K::kDecode, b, l}));
    }
    t.decode_rows.push_back(row);
  }
  for (int64_t tk : r.grid.prefill_tokens) {
    LayerCostTable::Row row{tk, {}, {}};
    for (int64_t kv : prefill_kv_points(r.grid, tk)) {
      row.b.push_back(kv);
      row.cost.push_back(cost({K::kPrefill, tk, kv - tk}));
    }
    t.prefill_rows.push_back(row);
  }
  t.kv_tile = r.grid.kv_tile;
  t.idle_w = cache.value("idle_w", 0.0);
  return t;
}

}  // namespace tessera::serve::llm
