#include "models/array/pe_reference.h"

#include <algorithm>
#include <cstddef>
#include <string>

namespace tessera::array {
namespace {

// 32-bit wrapping multiply-accumulate, as the accumulators do.
int32_t mac32(int32_t acc, int32_t a, int32_t b) {
  const int64_t product = static_cast<int64_t>(a) * static_cast<int64_t>(b);
  return static_cast<int32_t>(static_cast<uint32_t>(acc) + static_cast<uint32_t>(product));
}

int64_t step_offset(int64_t r, int64_t steps, int64_t len) { return stream_step_offset(r, steps, len); }

struct Common {
  Dataflow dataflow;
  int64_t R;
  int64_t C;
  bool db;

  [[noreturn]] void hazard(int64_t cycle, int64_t i, int64_t j, const std::string& what) const {
    std::string where = std::string(dataflow_name(dataflow)) + " " + std::to_string(R) + "x" +
                        std::to_string(C) + (db ? " double-buffered" : " single-buffered") +
                        ": cycle " + std::to_string(cycle);
    if (i >= 0) where += ", PE(" + std::to_string(i) + "," + std::to_string(j) + ")";
    throw ReferenceHazard(where + ": " + what);
  }
};

int64_t cycle_bound(std::span<const ReferenceTile> tiles, const std::vector<TileSchedule>* forced,
                    int64_t R, int64_t C) {
  int64_t bound = 16;
  int64_t latest_ready = 0;
  for (const ReferenceTile& t : tiles) {
    latest_ready = std::max({latest_ready, t.stationary_ready, t.stream_ready});
    const int64_t len = std::max({t.shape.m, t.shape.n, t.shape.k, t.min_stream_cycles});
    bound += t.shape.k + len + t.shape.m + t.shape.n + 2 * R + 2 * C + 8;
  }
  bound += latest_ready;
  if (forced) {
    for (const TileSchedule& s : *forced) {
      bound += std::max<int64_t>(0, std::max(s.preload_start, s.stream_start));
    }
  }
  return bound;
}

// A forced schedule (run_with_schedule): whether the next tile's stream starts at cycle c.
// Forced starts must come in order and must not overlap the previous stream window.
bool forced_stream_starts(const Common& cx, const TileSchedule& want, int64_t c, int64_t window_end) {
  if (want.stream_start < c) cx.hazard(c, -1, -1, "forced stream start out of order");
  if (want.stream_start != c) return false;
  if (c < window_end) cx.hazard(c, -1, -1, "stream window overlaps the previous one");
  return true;
}

// Tile t's result: its schedule and MAC count; the run ends when its last tile is done.
void record_tile(ReferenceRun& run, int64_t t, const TileSchedule& schedule, int64_t macs) {
  ReferenceTileResult& res = run.tiles[t];
  res.schedule = schedule;
  res.macs = macs;
  run.total_cycles = std::max(run.total_cycles, schedule.done);
}

// ----------------------------------------------------------------------------------------
// ws / is: stationary W (k x w), streamed X (s x k), Y = X W (s x w).
struct StatTile {
  int64_t k = 0, w = 0, s = 0, len = 0;
  std::vector<int32_t> W;       // k x w
  std::vector<int32_t> X;       // s x k
  std::vector<int64_t> step_at; // window offset -> streamed row r, or -1
  std::vector<std::size_t> out_index;  // r * w + j -> index into the m x n result
  int64_t stationary_ready = 0, stream_ready = 0;
  // Runtime.
  int64_t L = -1, P = -1, S = -1, E = -1, done = 0, written = 0, macs = 0;
  bool loaded = false;  // column 0 holds the whole tile
};

// A tile in the stationary machine's terms: ws holds W = B and streams the rows of A; is
// holds W = A^T and streams the columns of B.
StatTile stationary_tile(const ReferenceTile& src, bool ws) {
  const int64_t m = src.shape.m, k = src.shape.k, n = src.shape.n;
  StatTile st;
  st.k = k;
  st.w = ws ? n : m;
  st.s = ws ? m : n;
  st.len = std::max(st.s, src.min_stream_cycles);
  st.W.resize(k * st.w);
  st.X.resize(st.s * k);
  st.out_index.resize(st.s * st.w);
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < st.w; ++j) {
      st.W[i * st.w + j] = ws ? src.b[i * n + j] : src.a[j * k + i];  // B or A^T
    }
  }
  for (int64_t r = 0; r < st.s; ++r) {
    for (int64_t i = 0; i < k; ++i) {
      st.X[r * k + i] = ws ? src.a[r * k + i] : src.b[i * n + r];  // rows of A or of B^T
    }
    for (int64_t j = 0; j < st.w; ++j) {
      st.out_index[r * st.w + j] = static_cast<std::size_t>(ws ? r * n + j : j * n + r);
    }
  }
  st.step_at.assign(st.len, -1);
  for (int64_t r = 0; r < st.s; ++r) st.step_at[step_offset(r, st.s, st.len)] = r;
  st.stationary_ready = src.stationary_ready;
  st.stream_ready = src.stream_ready;
  return st;
}

struct Weight {
  int32_t v = 0;
  int64_t tile = -1, si = -1, sj = -1;
  bool pending = false;  // shadow only: loaded, not yet switched into the active register
};
struct Operand {
  bool valid = false;
  int32_t v = 0;
  int64_t tile = -1, r = -1;
};
struct Psum {
  bool valid = false;
  int32_t v = 0;
  int64_t tile = -1, r = -1, count = 0;
};

// The ws / is machine: its registers and controller state, stepped one cycle at a time. Each
// cycle reads the registers as they were at its start (the step functions below, in order)
// and latches the next values at its end.
class StationaryMachine {
 public:
  StationaryMachine(const Common& cx, std::span<const ReferenceTile> in, const std::vector<TileSchedule>* forced)
      : cx_(cx), forced_(forced), R_(cx.R), C_(cx.C), T_(static_cast<int64_t>(in.size())) {
    const bool ws = dataflow_model(cx.dataflow).reference_machine() == ReferenceMachine::kStationaryB;
    run_.tiles.resize(in.size());
    for (int64_t t = 0; t < T_; ++t) {
      tiles_.push_back(stationary_tile(in[t], ws));
      run_.tiles[t].c.assign(in[t].shape.m * in[t].shape.n, 0);
    }
    const std::size_t N = static_cast<std::size_t>(R_ * C_);
    act_.resize(N);
    sh_.resize(N);
    opr_.resize(N);
    n_opr_.resize(N);
    sw_.assign(N, 0);
    n_sw_.assign(N, 0);
    ps_.resize(N);
    n_ps_.resize(N);
    edge_.resize(R_);
    edge_sw_.resize(R_);
    col_written_.resize(C_);
    bound_ = cycle_bound(in, forced, R_, C_);
  }

  ReferenceRun run() {
    for (int64_t c = 0; finished_ < T_; ++c) {
      if (c > bound_) cx_.hazard(c, -1, -1, "the array did not finish (deadlock)");
      start_stream(c);
      feed_left_edge(c);
      step_pes(c);
      accumulate(c);
      start_load(c);
      shift_loads(c);
      latch();
    }
    for (int64_t t = 0; t < T_; ++t) {
      const StatTile& st = tiles_[t];
      record_tile(run_, t, TileSchedule{st.L, st.P, st.S, st.E, st.done}, st.macs);
    }
    return std::move(run_);
  }

 private:
  std::size_t at(int64_t i, int64_t j) const { return static_cast<std::size_t>(i * C_ + j); }

  // 1. Stream start (decided from the state at the start of the cycle).
  void start_stream(int64_t c) {
    if (next_stream_ >= T_) return;
    StatTile& st = tiles_[next_stream_];
    bool start = false;
    if (forced_) {
      start = forced_stream_starts(cx_, (*forced_)[next_stream_], c, window_end_);
    } else {
      start = c >= window_end_ && st.loaded && c >= st.stream_ready;
    }
    if (start) {
      st.S = c;
      st.E = c + st.len;
      window_end_ = st.E;
      ++next_stream_;
    }
  }

  // 2. Left-edge inputs: skewed operands and (double buffered) switch tokens.
  void feed_left_edge(int64_t c) {
    std::fill(edge_.begin(), edge_.end(), Operand{});
    std::fill(edge_sw_.begin(), edge_sw_.end(), 0);
    for (int64_t t = 0; t < next_stream_; ++t) {
      const StatTile& st = tiles_[t];
      if (c > st.E + R_) continue;
      for (int64_t i = 0; i < st.k; ++i) {
        const int64_t d = c - i - st.S;
        if (d < 0 || d >= st.len || st.step_at[d] < 0) continue;
        if (edge_[i].valid) cx_.hazard(c, i, 0, "two operands enter the row in one cycle");
        const int64_t r = st.step_at[d];
        edge_[i] = Operand{true, st.X[r * st.k + i], t, r};
      }
      if (cx_.db) {
        const int64_t i = c - st.S;
        if (i >= 0 && i < R_) {
          if (edge_sw_[i]) cx_.hazard(c, i, 0, "two switch tokens in one cycle");
          edge_sw_[i] = 1;
        }
      }
    }
  }

  // 3. PEs: switch, MAC, move operands right and partial sums down.
  void step_pes(int64_t c) {
    n_act_ = act_;
    n_sh_ = sh_;
    for (int64_t i = 0; i < R_; ++i) {
      for (int64_t j = 0; j < C_; ++j) {
        const std::size_t x = at(i, j);
        const Operand ain = j == 0 ? edge_[i] : opr_[at(i, j - 1)];
        const bool swin = cx_.db && (j == 0 ? edge_sw_[i] != 0 : sw_[at(i, j - 1)] != 0);
        Weight w = act_[x];
        if (swin) {
          w = sh_[x].pending ? sh_[x] : Weight{};
          w.pending = false;
          n_act_[x] = w;
          n_sh_[x].pending = false;
        }
        const Psum pin = i == 0 ? Psum{} : ps_[at(i - 1, j)];
        Psum pout{};
        if (ain.valid) {
          if (w.tile != ain.tile || w.si != i || w.sj != j) {
            cx_.hazard(c, i, j,
                       "operand of tile " + std::to_string(ain.tile) + " met weight (tile " +
                           std::to_string(w.tile) + ", " + std::to_string(w.si) + "," +
                           std::to_string(w.sj) + ")");
          }
          if (i == 0) {
            pout = Psum{true, mac32(0, ain.v, w.v), ain.tile, ain.r, 1};
          } else {
            if (!pin.valid || pin.tile != ain.tile || pin.r != ain.r || pin.count != i) {
              cx_.hazard(c, i, j, "operand does not meet its own partial sum");
            }
            pout = pin;
            pout.v = mac32(pin.v, ain.v, w.v);
            pout.count = i + 1;
          }
          StatTile& st = tiles_[ain.tile];
          if (j < st.w) ++st.macs;
        } else if (pin.valid) {
          if (pin.count < tiles_[pin.tile].k) cx_.hazard(c, i, j, "partial sum misses an operand");
          pout = pin;
        }
        n_opr_[x] = ain;
        n_sw_[x] = swin ? 1 : 0;
        n_ps_[x] = pout;
      }
    }
  }

  // 4. Accumulators below the array: add what the bottom row latched last cycle.
  void accumulate(int64_t c) {
    for (int64_t j = 0; j < C_; ++j) {
      const Psum& p = ps_[at(R_ - 1, j)];
      if (!p.valid) continue;
      StatTile& st = tiles_[p.tile];
      if (p.count != st.k) cx_.hazard(c, R_ - 1, j, "incomplete partial sum reached the accumulators");
      if (j >= st.w) continue;  // padding column: discarded
      std::vector<int32_t>& out = run_.tiles[p.tile].c;
      const std::size_t idx = st.out_index[p.r * st.w + j];
      out[idx] = p.v;
      st.done = c + 1;
      if (++st.written == st.s * st.w) ++finished_;
    }
  }

  // 5. Loader start (after this cycle's switches).
  void start_load(int64_t c) {
    if (next_load_ >= T_) return;
    StatTile& st = tiles_[next_load_];
    bool start = false;
    if (forced_) {
      const int64_t want = (*forced_)[next_load_].preload_start;
      if (want < c) cx_.hazard(c, -1, -1, "forced preload start out of order");
      if (want == c) {
        if (c < last_load_end_) cx_.hazard(c, -1, -1, "loader port busy");
        start = true;
      }
    } else if (c >= last_load_end_ && c >= st.stationary_ready) {
      if (cx_.db) {
        start = !n_sh_[at(0, 0)].pending;
      } else {
        // Every loaded tile has begun streaming and its last operand enters row 0 by
        // the end of this cycle: the load wave then trails it through the array.
        start = next_load_ == next_stream_ && window_end_ <= c + 1;
      }
    }
    if (start) {
      st.L = c;
      st.P = c + st.k;
      last_load_end_ = st.P;
      loads_.push_back(Load{next_load_, c});
      ++next_load_;
    }
  }

  // 6. Load shifts: column j of a load started at L shifts at L+j .. L+j+k-1; at step q
  //    rows 1..q take the row above, row 0 takes W[k-1-q] (zero beyond the tile width).
  void shift_loads(int64_t c) {
    std::vector<Weight>& target = cx_.db ? n_sh_ : n_act_;
    const std::vector<Weight>& before = cx_.db ? sh_ : act_;
    std::fill(col_written_.begin(), col_written_.end(), 0);
    for (const Load& ld : loads_) {
      StatTile& st = tiles_[ld.tile];
      for (int64_t j = 0; j < C_; ++j) {
        const int64_t q = c - ld.L - j;
        if (q < 0 || q >= st.k) continue;
        if (col_written_[j]) cx_.hazard(c, 0, j, "two loads shift one column");
        col_written_[j] = 1;
        for (int64_t i = q; i >= 0; --i) {
          Weight nw;
          if (i == 0) {
            const int64_t si = st.k - 1 - q;
            nw = Weight{j < st.w ? st.W[si * st.w + j] : 0, ld.tile, si, j, false};
          } else {
            nw = before[at(i - 1, j)];
          }
          nw.pending = cx_.db;
          Weight& dst = target[at(i, j)];
          if (cx_.db && dst.pending && dst.tile != ld.tile) {
            cx_.hazard(c, i, j, "shadow weight of tile " + std::to_string(dst.tile) +
                                    " overwritten before its switch");
          }
          dst = nw;
        }
        if (j == 0 && q == st.k - 1) st.loaded = true;
      }
    }
    std::erase_if(loads_, [&](const Load& ld) { return c >= ld.L + tiles_[ld.tile].k - 1 + C_ - 1; });
  }

  // The end of the cycle: every register takes its next value.
  void latch() {
    act_.swap(n_act_);
    sh_.swap(n_sh_);
    opr_.swap(n_opr_);
    sw_.swap(n_sw_);
    ps_.swap(n_ps_);
  }

  const Common& cx_;
  const std::vector<TileSchedule>* forced_;
  const int64_t R_, C_, T_;
  std::vector<StatTile> tiles_;
  ReferenceRun run_;
  int64_t bound_ = 0;

  // Registers (row-major R x C) and their next values.
  std::vector<Weight> act_, sh_, n_act_, n_sh_;  // active and (double buffered) shadow weights
  std::vector<Operand> opr_, n_opr_;
  std::vector<uint8_t> sw_, n_sw_;               // tile-switch tokens
  std::vector<Psum> ps_, n_ps_;
  // This cycle's inputs at the left edge, and which columns a load shifted.
  std::vector<Operand> edge_;
  std::vector<uint8_t> edge_sw_;
  std::vector<uint8_t> col_written_;

  // The controller.
  struct Load {
    int64_t tile, L;
  };
  std::vector<Load> loads_;  // in flight (some column still shifting)
  int64_t next_load_ = 0, next_stream_ = 0, finished_ = 0;
  int64_t last_load_end_ = 0;  // preload_end of the last load (loader port free from here)
  int64_t window_end_ = 0;     // stream_end of the last started tile
};

// ----------------------------------------------------------------------------------------
// os: C (m x n) accumulates in place; A rows stream from the left, B columns from the top.
struct OsTile {
  int64_t m = 0, k = 0, n = 0, len = 0;
  const ReferenceTile* src = nullptr;
  std::vector<int64_t> step_at;  // window offset -> step p, or -1
  int64_t ready = 0;
  int64_t S = -1, E = -1, done = 0, written = 0, macs = 0;
};

OsTile os_tile(const ReferenceTile& src) {
  OsTile st;
  st.src = &src;
  st.m = src.shape.m;
  st.k = src.shape.k;
  st.n = src.shape.n;
  st.len = std::max(st.k, src.min_stream_cycles);
  st.step_at.assign(st.len, -1);
  for (int64_t p = 0; p < st.k; ++p) st.step_at[step_offset(p, st.k, st.len)] = p;
  st.ready = std::max(src.stream_ready, src.stationary_ready);
  return st;
}

struct AOp {
  bool valid = false;
  int32_t v = 0;
  int64_t tile = -1, row = -1, p = -1;
};
struct BOp {
  bool valid = false;
  int32_t v = 0;
  int64_t tile = -1, col = -1, p = -1;
};
struct Cell {
  int state = 0;  // 0 empty, 1 partial sum, 2 finished result
  bool draining = false;
  int32_t v = 0;
  int64_t tile = -1, count = 0, i = -1, j = -1;
};

// The os machine: its registers and controller state, stepped one cycle at a time. Each
// cycle reads the registers as they were at its start (the step functions below, in order)
// and latches the next values at its end.
class OsMachine {
 public:
  OsMachine(const Common& cx, std::span<const ReferenceTile> in, const std::vector<TileSchedule>* forced)
      : cx_(cx), forced_(forced), R_(cx.R), C_(cx.C), T_(static_cast<int64_t>(in.size())),
        N_(static_cast<std::size_t>(cx.R * cx.C)) {
    run_.tiles.resize(in.size());
    for (int64_t t = 0; t < T_; ++t) {
      tiles_.push_back(os_tile(in[t]));
      run_.tiles[t].c.assign(tiles_[t].m * tiles_[t].n, 0);
    }
    a_reg_.resize(N_);
    n_a_.resize(N_);
    b_reg_.resize(N_);
    n_b_.resize(N_);
    acc_.resize(N_);
    out_.resize(N_);
    n_acc_.resize(N_);
    n_chain_.resize(N_);
    written_.resize(N_);
    edge_a_.resize(R_);
    edge_b_.resize(C_);
    bound_ = cycle_bound(in, forced, R_, C_);
  }

  ReferenceRun run() {
    for (int64_t c = 0; finished_ < T_; ++c) {
      if (c > bound_) cx_.hazard(c, -1, -1, "the array did not finish (deadlock)");
      start_stream(c);
      feed_edges(c);
      drain(c);
      step_pes(c);
      start_drains(c);
      latch();
    }
    for (int64_t t = 0; t < T_; ++t) {
      const OsTile& st = tiles_[t];
      record_tile(run_, t, TileSchedule{st.S, st.S, st.S, st.E, st.done}, st.macs);
    }
    return std::move(run_);
  }

 private:
  std::size_t at(int64_t i, int64_t j) const { return static_cast<std::size_t>(i * C_ + j); }

  // 1. Stream start.
  void start_stream(int64_t c) {
    if (next_stream_ >= T_) return;
    OsTile& st = tiles_[next_stream_];
    bool start = false;
    if (forced_) {
      start = forced_stream_starts(cx_, (*forced_)[next_stream_], c, window_end_);
    } else if (c >= window_end_ && c >= st.ready) {
      if (!any_started_) {
        start = true;
      } else if (cx_.db) {
        start = c + st.len >= frontier_;
      } else {
        start = c >= frontier_ - 1;
      }
    }
    if (start) {
      st.S = c;
      st.E = c + st.len;
      window_end_ = st.E;
      frontier_ = std::max(frontier_, st.E + st.m);
      any_started_ = true;
      ++next_stream_;
    }
  }

  // 2. Edge inputs: A[i][p] into row i at S+off(p)+i, B[p][j] into column j at S+off(p)+j.
  void feed_edges(int64_t c) {
    std::fill(edge_a_.begin(), edge_a_.end(), AOp{});
    std::fill(edge_b_.begin(), edge_b_.end(), BOp{});
    for (int64_t t = 0; t < next_stream_; ++t) {
      const OsTile& st = tiles_[t];
      if (c > st.E + R_ + C_) continue;
      for (int64_t i = 0; i < st.m; ++i) {
        const int64_t d = c - i - st.S;
        if (d < 0 || d >= st.len || st.step_at[d] < 0) continue;
        if (edge_a_[i].valid) cx_.hazard(c, i, 0, "two A operands enter the row in one cycle");
        const int64_t p = st.step_at[d];
        edge_a_[i] = AOp{true, st.src->a[i * st.k + p], t, i, p};
      }
      for (int64_t j = 0; j < st.n; ++j) {
        const int64_t d = c - j - st.S;
        if (d < 0 || d >= st.len || st.step_at[d] < 0) continue;
        if (edge_b_[j].valid) cx_.hazard(c, 0, j, "two B operands enter the column in one cycle");
        const int64_t p = st.step_at[d];
        edge_b_[j] = BOp{true, st.src->b[p * st.n + j], t, j, p};
      }
    }
  }

  // The drain chain's registers: double buffered `out_` (`acc_` holds the partial sums);
  // single buffered `acc_` is both.
  std::vector<Cell>& chain() { return cx_.db ? out_ : acc_; }

  // 3. Drain chain: draining results move down one row; row R-1 writes the accumulators.
  void drain(int64_t c) {
    const std::vector<Cell>& chain_now = chain();
    for (std::size_t x = 0; x < N_; ++x) n_chain_[x] = chain_now[x].draining ? Cell{} : chain_now[x];
    std::fill(written_.begin(), written_.end(), 0);
    for (int64_t i = 0; i < R_; ++i) {
      for (int64_t j = 0; j < C_; ++j) {
        const Cell& e = chain_now[at(i, j)];
        if (!e.draining) continue;
        if (i == R_ - 1) {
          OsTile& st = tiles_[e.tile];
          run_.tiles[e.tile].c[e.i * st.n + e.j] = e.v;
          st.done = c + 1;
          if (++st.written == st.m * st.n) ++finished_;
          continue;
        }
        const std::size_t y = at(i + 1, j);
        if (n_chain_[y].state != 0) {
          cx_.hazard(c, i + 1, j, "draining result of tile " + std::to_string(e.tile) +
                                      " runs into a held value of tile " +
                                      std::to_string(n_chain_[y].tile));
        }
        n_chain_[y] = e;
        written_[y] = 1;
      }
    }
  }

  // 4. PEs: MAC when an A and a B of the same tile and step meet.
  void step_pes(int64_t c) {
    if (cx_.db) n_acc_ = acc_;
    triggers_.clear();
    for (int64_t i = 0; i < R_; ++i) {
      for (int64_t j = 0; j < C_; ++j) {
        const std::size_t x = at(i, j);
        const AOp ain = j == 0 ? edge_a_[i] : a_reg_[at(i, j - 1)];
        const BOp bin = i == 0 ? edge_b_[j] : b_reg_[at(i - 1, j)];
        n_a_[x] = ain;
        n_b_[x] = bin;
        if (ain.valid && bin.valid) {
          mac(c, i, j, ain, bin);
        } else {
          if (ain.valid && j < tiles_[ain.tile].n) cx_.hazard(c, i, j, "A operand without its B");
          if (bin.valid && i < tiles_[bin.tile].m) cx_.hazard(c, i, j, "B operand without its A");
        }
      }
    }
  }

  // PE(i, j) adds A x B into its partial sum; after the tile's k-th step the result is final
  // and leaves the private accumulator for the drain chain.
  void mac(int64_t c, int64_t i, int64_t j, const AOp& ain, const BOp& bin) {
    const std::size_t x = at(i, j);
    if (ain.tile != bin.tile || ain.p != bin.p || ain.row != i || bin.col != j) {
      cx_.hazard(c, i, j, "A (tile " + std::to_string(ain.tile) + ", step " +
                              std::to_string(ain.p) + ") met B (tile " +
                              std::to_string(bin.tile) + ", step " + std::to_string(bin.p) +
                              ")");
    }
    OsTile& st = tiles_[ain.tile];
    Cell cur = acc_[x];
    if (cur.state == 2) {
      // Single buffered: a finished result still in the accumulator register. It
      // leaves this cycle only if its column is draining.
      if (!cur.draining) cx_.hazard(c, i, j, "new tile overwrites a finished result");
      cur = Cell{};
    }
    if (cur.state == 1 && (cur.tile != ain.tile || cur.count != ain.p)) {
      cx_.hazard(c, i, j, "partial sum of another tile or step in the accumulator");
    }
    if (cur.state == 0 && ain.p != 0) cx_.hazard(c, i, j, "partial sum lost");
    Cell nc{1, false, mac32(cur.state == 1 ? cur.v : 0, ain.v, bin.v), ain.tile, ain.p + 1,
            i, j};
    ++st.macs;
    const bool final_step = nc.count == st.k;
    if (final_step) {
      nc.state = 2;
      if (i == st.m - 1) triggers_.push_back(Trigger{ain.tile, j});
    }
    if (cx_.db && !final_step) {
      n_acc_[x] = nc;  // private accumulator register: checked above
      return;
    }
    // Into the drain chain's register (double buffered: the output register,
    // freeing the accumulator; single buffered: the accumulator itself). What it
    // keeps this cycle must be empty or (single buffered) this PE's own partial sum,
    // and no draining result may arrive in it.
    if (cx_.db) n_acc_[x] = Cell{};
    const Cell& kept = n_chain_[x];
    const bool own = !cx_.db && kept.state == 1 && kept.tile == nc.tile;
    if (written_[x] || (kept.state != 0 && !own)) {
      cx_.hazard(c, i, j, "result of tile " + std::to_string(nc.tile) +
                              " collides with a value in the drain chain");
    }
    n_chain_[x] = nc;
  }

  // 5. A column whose last row just finished starts draining next cycle.
  void start_drains(int64_t c) {
    for (const Trigger& tr : triggers_) {
      int64_t count = 0;
      for (int64_t i = 0; i < R_; ++i) {
        Cell& e = n_chain_[at(i, tr.col)];
        if (e.state == 2 && e.tile == tr.tile && !e.draining) {
          e.draining = true;
          ++count;
        }
      }
      if (count != tiles_[tr.tile].m) cx_.hazard(c, -1, tr.col, "column drains an incomplete tile");
    }
  }

  // The end of the cycle: every register takes its next value.
  void latch() {
    a_reg_.swap(n_a_);
    b_reg_.swap(n_b_);
    if (cx_.db) {
      acc_.swap(n_acc_);
      out_.swap(n_chain_);
    } else {
      acc_.swap(n_chain_);
    }
  }

  const Common& cx_;
  const std::vector<TileSchedule>* forced_;
  const int64_t R_, C_, T_;
  const std::size_t N_;
  std::vector<OsTile> tiles_;
  ReferenceRun run_;
  int64_t bound_ = 0;

  // Registers (row-major R x C) and their next values.
  std::vector<AOp> a_reg_, n_a_;
  std::vector<BOp> b_reg_, n_b_;
  // Double buffered: `acc_` holds partial sums, `out_` is the drain chain.
  // Single buffered: `acc_` is both (out_ unused).
  std::vector<Cell> acc_, out_, n_acc_, n_chain_;
  std::vector<uint8_t> written_;  // a draining result arrived in this register this cycle
  // This cycle's inputs at the edges, and the columns whose last row finished.
  std::vector<AOp> edge_a_;
  std::vector<BOp> edge_b_;
  struct Trigger {
    int64_t tile, col;
  };
  std::vector<Trigger> triggers_;

  // The controller.
  int64_t next_stream_ = 0, finished_ = 0, window_end_ = 0;
  int64_t frontier_ = 0;  // max over started tiles of E + m
  bool any_started_ = false;
};

}  // namespace

PeArrayReference::PeArrayReference(Dataflow dataflow, ArrayDims dims, bool double_buffered)
    : dataflow_(dataflow), dims_(dims), double_buffered_(double_buffered) {
  if (dims.rows < 1 || dims.cols < 1) {
    throw std::invalid_argument("PeArrayReference: array dimensions must be positive");
  }
}

ReferenceRun PeArrayReference::run(std::span<const ReferenceTile> tiles) const {
  return simulate(tiles, nullptr);
}

ReferenceRun PeArrayReference::run_with_schedule(std::span<const ReferenceTile> tiles,
                                                 std::span<const TileSchedule> schedule) const {
  if (schedule.size() != tiles.size()) {
    throw std::invalid_argument("run_with_schedule: one schedule entry per tile");
  }
  const std::vector<TileSchedule> forced(schedule.begin(), schedule.end());
  return simulate(tiles, &forced);
}

ReferenceRun PeArrayReference::simulate(std::span<const ReferenceTile> tiles,
                                        const std::vector<TileSchedule>* forced) const {
  for (const ReferenceTile& t : tiles) {
    if (!tile_fits(dataflow_, dims_, t.shape)) {
      throw std::invalid_argument("PeArrayReference: tile does not fit the array");
    }
    if (t.a.size() != static_cast<std::size_t>(t.shape.m * t.shape.k) ||
        t.b.size() != static_cast<std::size_t>(t.shape.k * t.shape.n)) {
      throw std::invalid_argument("PeArrayReference: operand sizes do not match the tile shape");
    }
    if (t.min_stream_cycles < 0) {
      throw std::invalid_argument("PeArrayReference: min_stream_cycles must be >= 0");
    }
  }
  const Common cx{dataflow_, dims_.rows, dims_.cols, double_buffered_};
  switch (dataflow_model(dataflow_).reference_machine()) {
    case ReferenceMachine::kOutputStationary: return OsMachine(cx, tiles, forced).run();
    case ReferenceMachine::kStationaryB:
    case ReferenceMachine::kStationaryAT: break;
  }
  return StationaryMachine(cx, tiles, forced).run();
}

}  // namespace tessera::array
