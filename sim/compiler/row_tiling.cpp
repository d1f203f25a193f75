// Row tiling: a layer whose own working set does not fit runs in tiles of rows streamed
// through host memory.
#include "sim/compiler/lowering.h"

#include "sim/common/error.h"
#include "sim/graph/ops/registry.h"

namespace tessera::compiler::detail {

namespace {
// Row tiling from the op's OpDef: output row r needs only input row r (given the first
// input's rank).
bool row_local_op(const Layer& layer, size_t rank) {
  const graph::OpDef& def = graph::op_def(layer.op);
  return def.row_local ? def.row_local(layer, rank) : def.elementwise;
}
bool reduction_op(OpKind op) { return graph::op_def(op).reduction; }
bool gathering_op(OpKind op) { return graph::op_def(op).gathers_rows; }
bool windowed_op(const Layer& layer, const Graph& g) {
  return graph::op_def(layer.op).windowed && g.tensors[static_cast<size_t>(layer.inputs[0])].shape.size() == 3 &&
         g.tensors[static_cast<size_t>(layer.output)].shape.size() == 3;
}
// A resize of an image ([H, W, C] -> [OH, OW, C]): output line oh reads the input lines
// around oh * H / OH, whatever the coordinate mode.
bool image_resize(const Layer& layer, const Graph& g) {
  return layer.op == OpKind::kResize && g.tensors[static_cast<size_t>(layer.inputs[0])].shape.size() == 3 &&
         g.tensors[static_cast<size_t>(layer.output)].shape.size() == 3;
}
}  // namespace

RowTiler::RowTiler(Lowering& l, int li)
    : l_(l), g_(l.g_), place_(l.place_), li_(li), layer_(l.g_.layers[static_cast<size_t>(li)]), y_(layer_.output),
      n_in_(static_cast<int>(layer_.inputs.size())), capacity_(l.scratchpad_bytes()) {}

// A layer whose inputs and output do not fit the unified buffer at once runs in tiles of
// output rows (a reduction: of input rows): the biggest of its tensors stream through
// host memory, each in two tile buffers (the transfer of one tile overlaps the work on
// the other), and the rest stay resident. Tiles are as large as fit.
void RowTiler::run() {
  classify();
  choose_row_maps();
  choose_tiles();
  place_buffers();
  emit_tiles();
  account();
}

// Which rows are tiled (the output's, or a reduction's input's), or why the layer cannot be.
void RowTiler::classify() {
  const Layer& layer = layer_;
  vector_conv_ = VectorLowering(l_).grouped_conv_on_vector(layer);
  reduction_ = reduction_op(layer.op) && !row_local_op(layer, g_.tensors[layer.inputs[0]].shape.size());
  // An op whose output rows gather from all over its input (transpose) keeps the input whole
  // (it must fit) while the output streams (attention's head transposes at long sequences).
  gathers_ = gathering_op(layer.op);
  by_output_rows_ =
      !reduction_ && (layer.op == OpKind::kFc || layer.op == OpKind::kMatmul || windowed_op(layer, g_) ||
                      image_resize(layer, g_) || gathers_ ||
                      (!graph::is_matrix_op(layer.op) && row_local_op(layer, g_.tensors[layer.inputs[0]].shape.size())));
  head_ = g_.source + ": workload '" + g_.name + "' does not fit " + l_.scratchpad_text() + ": layer '" + layer.name +
          "' (" + std::string(graph::op_name(layer.op)) + ")";
  if (!reduction_ && !by_output_rows_) {
    throw InputError(head_ + " needs " + std::to_string(Spiller(l_).working_set_bytes(li_)) +
                     " bytes at once for its inputs and output and cannot run in row tiles (tiled are: fc, conv2d, "
                     "matmul, pooling, resize, transpose, reductions and row-wise vector ops); use a larger "
                     "unified_buffer.capacity");
  }
  if (graph::is_matrix_op(layer.op) && !vector_conv_) l_.gemm_.check_mac_mode(layer);
}

void RowTiler::choose_row_maps() {
  const Layer& layer = layer_;
  maps_.assign(static_cast<size_t>(n_in_), RowMap::kWhole);
  for (int i = 0; i < n_in_; ++i) {
    if (reduction_) {
      // The input streams in chunks of its own rows (if they are its storage's rows).
      const int x = layer.inputs[0], xs = l_.storage(x);
      const bool addressable = xs == x || (place_[xs].rows_per_sample == place_[x].rows_per_sample && place_[xs].cols == place_[x].cols);
      maps_[i] = i == 0 && addressable ? RowMap::kSame : RowMap::kWhole;
    } else {
      maps_[i] = row_map(i);
    }
  }
  // Rows being tiled: the output's (or, for a reduction, the input's) rows of one sample.
  rows_total_ = reduction_ ? place_[layer.inputs[0]].rows_per_sample : place_[y_].rows_per_sample;
}

RowMap RowTiler::row_map(int input) const {
  const Layer& layer = layer_;
  const int x = layer.inputs[static_cast<size_t>(input)];
  const int s = l_.storage(x), y = layer.output;
  // Streaming addresses the storage's rows: an alias must keep its source's row layout.
  if (s != x && (place_[s].rows_per_sample != place_[x].rows_per_sample || place_[s].cols != place_[x].cols)) {
    return RowMap::kWhole;
  }
  if (layer.op == OpKind::kFc) return RowMap::kSame;
  if (windowed_op(layer, g_)) return input == 0 ? RowMap::kConvBand : RowMap::kWhole;
  if (image_resize(layer, g_)) return input == 0 ? RowMap::kResizeBand : RowMap::kWhole;
  if (layer.op == OpKind::kMatmul) {
    // A's rows are the output's when both have the same heads; B is needed whole.
    const auto& as = g_.tensors[static_cast<size_t>(x)].shape;
    const auto& ys = g_.tensors[static_cast<size_t>(y)].shape;
    const bool same_heads = input == 0 && as.size() == ys.size() && std::equal(as.begin(), as.end() - 2, ys.begin());
    return same_heads ? RowMap::kSame : RowMap::kWhole;
  }
  if (row_local_op(layer, g_.tensors[static_cast<size_t>(x)].shape.size()) &&
      place_[x].rows_per_sample == place_[y].rows_per_sample) {
    return RowMap::kSame;
  }
  return RowMap::kWhole;
}

// Rows [r0, r1) of one sample's output need these rows of input `input`.
std::pair<int64_t, int64_t> RowTiler::input_rows(RowMap map, int input, int64_t r0, int64_t r1) const {
  const Layer& layer = layer_;
  const int x = layer.inputs[static_cast<size_t>(input)];
  switch (map) {
    case RowMap::kSame: return {r0, r1};
    case RowMap::kWhole: return {0, place_[x].rows_per_sample};
    case RowMap::kConvBand: {
      const auto& xs = g_.tensors[static_cast<size_t>(x)].shape;
      const auto& ys = g_.tensors[static_cast<size_t>(layer.output)].shape;
      const int64_t IH = xs[0], IW = xs[1], OW = ys[1];
      const int64_t oh0 = r0 / OW, oh1 = (r1 - 1) / OW + 1;
      int64_t ih0 = std::max<int64_t>(0, oh0 * layer.stride_h - layer.pad_top);
      int64_t ih1 = std::min<int64_t>(IH, (oh1 - 1) * layer.stride_h - layer.pad_top + (layer.kernel_h - 1) * layer.dilation_h + 1);
      if (ih1 <= ih0) ih0 = std::min(ih0, IH - 1), ih1 = ih0 + 1;  // a window wholly in the padding
      return {ih0 * IW, ih1 * IW};
    }
    case RowMap::kResizeBand: {
      // Lines floor(oh0 * IH / OH) .. ceil(oh1 * IH / OH), widened by the taps around a
      // sample point (1 for nearest and linear, 2 for cubic) so that every coordinate
      // transformation mode (half_pixel, align_corners, asymmetric, ...) is covered.
      const auto& xs = g_.tensors[static_cast<size_t>(x)].shape;
      const auto& ys = g_.tensors[static_cast<size_t>(layer.output)].shape;
      const int64_t IH = xs[0], IW = xs[1], OH = ys[0], OW = ys[1];
      const int64_t oh0 = r0 / OW, oh1 = (r1 - 1) / OW + 1;
      const int64_t taps = layer.mode == "cubic" ? 2 : 1;
      const int64_t ih0 = std::max<int64_t>(0, oh0 * IH / OH - taps);
      const int64_t ih1 = std::min<int64_t>(IH, (oh1 * IH + OH - 1) / OH + taps);
      return {ih0 * IW, ih1 * IW};
    }
  }
  return {0, 0};
}

// ---------------------------------------------------------------- the tile size

std::pair<int64_t, int64_t> RowTiler::band(int i, int64_t r0, int64_t r1) const {
  return reduction_ ? (i == 0 ? std::pair<int64_t, int64_t>{r0, r1} : input_rows(RowMap::kWhole, i, r0, r1))
                    : input_rows(maps_[static_cast<size_t>(i)], i, r0, r1);
}

uint64_t RowTiler::row_bytes(int t) const {
  return static_cast<uint64_t>(place_[t].cols * dtype_bytes(g_.tensors[static_cast<size_t>(t)].dtype));
}

int64_t RowTiler::max_band(int i, int64_t R) const {
  int64_t most = 0;
  for (int64_t r0 = 0; r0 < rows_total_; r0 += R) {
    const auto [a, b] = band(i, r0, std::min(rows_total_, r0 + R));
    most = std::max(most, b - a);
  }
  return most;
}

// Bytes a tile of R rows takes in `slots` tile buffers per streamed tensor, with the rest resident.
uint64_t RowTiler::tile_bytes(int64_t R, int64_t slots) const {
  uint64_t bytes = out_streamed_ ? static_cast<uint64_t>(slots * R) * row_bytes(y_) : place_[y_].bytes;
  std::vector<int> whole;
  for (int i = 0; i < n_in_; ++i) {
    const int x = layer_.inputs[static_cast<size_t>(i)];
    if (b_from_memory_ && i == 1) continue;  // read by the weight fetchers, never resident
    if (streamed_[static_cast<size_t>(i)]) {
      bytes += static_cast<uint64_t>(slots * max_band(i, R)) * row_bytes(l_.storage(x));
    } else if (std::find(whole.begin(), whole.end(), l_.storage(x)) == whole.end()) {
      whole.push_back(l_.storage(x));
      bytes += place_[l_.storage(x)].bytes;
    }
  }
  return bytes;
}

int64_t RowTiler::largest_tile(int64_t slots) const {  // 0: not even one row fits
  if (tile_bytes(1, slots) > capacity_) return 0;
  if (tile_bytes(rows_total_, slots) <= capacity_) return rows_total_;
  int64_t lo = 1, hi = rows_total_;  // fits(lo), !fits(hi)
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (tile_bytes(mid, slots) <= capacity_ ? lo : hi) = mid;
  }
  return lo;
}

void RowTiler::stream_first(size_t n) {
  out_streamed_ = false;
  std::fill(streamed_.begin(), streamed_.end(), 0);
  for (size_t k = 0; k < n; ++k) {
    if (candidates_[k].second < 0) out_streamed_ = true;
    else streamed_[static_cast<size_t>(candidates_[k].second)] = 1;
  }
}

// Which tensors stream and how many rows a tile has (slots_ tile buffers each): the fewest
// tensors that give full-size tiles (a full accumulator half), else those that give the largest.
void RowTiler::search_tiles() {
  R_ = 0;
  const int64_t wanted = std::min(rows_total_, acc_half_);  // a full accumulator half per tile
  size_t best_n = candidates_.size();
  for (size_t n = 1; n <= candidates_.size(); ++n) {
    stream_first(n);
    const int64_t r = largest_tile(slots_);
    if (r > R_) R_ = r, best_n = n;
    if (R_ >= wanted) break;
  }
  stream_first(best_n);
}

void RowTiler::choose_tiles() {
  // Tensors to stream, biggest first: index -1 is the output (a reduction keeps its small output).
  if (by_output_rows_) candidates_.push_back({place_[y_].bytes, -1});
  for (int i = 0; i < n_in_; ++i) {
    if (maps_[static_cast<size_t>(i)] != RowMap::kWhole) candidates_.push_back({place_[l_.storage(layer_.inputs[i])].bytes, i});
  }
  std::stable_sort(candidates_.begin(), candidates_.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  streamed_.assign(static_cast<size_t>(n_in_), 0);
  acc_half_ = std::max<int64_t>(1, l_.arch_.accumulators.entries / 2);
  // A matmul's B is needed whole by every tile. Where it leaves room for no full-size tile, B
  // may stay in device memory instead, its tiles read by the weight fetchers (XLA streams B's
  // blocks from HBM likewise), again by every tile of output rows: taken when that gives larger
  // tiles (thin tiles pay every tile's transfers, syncs and drains). Only where spills and
  // weights both live in device memory: the fetchers are wired to one of device memory or the
  // host link (MemoryRouter), and TPU v1's shape has no path from host memory to them.
  const auto& where = l_.arch_.residency;
  const bool b_can_stay_out = layer_.op == OpKind::kMatmul && n_in_ == 2 && maps_[1] == RowMap::kWhole &&
                              l_.storage(layer_.inputs[0]) != l_.storage(layer_.inputs[1]) &&
                              where.spills() == Residency::kDevice && where.weights == Residency::kDevice;
  search_tiles();
  if (b_can_stay_out && R_ < std::min(rows_total_, acc_half_)) {
    const int64_t resident_rows = R_;
    const std::vector<char> resident_streamed = streamed_;
    const bool resident_out_streamed = out_streamed_;
    b_from_memory_ = true;
    search_tiles();
    if (R_ <= resident_rows) {
      b_from_memory_ = false;
      R_ = resident_rows;
      streamed_ = resident_streamed;
      out_streamed_ = resident_out_streamed;
    }
  }
  if (R_ == 0) R_ = largest_tile(slots_ = 1);  // single-buffered: transfers no longer overlap the work
  if (R_ == 0) {
    throw InputError(head_ + " needs " + std::to_string(tile_bytes(1, 1)) + " bytes for its smallest tile (one " +
                     (reduction_ ? "input row" : "output row and the input rows it reads") +
                     ", its big tensors streamed through " +
                     (l_.arch_.residency.spills() == Residency::kHost ? "host" : "device") +
                     " memory" + (b_from_memory_ ? ", B read from there by the weight fetchers" : "") +
                     "); use a larger unified_buffer.capacity");
  }
  if (graph::is_matrix_op(layer_.op) && !vector_conv_ && R_ > acc_half_) R_ -= R_ % acc_half_;  // whole accumulator halves
}

// ---------------------------------------------------------------- buffers

// Streamed inputs go to host memory, the rest are made resident, and the tile buffers are placed.
void RowTiler::place_buffers() {
  const Layer& layer = layer_;
  // Streamed inputs come from host memory: resident ones go there first.
  for (int i = 0; i < n_in_; ++i) {
    const int s = l_.storage(layer.inputs[static_cast<size_t>(i)]);
    if (streamed_[static_cast<size_t>(i)] && place_[s].allocated) {
      l_.pinned_[static_cast<size_t>(s)] = 0;
      Spiller(l_).evict(s, li_);
    }
  }
  if (b_from_memory_) {  // B's only copy must be off-chip, where the weight fetchers read it
    const int s = l_.storage(layer.inputs[1]);
    if (place_[s].allocated) {
      l_.pinned_[static_cast<size_t>(s)] = 0;
      Spiller(l_).evict(s, li_);
    }
  }
  std::vector<int> needs;
  for (int i = 0; i < n_in_; ++i) {
    const int s = l_.storage(layer.inputs[static_cast<size_t>(i)]);
    if (streamed_[static_cast<size_t>(i)] || (b_from_memory_ && i == 1)) continue;
    l_.pinned_[static_cast<size_t>(s)] = 1;
    if (!place_[s].allocated && std::find(needs.begin(), needs.end(), s) == needs.end()) needs.push_back(s);
  }
  if (!out_streamed_) needs.push_back(y_);
  // Tile buffers: their own regions, so a tile's transfer waits only for the readers of
  // the tile that used the same buffer before it.
  in_slot_.assign(static_cast<size_t>(n_in_), {});
  for (int i = 0; i < n_in_; ++i) {
    if (!streamed_[static_cast<size_t>(i)]) continue;
    const int s = l_.storage(layer.inputs[static_cast<size_t>(i)]);
    const int64_t rows = max_band(i, R_);
    for (int64_t k = 0; k < slots_; ++k) {
      in_slot_[static_cast<size_t>(i)].push_back(l_.add_scratch(li_, rows, place_[s].cols, rows, g_.tensors[s].dtype, false));
      needs.push_back(in_slot_[static_cast<size_t>(i)].back());
    }
  }
  if (out_streamed_) {
    for (int64_t k = 0; k < slots_; ++k) {
      out_slot_.push_back(l_.add_scratch(li_, R_, place_[y_].cols, R_, g_.tensors[y_].dtype, false));
      needs.push_back(out_slot_.back());
    }
  }
  Spiller(l_).make_room(li_, needs);
}

// ---------------------------------------------------------------- the tiles

void RowTiler::emit_tiles() {
  const Layer& layer = layer_;
  l_.layer_body_start_ = l_.body_emitted();
  y_bytes_ = dtype_bytes(g_.tensors[y_].dtype);
  y_cols_ = place_[y_].cols;
  rps_y_ = place_[y_].rows_per_sample;
  weight_base_ = graph::is_matrix_op(layer.op) && !vector_conv_ ? MatrixLowering(l_).reserve_weights(layer) : l_.weight_cursor_;
  work_per_output_ = graph::is_matrix_op(layer.op) ? 0 : VectorLowering(l_).vector_work_per_output(layer);
  if (b_from_memory_) {  // an off-chip home for B, addressed as the weight fetchers address weights
    const int b = l_.storage(layer.inputs[1]);
    b_base_ = l_.weight_cursor_;
    l_.weight_cursor_ += static_cast<uint64_t>(elements_bytes(g_.tensors[static_cast<size_t>(b)].dtype, place_[b].rows * place_[b].cols));
  }
  bands_.assign(static_cast<size_t>(n_in_), {});
  for (int64_t s = 0; s < l_.batch_; ++s) {
    for (int64_t r0 = 0; r0 < rows_total_; r0 += R_, ++tiles_) {
      emit_tile(Tile{s, r0, std::min(rows_total_, r0 + R_), static_cast<size_t>(tiles_ % slots_)});
    }
  }
  for (int i = 0; i < n_in_; ++i) {
    if (streamed_[static_cast<size_t>(i)]) place_[l_.storage(layer.inputs[static_cast<size_t>(i)])].loaded = true;
  }
  if (out_streamed_) place_[y_].on_host = true;  // its rows are in host memory only
  l_.p_.layers[static_cast<size_t>(li_)].row_tiles += tiles_;
}

void RowTiler::emit_tile(const Tile& t) {
  const Layer& layer = layer_;
  // Stream in this tile's input rows (a window's halo is read again with every tile).
  for (int i = 0; i < n_in_; ++i) {
    bands_[static_cast<size_t>(i)] = band(i, t.r0, t.r1);
    if (!streamed_[static_cast<size_t>(i)]) continue;
    const int src = l_.storage(layer.inputs[static_cast<size_t>(i)]);
    const int slot = in_slot_[static_cast<size_t>(i)][t.k];
    const auto [a, b] = bands_[static_cast<size_t>(i)];
    l_.host_transfer(Opcode::kReadHost, src, li_, Region{Space::kUnifiedBuffer, slot, 0, b - a, 0, place_[slot].cols},
                     static_cast<uint64_t>(b - a) * row_bytes(src), place_[slot].offset);
  }
  if (layer.op == OpKind::kMatmul) emit_matmul(t);
  else if (layer.op == OpKind::kFc || (layer.op == OpKind::kConv2d && !vector_conv_)) emit_weight_gemms(t);
  else emit_vector(t);
  if (out_streamed_) {
    l_.host_transfer(Opcode::kWriteHost, y_, li_, Region{Space::kUnifiedBuffer, out_slot_[t.k], 0, t.r1 - t.r0, 0, y_cols_},
                     static_cast<uint64_t>(t.r1 - t.r0) * row_bytes(y_), place_[out_slot_[t.k]].offset);
  }
}

// Rows [a, b) of input i within the tile's sample, columns [c0, c1).
Region RowTiler::in_region(const Tile& t, int i, int64_t a, int64_t b, int64_t c0, int64_t c1) const {
  const int x = layer_.inputs[static_cast<size_t>(i)];
  if (streamed_[static_cast<size_t>(i)]) {
    const int64_t base = bands_[static_cast<size_t>(i)].first;
    return Region{Space::kUnifiedBuffer, in_slot_[static_cast<size_t>(i)][t.k], a - base, b - base, c0, c1};
  }
  if (maps_[static_cast<size_t>(i)] == RowMap::kWhole && layer_.op != OpKind::kMatmul) return l_.region(x, t.s, t.s + 1, c0, c1);
  const int64_t rps = place_[x].rows_per_sample;
  return l_.rows_region(x, t.s * rps + a, t.s * rps + b, c0, c1);
}

Region RowTiler::out_region(const Tile& t, int64_t a, int64_t b, int64_t c0, int64_t c1) const {
  if (out_streamed_) return Region{Space::kUnifiedBuffer, out_slot_[t.k], a - t.r0, b - t.r0, c0, c1};
  return l_.rows_region(y_, t.s * rps_y_ + a, t.s * rps_y_ + b, c0, c1);
}

uint64_t RowTiler::out_address(const Tile& t, int64_t a, int64_t c0) const {
  const int64_t row = out_streamed_ ? a - t.r0 : t.s * rps_y_ + a;
  return (out_streamed_ ? place_[out_slot_[t.k]].offset : place_[l_.storage(y_)].offset) +
         static_cast<uint64_t>((row * y_cols_ + c0) * y_bytes_);
}

// Heads whose rows fall in this tile; B (K^T or V) stays resident and is loaded per head (or,
// b_from_memory_, is read from off-chip memory by the weight fetchers).
void RowTiler::emit_matmul(const Tile& t) {
  const Layer& layer = layer_;
  const int64_t s = t.s, r0 = t.r0, r1 = t.r1;
  const int a = layer.inputs[0], b = layer.inputs[1];
  const int64_t M = layer.gemm_m_per_sample, K = layer.gemm_k;
  const auto& ys = g_.tensors[y_].shape;
  const auto& bs = g_.tensors[b].shape;
  const graph::Shape lead_y(ys.begin(), ys.end() - 2), lead_b(bs.begin(), bs.end() - 2);
  const int64_t rows_b = place_[b].rows_per_sample;
  for (int64_t h = r0 / M; h * M < r1; ++h) {
    const int64_t m_lo = std::max(r0, h * M) - h * M, m_hi = std::min(r1, (h + 1) * M) - h * M;
    const int64_t gb = head_index(h, lead_y, lead_b);
    const int64_t row0 = h * M + m_lo;  // in A's and the output's rows (same heads) or the output's only
    GemmJob job = MatrixLowering(l_).ub_gemm(li_, m_hi - m_lo);
    const auto& as = g_.tensors[a].shape;
    const int64_t a_row0 = maps_[0] == RowMap::kSame ? row0 : head_index(h, lead_y, graph::Shape(as.begin(), as.end() - 2)) * M + m_lo;
    job.a_region = [this, &t, a_row0](int64_t m0, int64_t m1, int64_t k0, int64_t k1) {
      return in_region(t, 0, a_row0 + m0, a_row0 + m1, k0, k1);
    };
    if (b_from_memory_) {
      job.b_from_ub = false;
      job.weight_row_stride = place_[l_.storage(b)].cols;
      job.weight_base = b_base_ + static_cast<uint64_t>(elements_bytes(job.b_dtype, (s * rows_b + gb * K) * job.weight_row_stride));
    } else {
      job.b_region = [this, s, gb, rows_b, b, K](int64_t k0, int64_t k1, int64_t n0, int64_t n1) {
        return l_.rows_region(b, s * rows_b + gb * K + k0, s * rows_b + gb * K + k1, n0, n1);
      };
    }
    job.out_region = [this, &t, row0](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
      return out_region(t, row0 + m0, row0 + m1, n0, n1);
    };
    job.out_address = [this, &t, row0](int64_t m0, int64_t n0) { return out_address(t, row0 + m0, n0); };
    l_.gemm_.emit(job);
  }
}

// Fc and conv2d on the array: the tile's rows against the weights, group by group.
void RowTiler::emit_weight_gemms(const Tile& t) {
  const Layer& layer = layer_;
  const int64_t r0 = t.r0, r1 = t.r1;
  const int64_t G = layer.gemm_groups;
  const int64_t cin_g = place_[layer.inputs[0]].cols / G, cout_g = layer.out_features / G;
  const bool conv = layer.op == OpKind::kConv2d;
  const int64_t step = conv && G > 1 ? acc_half_ : r1 - r0;  // groups share accumulator-sized chunks
  for (int64_t c0 = r0; c0 < r1; c0 += step) {
    const int64_t c1 = std::min(r1, c0 + step);
    for (int64_t g = 0; g < (conv ? G : 1); ++g) {
      GemmJob job = MatrixLowering(l_).weight_gemm(li_, c1 - c0, weight_base_, g);
      const int64_t ch_base = g * cin_g, out_base = conv ? g * cout_g : 0;
      job.a_region = [this, &t, c0, ch_base, conv, cin_g](int64_t m0, int64_t m1, int64_t k0, int64_t k1) {
        if (!conv) return in_region(t, 0, c0 + m0, c0 + m1, k0, k1);
        const auto [a, b] = input_rows(maps_[0], 0, c0 + m0, c0 + m1);
        const auto [lo, hi] = im2col_channels(k0, k1, cin_g);
        return in_region(t, 0, a, b, ch_base + lo, ch_base + hi);
      };
      job.out_region = [this, &t, c0, out_base](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
        return out_region(t, c0 + m0, c0 + m1, out_base + n0, out_base + n1);
      };
      job.out_address = [this, &t, c0, out_base](int64_t m0, int64_t n0) { return out_address(t, c0 + m0, out_base + n0); };
      l_.gemm_.emit(job);
    }
  }
}

// One vector instruction over the tile (a reduction: into the whole output, updated in place).
void RowTiler::emit_vector(const Tile& t) {
  const Layer& layer = layer_;
  const int64_t s = t.s, r0 = t.r0, r1 = t.r1;
  Instruction v;
  v.op = Opcode::kVector;
  v.layer = li_;
  v.vector_function = graph::op_def(layer.op).listing_name();
  v.vector_class = graph::op_def(layer.op).vector_class;
  for (int i = 0; i < n_in_; ++i) {
    const int x = layer.inputs[static_cast<size_t>(i)];
    const auto [a, b] = bands_[static_cast<size_t>(i)];
    v.reads.push_back(in_region(t, i, a, b, 0, place_[x].cols));
    // Gathered output rows come from all over the input (kept whole): a tile reads the
    // elements it writes, not the whole input.
    v.ub_read_bytes += gathers_
                           ? static_cast<uint64_t>((r1 - r0) * y_cols_ * dtype_bytes(g_.tensors[static_cast<size_t>(x)].dtype))
                           : static_cast<uint64_t>(b - a) * row_bytes(x);
  }
  if (reduction_) {
    // Every input element once; the partial result is read back and updated in place.
    v.elements = (r1 - r0) * place_[layer.inputs[0]].cols;
    const Region whole_out = l_.rows_region(y_, s * rps_y_, (s + 1) * rps_y_, 0, y_cols_);
    if (r0 > 0) {
      v.reads.push_back(whole_out);
      v.ub_read_bytes += static_cast<uint64_t>(rps_y_) * row_bytes(y_);
    }
    v.writes.push_back(whole_out);
    v.ub_write_bytes = static_cast<uint64_t>(rps_y_) * row_bytes(y_);
    v.ub_address = place_[l_.storage(y_)].offset;
  } else {
    v.elements = vector_conv_ ? (r1 - r0) * (layer.macs_per_sample() / rps_y_) : (r1 - r0) * y_cols_ * work_per_output_;
    if (vector_conv_) v.element_bytes = dtype_bytes(layer.weight_dtype);
    v.writes.push_back(out_region(t, r0, r1, 0, y_cols_));
    v.ub_write_bytes = static_cast<uint64_t>(r1 - r0) * row_bytes(y_);
    v.ub_address = out_address(t, r0, 0);
  }
  l_.emit(std::move(v));
}

// The LayerInfo facts of a row-tiled layer: the same as its untiled lowering's.
void RowTiler::account() {
  const Layer& layer = layer_;
  LayerInfo& info = l_.p_.layers[static_cast<size_t>(li_)];
  const Dtype x_dtype = g_.tensors[static_cast<size_t>(layer.inputs[0])].dtype;
  if (!graph::is_matrix_op(layer.op)) {
    info.mapping = "vector";
    info.a_dtype = info.b_dtype = g_.tensors[static_cast<size_t>(layer.output)].dtype;
    return;
  }
  const int64_t G = layer.gemm_groups, K = layer.gemm_k, N = layer.gemm_n;
  const int64_t M = l_.batch_ * layer.gemm_m_per_sample;
  if (layer.op == OpKind::kMatmul) {
    info.mapping = "array_ub";
    MatrixLowering(l_).account_gemm(li_, G * M, K, N, G, 0, x_dtype, g_.tensors[static_cast<size_t>(layer.inputs[1])].dtype);
    return;
  }
  info.mapping = VectorLowering(l_).grouped_conv_on_vector(layer) ? "vector" : "array";
  MatrixLowering(l_).account_gemm(li_, M * G, K, N, G, layer.weight_count(), x_dtype, layer.weight_dtype);
}

}  // namespace tessera::compiler::detail
