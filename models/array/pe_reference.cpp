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

ReferenceRun simulate_stationary(const Common& cx, std::span<const ReferenceTile> in,
                                 const std::vector<TileSchedule>* forced) {
  const int64_t R = cx.R, C = cx.C;
  const bool ws = dataflow_model(cx.dataflow).reference_machine() == ReferenceMachine::kStationaryB;
  const int64_t T = static_cast<int64_t>(in.size());

  std::vector<StatTile> tiles(in.size());
  ReferenceRun run;
  run.tiles.resize(in.size());
  for (int64_t t = 0; t < T; ++t) {
    const ReferenceTile& src = in[t];
    const int64_t m = src.shape.m, k = src.shape.k, n = src.shape.n;
    StatTile& st = tiles[t];
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
    run.tiles[t].c.assign(m * n, 0);
  }

  const std::size_t N = static_cast<std::size_t>(R * C);
  std::vector<Weight> act(N), sh(N), n_act, n_sh;
  std::vector<Operand> opr(N), n_opr(N);
  std::vector<uint8_t> sw(N, 0), n_sw(N, 0);
  std::vector<Psum> ps(N), n_ps(N);
  std::vector<Operand> edge(R);
  std::vector<uint8_t> edge_sw(R);
  std::vector<uint8_t> col_written(C);
  auto at = [C](int64_t i, int64_t j) { return static_cast<std::size_t>(i * C + j); };

  struct Load {
    int64_t tile, L;
  };
  std::vector<Load> loads;  // in flight (some column still shifting)
  int64_t next_load = 0, next_stream = 0, finished = 0;
  int64_t last_load_end = 0;        // preload_end of the last load (loader port free from here)
  int64_t window_end = 0;           // stream_end of the last started tile
  const int64_t bound = cycle_bound(in, forced, R, C);

  for (int64_t c = 0; finished < T; ++c) {
    if (c > bound) cx.hazard(c, -1, -1, "the array did not finish (deadlock)");

    // 1. Stream start (decided from the state at the start of the cycle).
    if (next_stream < T) {
      StatTile& st = tiles[next_stream];
      bool start = false;
      if (forced) {
        start = forced_stream_starts(cx, (*forced)[next_stream], c, window_end);
      } else {
        start = c >= window_end && st.loaded && c >= st.stream_ready;
      }
      if (start) {
        st.S = c;
        st.E = c + st.len;
        window_end = st.E;
        ++next_stream;
      }
    }

    // 2. Left-edge inputs: skewed operands and (double buffered) switch tokens.
    std::fill(edge.begin(), edge.end(), Operand{});
    std::fill(edge_sw.begin(), edge_sw.end(), 0);
    for (int64_t t = 0; t < next_stream; ++t) {
      const StatTile& st = tiles[t];
      if (c > st.E + R) continue;
      for (int64_t i = 0; i < st.k; ++i) {
        const int64_t d = c - i - st.S;
        if (d < 0 || d >= st.len || st.step_at[d] < 0) continue;
        if (edge[i].valid) cx.hazard(c, i, 0, "two operands enter the row in one cycle");
        const int64_t r = st.step_at[d];
        edge[i] = Operand{true, st.X[r * st.k + i], t, r};
      }
      if (cx.db) {
        const int64_t i = c - st.S;
        if (i >= 0 && i < R) {
          if (edge_sw[i]) cx.hazard(c, i, 0, "two switch tokens in one cycle");
          edge_sw[i] = 1;
        }
      }
    }

    // 3. PEs: switch, MAC, move operands right and partial sums down.
    n_act = act;
    n_sh = sh;
    for (int64_t i = 0; i < R; ++i) {
      for (int64_t j = 0; j < C; ++j) {
        const std::size_t x = at(i, j);
        const Operand ain = j == 0 ? edge[i] : opr[at(i, j - 1)];
        const bool swin = cx.db && (j == 0 ? edge_sw[i] != 0 : sw[at(i, j - 1)] != 0);
        Weight w = act[x];
        if (swin) {
          w = sh[x].pending ? sh[x] : Weight{};
          w.pending = false;
          n_act[x] = w;
          n_sh[x].pending = false;
        }
        const Psum pin = i == 0 ? Psum{} : ps[at(i - 1, j)];
        Psum pout{};
        if (ain.valid) {
          if (w.tile != ain.tile || w.si != i || w.sj != j) {
            cx.hazard(c, i, j,
                      "operand of tile " + std::to_string(ain.tile) + " met weight (tile " +
                          std::to_string(w.tile) + ", " + std::to_string(w.si) + "," +
                          std::to_string(w.sj) + ")");
          }
          if (i == 0) {
            pout = Psum{true, mac32(0, ain.v, w.v), ain.tile, ain.r, 1};
          } else {
            if (!pin.valid || pin.tile != ain.tile || pin.r != ain.r || pin.count != i) {
              cx.hazard(c, i, j, "operand does not meet its own partial sum");
            }
            pout = pin;
            pout.v = mac32(pin.v, ain.v, w.v);
            pout.count = i + 1;
          }
          StatTile& st = tiles[ain.tile];
          if (j < st.w) ++st.macs;
        } else if (pin.valid) {
          if (pin.count < tiles[pin.tile].k) cx.hazard(c, i, j, "partial sum misses an operand");
          pout = pin;
        }
        n_opr[x] = ain;
        n_sw[x] = swin ? 1 : 0;
        n_ps[x] = pout;
      }
    }

    // 4. Accumulators below the array: add what the bottom row latched last cycle.
    for (int64_t j = 0; j < C; ++j) {
      const Psum& p = ps[at(R - 1, j)];
      if (!p.valid) continue;
      StatTile& st = tiles[p.tile];
      if (p.count != st.k) cx.hazard(c, R - 1, j, "incomplete partial sum reached the accumulators");
      if (j >= st.w) continue;  // padding column: discarded
      std::vector<int32_t>& out = run.tiles[p.tile].c;
      const std::size_t idx = st.out_index[p.r * st.w + j];
      out[idx] = p.v;
      st.done = c + 1;
      if (++st.written == st.s * st.w) ++finished;
    }

    // 5. Loader start (after this cycle's switches).
    if (next_load < T) {
      StatTile& st = tiles[next_load];
      bool start = false;
      if (forced) {
        const int64_t want = (*forced)[next_load].preload_start;
        if (want < c) cx.hazard(c, -1, -1, "forced preload start out of order");
        if (want == c) {
          if (c < last_load_end) cx.hazard(c, -1, -1, "loader port busy");
          start = true;
        }
      } else if (c >= last_load_end && c >= st.stationary_ready) {
        if (cx.db) {
          start = !n_sh[at(0, 0)].pending;
        } else {
          // Every loaded tile has begun streaming and its last operand enters row 0 by
          // the end of this cycle: the load wave then trails it through the array.
          start = next_load == next_stream && window_end <= c + 1;
        }
      }
      if (start) {
        st.L = c;
        st.P = c + st.k;
        last_load_end = st.P;
        loads.push_back(Load{next_load, c});
        ++next_load;
      }
    }

    // 6. Load shifts: column j of a load started at L shifts at L+j .. L+j+k-1; at step q
    //    rows 1..q take the row above, row 0 takes W[k-1-q] (zero beyond the tile width).
    std::vector<Weight>& target = cx.db ? n_sh : n_act;
    const std::vector<Weight>& before = cx.db ? sh : act;
    std::fill(col_written.begin(), col_written.end(), 0);
    for (const Load& ld : loads) {
      StatTile& st = tiles[ld.tile];
      for (int64_t j = 0; j < C; ++j) {
        const int64_t q = c - ld.L - j;
        if (q < 0 || q >= st.k) continue;
        if (col_written[j]) cx.hazard(c, 0, j, "two loads shift one column");
        col_written[j] = 1;
        for (int64_t i = q; i >= 0; --i) {
          Weight nw;
          if (i == 0) {
            const int64_t si = st.k - 1 - q;
            nw = Weight{j < st.w ? st.W[si * st.w + j] : 0, ld.tile, si, j, false};
          } else {
            nw = before[at(i - 1, j)];
          }
          nw.pending = cx.db;
          Weight& dst = target[at(i, j)];
          if (cx.db && dst.pending && dst.tile != ld.tile) {
            cx.hazard(c, i, j, "shadow weight of tile " + std::to_string(dst.tile) +
                                   " overwritten before its switch");
          }
          dst = nw;
        }
        if (j == 0 && q == st.k - 1) st.loaded = true;
      }
    }
    std::erase_if(loads, [&](const Load& ld) { return c >= ld.L + tiles[ld.tile].k - 1 + C - 1; });

    act.swap(n_act);
    sh.swap(n_sh);
    opr.swap(n_opr);
    sw.swap(n_sw);
    ps.swap(n_ps);
  }

  for (int64_t t = 0; t < T; ++t) {
    const StatTile& st = tiles[t];
    record_tile(run, t, TileSchedule{st.L, st.P, st.S, st.E, st.done}, st.macs);
  }
  return run;
}

// ----------------------------------------------------------------------------------------
// os: C (m x n) accumulates in place; A rows stream from the left, B columns from the top.
struct OsTile {
  int64_t m = 0, k = 0, n = 0, len = 0;
  const ReferenceTile* src = nullptr;
  std::vector<int64_t> step_at;  // window offset -> step p, or -1
  int64_t ready = 0;
  int64_t S = -1, E = -1, done = 0, written = 0, macs = 0;
};

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

ReferenceRun simulate_os(const Common& cx, std::span<const ReferenceTile> in,
                         const std::vector<TileSchedule>* forced) {
  const int64_t R = cx.R, C = cx.C;
  const int64_t T = static_cast<int64_t>(in.size());
  std::vector<OsTile> tiles(in.size());
  ReferenceRun run;
  run.tiles.resize(in.size());
  for (int64_t t = 0; t < T; ++t) {
    OsTile& st = tiles[t];
    st.src = &in[t];
    st.m = in[t].shape.m;
    st.k = in[t].shape.k;
    st.n = in[t].shape.n;
    st.len = std::max(st.k, in[t].min_stream_cycles);
    st.step_at.assign(st.len, -1);
    for (int64_t p = 0; p < st.k; ++p) st.step_at[step_offset(p, st.k, st.len)] = p;
    st.ready = std::max(in[t].stream_ready, in[t].stationary_ready);
    run.tiles[t].c.assign(st.m * st.n, 0);
  }

  const std::size_t N = static_cast<std::size_t>(R * C);
  auto at = [C](int64_t i, int64_t j) { return static_cast<std::size_t>(i * C + j); };
  std::vector<AOp> a_reg(N), n_a(N);
  std::vector<BOp> b_reg(N), n_b(N);
  // Double buffered: `acc` holds partial sums, `out` is the drain chain.
  // Single buffered: `acc` is both (out unused).
  std::vector<Cell> acc(N), out(N), n_acc(N), n_chain(N);
  std::vector<uint8_t> written(N);
  std::vector<AOp> edge_a(R);
  std::vector<BOp> edge_b(C);
  struct Trigger {
    int64_t tile, col;
  };
  std::vector<Trigger> triggers;

  int64_t next_stream = 0, finished = 0, window_end = 0;
  int64_t frontier = 0;  // controller counter: max over started tiles of E + m
  bool any_started = false;
  const int64_t bound = cycle_bound(in, forced, R, C);

  for (int64_t c = 0; finished < T; ++c) {
    if (c > bound) cx.hazard(c, -1, -1, "the array did not finish (deadlock)");

    // 1. Stream start.
    if (next_stream < T) {
      OsTile& st = tiles[next_stream];
      bool start = false;
      if (forced) {
        start = forced_stream_starts(cx, (*forced)[next_stream], c, window_end);
      } else if (c >= window_end && c >= st.ready) {
        if (!any_started) {
          start = true;
        } else if (cx.db) {
          start = c + st.len >= frontier;
        } else {
          start = c >= frontier - 1;
        }
      }
      if (start) {
        st.S = c;
        st.E = c + st.len;
        window_end = st.E;
        frontier = std::max(frontier, st.E + st.m);
        any_started = true;
        ++next_stream;
      }
    }

    // 2. Edge inputs: A[i][p] into row i at S+off(p)+i, B[p][j] into column j at S+off(p)+j.
    std::fill(edge_a.begin(), edge_a.end(), AOp{});
    std::fill(edge_b.begin(), edge_b.end(), BOp{});
    for (int64_t t = 0; t < next_stream; ++t) {
      const OsTile& st = tiles[t];
      if (c > st.E + R + C) continue;
      for (int64_t i = 0; i < st.m; ++i) {
        const int64_t d = c - i - st.S;
        if (d < 0 || d >= st.len || st.step_at[d] < 0) continue;
        if (edge_a[i].valid) cx.hazard(c, i, 0, "two A operands enter the row in one cycle");
        const int64_t p = st.step_at[d];
        edge_a[i] = AOp{true, st.src->a[i * st.k + p], t, i, p};
      }
      for (int64_t j = 0; j < st.n; ++j) {
        const int64_t d = c - j - st.S;
        if (d < 0 || d >= st.len || st.step_at[d] < 0) continue;
        if (edge_b[j].valid) cx.hazard(c, 0, j, "two B operands enter the column in one cycle");
        const int64_t p = st.step_at[d];
        edge_b[j] = BOp{true, st.src->b[p * st.n + j], t, j, p};
      }
    }

    // 3. Drain chain: draining results move down one row; row R-1 writes the accumulators.
    std::vector<Cell>& chain = cx.db ? out : acc;
    for (std::size_t x = 0; x < N; ++x) n_chain[x] = chain[x].draining ? Cell{} : chain[x];
    std::fill(written.begin(), written.end(), 0);
    for (int64_t i = 0; i < R; ++i) {
      for (int64_t j = 0; j < C; ++j) {
        const Cell& e = chain[at(i, j)];
        if (!e.draining) continue;
        if (i == R - 1) {
          OsTile& st = tiles[e.tile];
          run.tiles[e.tile].c[e.i * st.n + e.j] = e.v;
          st.done = c + 1;
          if (++st.written == st.m * st.n) ++finished;
          continue;
        }
        const std::size_t y = at(i + 1, j);
        if (n_chain[y].state != 0) {
          cx.hazard(c, i + 1, j, "draining result of tile " + std::to_string(e.tile) +
                                     " runs into a held value of tile " +
                                     std::to_string(n_chain[y].tile));
        }
        n_chain[y] = e;
        written[y] = 1;
      }
    }

    // 4. PEs: MAC when an A and a B of the same tile and step meet.
    if (cx.db) n_acc = acc;
    triggers.clear();
    for (int64_t i = 0; i < R; ++i) {
      for (int64_t j = 0; j < C; ++j) {
        const std::size_t x = at(i, j);
        const AOp ain = j == 0 ? edge_a[i] : a_reg[at(i, j - 1)];
        const BOp bin = i == 0 ? edge_b[j] : b_reg[at(i - 1, j)];
        n_a[x] = ain;
        n_b[x] = bin;
        if (ain.valid && bin.valid) {
          if (ain.tile != bin.tile || ain.p != bin.p || ain.row != i || bin.col != j) {
            cx.hazard(c, i, j, "A (tile " + std::to_string(ain.tile) + ", step " +
                                   std::to_string(ain.p) + ") met B (tile " +
                                   std::to_string(bin.tile) + ", step " + std::to_string(bin.p) +
                                   ")");
          }
          OsTile& st = tiles[ain.tile];
          Cell cur = acc[x];
          if (cur.state == 2) {
            // Single buffered: a finished result still in the accumulator register. It
            // leaves this cycle only if its column is draining.
            if (!cur.draining) cx.hazard(c, i, j, "new tile overwrites a finished result");
            cur = Cell{};
          }
          if (cur.state == 1 && (cur.tile != ain.tile || cur.count != ain.p)) {
            cx.hazard(c, i, j, "partial sum of another tile or step in the accumulator");
          }
          if (cur.state == 0 && ain.p != 0) cx.hazard(c, i, j, "partial sum lost");
          Cell nc{1, false, mac32(cur.state == 1 ? cur.v : 0, ain.v, bin.v), ain.tile, ain.p + 1,
                  i, j};
          ++st.macs;
          const bool final_step = nc.count == st.k;
          if (final_step) {
            nc.state = 2;
            if (i == st.m - 1) triggers.push_back(Trigger{ain.tile, j});
          }
          if (cx.db && !final_step) {
            n_acc[x] = nc;  // private accumulator register: checked above
          } else {
            // Into the drain chain's register (double buffered: the output register,
            // freeing the accumulator; single buffered: the accumulator itself). What it
            // keeps this cycle must be empty or (single buffered) this PE's own partial sum,
            // and no draining result may arrive in it.
            if (cx.db) n_acc[x] = Cell{};
            const Cell& kept = n_chain[x];
            const bool own = !cx.db && kept.state == 1 && kept.tile == nc.tile;
            if (written[x] || (kept.state != 0 && !own)) {
              cx.hazard(c, i, j, "result of tile " + std::to_string(nc.tile) +
                                     " collides with a value in the drain chain");
            }
            n_chain[x] = nc;
          }
        } else {
          if (ain.valid && j < tiles[ain.tile].n) cx.hazard(c, i, j, "A operand without its B");
          if (bin.valid && i < tiles[bin.tile].m) cx.hazard(c, i, j, "B operand without its A");
        }
      }
    }

    // 5. A column whose last row just finished starts draining next cycle.
    for (const Trigger& tr : triggers) {
      int64_t count = 0;
      for (int64_t i = 0; i < R; ++i) {
        Cell& e = n_chain[at(i, tr.col)];
        if (e.state == 2 && e.tile == tr.tile && !e.draining) {
          e.draining = true;
          ++count;
        }
      }
      if (count != tiles[tr.tile].m) cx.hazard(c, -1, tr.col, "column drains an incomplete tile");
    }

    a_reg.swap(n_a);
    b_reg.swap(n_b);
    if (cx.db) {
      acc.swap(n_acc);
      out.swap(n_chain);
    } else {
      acc.swap(n_chain);
    }
  }

  for (int64_t t = 0; t < T; ++t) {
    const OsTile& st = tiles[t];
    record_tile(run, t, TileSchedule{st.S, st.S, st.S, st.E, st.done}, st.macs);
  }
  return run;
}

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
    case ReferenceMachine::kOutputStationary: return simulate_os(cx, tiles, forced);
    case ReferenceMachine::kStationaryB:
    case ReferenceMachine::kStationaryAT: break;
  }
  return simulate_stationary(cx, tiles, forced);
}

}  // namespace tessera::array
