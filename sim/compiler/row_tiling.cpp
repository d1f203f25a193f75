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

RowMap Lowering::row_map(const Layer& layer, int input) const {
  const int x = layer.inputs[static_cast<size_t>(input)];
  const int s = storage(x), y = layer.output;
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
std::pair<int64_t, int64_t> Lowering::input_rows(const Layer& layer, RowMap map, int input, int64_t r0, int64_t r1) const {
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

// A layer whose inputs and output do not fit the unified buffer at once runs in tiles of
// output rows (a reduction: of input rows): the biggest of its tensors stream through
// host memory, each in two tile buffers (the transfer of one tile overlaps the work on
// the other), and the rest stay resident. Tiles are as large as fit.
void Lowering::lower_row_tiled(int li) {
  const Layer& layer = g_.layers[static_cast<size_t>(li)];
  const int y = layer.output;
  const uint64_t capacity = scratchpad_bytes();
  const int n_in = static_cast<int>(layer.inputs.size());
  const bool vector_conv = grouped_conv_on_vector(layer);
  const bool reduction = reduction_op(layer.op) && !row_local_op(layer, g_.tensors[layer.inputs[0]].shape.size());
  // An op whose output rows gather from all over its input (transpose) keeps the input whole
  // (it must fit) while the output streams (attention's head transposes at long sequences).
  const bool gathers = gathering_op(layer.op);
  const bool by_output_rows =
      !reduction && (layer.op == OpKind::kFc || layer.op == OpKind::kMatmul || windowed_op(layer, g_) ||
                     image_resize(layer, g_) || gathers ||
                     (!graph::is_matrix_op(layer.op) && row_local_op(layer, g_.tensors[layer.inputs[0]].shape.size())));
  const std::string head = g_.source + ": workload '" + g_.name + "' does not fit the unified buffer of '" +
                           arch_.name + "' (" + std::to_string(capacity) + " bytes): layer '" + layer.name + "' (" +
                           std::string(graph::op_name(layer.op)) + ")";
  if (!reduction && !by_output_rows) {
    throw InputError(head + " needs " + std::to_string(working_set_bytes(li)) +
                     " bytes at once for its inputs and output and cannot run in row tiles (tiled are: fc, conv2d, "
                     "matmul, pooling, resize, transpose, reductions and row-wise vector ops); use a larger "
                     "unified_buffer.capacity");
  }
  if (graph::is_matrix_op(layer.op) && !vector_conv) check_mac_mode(layer);

  std::vector<RowMap> maps(static_cast<size_t>(n_in));
  for (int i = 0; i < n_in; ++i) {
    if (reduction) {
      // The input streams in chunks of its own rows (if they are its storage's rows).
      const int x = layer.inputs[0], xs = storage(x);
      const bool addressable = xs == x || (place_[xs].rows_per_sample == place_[x].rows_per_sample && place_[xs].cols == place_[x].cols);
      maps[i] = i == 0 && addressable ? RowMap::kSame : RowMap::kWhole;
    } else {
      maps[i] = row_map(layer, i);
    }
  }
  // Rows being tiled: the output's (or, for a reduction, the input's) rows of one sample.
  const int64_t rows_total = reduction ? place_[layer.inputs[0]].rows_per_sample : place_[y].rows_per_sample;
  auto band = [&](int i, int64_t r0, int64_t r1) {
    return reduction ? (i == 0 ? std::pair<int64_t, int64_t>{r0, r1} : input_rows(layer, RowMap::kWhole, i, r0, r1))
                     : input_rows(layer, maps[static_cast<size_t>(i)], i, r0, r1);
  };
  auto row_bytes = [&](int t) {
    return static_cast<uint64_t>(place_[t].cols * dtype_bytes(g_.tensors[static_cast<size_t>(t)].dtype));
  };
  auto max_band = [&](int i, int64_t R) {
    int64_t most = 0;
    for (int64_t r0 = 0; r0 < rows_total; r0 += R) {
      const auto [a, b] = band(i, r0, std::min(rows_total, r0 + R));
      most = std::max(most, b - a);
    }
    return most;
  };
  // Tensors to stream, biggest first: index -1 is the output (a reduction keeps its small output).
  std::vector<std::pair<uint64_t, int>> candidates;
  if (by_output_rows) candidates.push_back({place_[y].bytes, -1});
  for (int i = 0; i < n_in; ++i) {
    if (maps[static_cast<size_t>(i)] != RowMap::kWhole) candidates.push_back({place_[storage(layer.inputs[i])].bytes, i});
  }
  std::stable_sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<char> streamed(static_cast<size_t>(n_in), 0);
  bool out_streamed = false;
  auto tile_bytes = [&](int64_t R, int64_t slots) {
    uint64_t bytes = out_streamed ? static_cast<uint64_t>(slots * R) * row_bytes(y) : place_[y].bytes;
    std::vector<int> whole;
    for (int i = 0; i < n_in; ++i) {
      const int x = layer.inputs[static_cast<size_t>(i)];
      if (streamed[static_cast<size_t>(i)]) {
        bytes += static_cast<uint64_t>(slots * max_band(i, R)) * row_bytes(storage(x));
      } else if (std::find(whole.begin(), whole.end(), storage(x)) == whole.end()) {
        whole.push_back(storage(x));
        bytes += place_[storage(x)].bytes;
      }
    }
    return bytes;
  };
  auto largest_tile = [&](int64_t slots) -> int64_t {  // 0: not even one row fits
    if (tile_bytes(1, slots) > capacity) return 0;
    if (tile_bytes(rows_total, slots) <= capacity) return rows_total;
    int64_t lo = 1, hi = rows_total;  // fits(lo), !fits(hi)
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (tile_bytes(mid, slots) <= capacity ? lo : hi) = mid;
    }
    return lo;
  };
  const int64_t acc_half = std::max<int64_t>(1, arch_.accumulators.entries / 2);
  const int64_t wanted = std::min(rows_total, acc_half);  // a full accumulator half per tile
  // Stream the fewest tensors that give full-size tiles, else those that give the largest.
  auto stream_first = [&](size_t n) {
    out_streamed = false;
    std::fill(streamed.begin(), streamed.end(), 0);
    for (size_t k = 0; k < n; ++k) {
      if (candidates[k].second < 0) out_streamed = true;
      else streamed[static_cast<size_t>(candidates[k].second)] = 1;
    }
  };
  int64_t R = 0, slots = 2;
  size_t best_n = candidates.size();
  for (size_t n = 1; n <= candidates.size(); ++n) {
    stream_first(n);
    const int64_t r = largest_tile(slots);
    if (r > R) R = r, best_n = n;
    if (R >= wanted) break;
  }
  stream_first(best_n);
  if (R == 0) R = largest_tile(slots = 1);  // single-buffered: transfers no longer overlap the work
  if (R == 0) {
    throw InputError(head + " needs " + std::to_string(tile_bytes(1, 1)) + " bytes for its smallest tile (one " +
                     (reduction ? "input row" : "output row and the input rows it reads") +
                     ", its big tensors streamed through " +
                     (arch_.residency.spills() == Residency::kHost ? "host" : "device") +
                     " memory); use a larger unified_buffer.capacity");
  }
  if (graph::is_matrix_op(layer.op) && !vector_conv && R > acc_half) R -= R % acc_half;  // whole accumulator halves

  // Streamed inputs come from host memory: resident ones go there first.
  for (int i = 0; i < n_in; ++i) {
    const int s = storage(layer.inputs[static_cast<size_t>(i)]);
    if (streamed[static_cast<size_t>(i)] && place_[s].allocated) {
      pinned_[static_cast<size_t>(s)] = 0;
      evict(s, li);
    }
  }
  std::vector<int> needs;
  for (int i = 0; i < n_in; ++i) {
    const int s = storage(layer.inputs[static_cast<size_t>(i)]);
    if (streamed[static_cast<size_t>(i)]) continue;
    pinned_[static_cast<size_t>(s)] = 1;
    if (!place_[s].allocated && std::find(needs.begin(), needs.end(), s) == needs.end()) needs.push_back(s);
  }
  if (!out_streamed) needs.push_back(y);
  // Tile buffers: their own regions, so a tile's transfer waits only for the readers of
  // the tile that used the same buffer before it.
  std::vector<std::vector<int>> in_slot(static_cast<size_t>(n_in));
  std::vector<int> out_slot;
  for (int i = 0; i < n_in; ++i) {
    if (!streamed[static_cast<size_t>(i)]) continue;
    const int s = storage(layer.inputs[static_cast<size_t>(i)]);
    const int64_t rows = max_band(i, R);
    for (int64_t k = 0; k < slots; ++k) {
      in_slot[static_cast<size_t>(i)].push_back(add_scratch(li, rows, place_[s].cols, rows, g_.tensors[s].dtype, false));
      needs.push_back(in_slot[static_cast<size_t>(i)].back());
    }
  }
  if (out_streamed) {
    for (int64_t k = 0; k < slots; ++k) {
      out_slot.push_back(add_scratch(li, R, place_[y].cols, R, g_.tensors[y].dtype, false));
      needs.push_back(out_slot.back());
    }
  }
  make_room(li, needs);

  layer_body_start_ = body_emitted();
  LayerInfo& info = p_.layers[static_cast<size_t>(li)];
  const Dtype y_dtype = g_.tensors[y].dtype;
  const int64_t y_bytes = dtype_bytes(y_dtype);
  const int64_t y_cols = place_[y].cols;
  const int64_t rps_y = place_[y].rows_per_sample;
  const uint64_t weight_base = graph::is_matrix_op(layer.op) && !vector_conv ? reserve_weights(layer) : weight_cursor_;
  const int64_t work_per_output = graph::is_matrix_op(layer.op) ? 0 : vector_work_per_output(layer);
  int64_t tile = 0;
  std::vector<std::pair<int64_t, int64_t>> bands(static_cast<size_t>(n_in));
  for (int64_t s = 0; s < batch_; ++s) {
    for (int64_t r0 = 0; r0 < rows_total; r0 += R, ++tile) {
      const int64_t r1 = std::min(rows_total, r0 + R);
      const auto k = static_cast<size_t>(tile % slots);
      // Stream in this tile's input rows (a window's halo is read again with every tile).
      for (int i = 0; i < n_in; ++i) {
        bands[static_cast<size_t>(i)] = band(i, r0, r1);
        if (!streamed[static_cast<size_t>(i)]) continue;
        const int src = storage(layer.inputs[static_cast<size_t>(i)]);
        const int slot = in_slot[static_cast<size_t>(i)][k];
        const auto [a, b] = bands[static_cast<size_t>(i)];
        host_transfer(Opcode::kReadHost, src, li, Region{Space::kUnifiedBuffer, slot, 0, b - a, 0, place_[slot].cols},
                      static_cast<uint64_t>(b - a) * row_bytes(src), place_[slot].offset);
      }
      // Rows [a, b) of input i within this sample, columns [c0, c1).
      auto in_region = [&, s, k](int i, int64_t a, int64_t b, int64_t c0, int64_t c1) {
        const int x = layer.inputs[static_cast<size_t>(i)];
        if (streamed[static_cast<size_t>(i)]) {
          const int64_t base = bands[static_cast<size_t>(i)].first;
          return Region{Space::kUnifiedBuffer, in_slot[static_cast<size_t>(i)][k], a - base, b - base, c0, c1};
        }
        if (maps[static_cast<size_t>(i)] == RowMap::kWhole && layer.op != OpKind::kMatmul) return region(x, s, s + 1, c0, c1);
        const int64_t rps = place_[x].rows_per_sample;
        return rows_region(x, s * rps + a, s * rps + b, c0, c1);
      };
      auto out_region = [&, s, k, r0](int64_t a, int64_t b, int64_t c0, int64_t c1) {
        if (out_streamed) return Region{Space::kUnifiedBuffer, out_slot[k], a - r0, b - r0, c0, c1};
        return rows_region(y, s * rps_y + a, s * rps_y + b, c0, c1);
      };
      auto out_address = [&, s, k, r0](int64_t a, int64_t c0) {
        const int64_t row = out_streamed ? a - r0 : s * rps_y + a;
        return (out_streamed ? place_[out_slot[k]].offset : place_[storage(y)].offset) +
               static_cast<uint64_t>((row * y_cols + c0) * y_bytes);
      };

      if (layer.op == OpKind::kMatmul) {
        // Heads whose rows fall in this tile; B (K^T or V) stays resident and is loaded per head.
        const int a = layer.inputs[0], b = layer.inputs[1];
        const int64_t M = layer.gemm_m_per_sample, K = layer.gemm_k;
        const auto& ys = g_.tensors[y].shape;
        const auto& bs = g_.tensors[b].shape;
        const graph::Shape lead_y(ys.begin(), ys.end() - 2), lead_b(bs.begin(), bs.end() - 2);
        const int64_t rows_b = place_[b].rows_per_sample;
        for (int64_t h = r0 / M; h * M < r1; ++h) {
          const int64_t m_lo = std::max(r0, h * M) - h * M, m_hi = std::min(r1, (h + 1) * M) - h * M;
          const int64_t gb = head_index(h, lead_y, lead_b);
          const int64_t row0 = h * M + m_lo;  // in A's and the output's rows (same heads) or the output's only
          GemmJob job = ub_gemm(li, m_hi - m_lo);
          const auto& as = g_.tensors[a].shape;
          const int64_t a_row0 = maps[0] == RowMap::kSame ? row0 : head_index(h, lead_y, graph::Shape(as.begin(), as.end() - 2)) * M + m_lo;
          job.a_region = [&, a_row0](int64_t m0, int64_t m1, int64_t k0, int64_t k1) {
            return in_region(0, a_row0 + m0, a_row0 + m1, k0, k1);
          };
          job.b_region = [&, s, gb, rows_b, b, K](int64_t k0, int64_t k1, int64_t n0, int64_t n1) {
            return rows_region(b, s * rows_b + gb * K + k0, s * rows_b + gb * K + k1, n0, n1);
          };
          job.out_region = [&, row0](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
            return out_region(row0 + m0, row0 + m1, n0, n1);
          };
          job.out_address = [&, row0](int64_t m0, int64_t n0) { return out_address(row0 + m0, n0); };
          emit_gemm(job);
        }
      } else if (layer.op == OpKind::kFc || (layer.op == OpKind::kConv2d && !vector_conv)) {
        const int64_t G = layer.gemm_groups;
        const int64_t cin_g = place_[layer.inputs[0]].cols / G, cout_g = layer.out_features / G;
        const bool conv = layer.op == OpKind::kConv2d;
        const int64_t step = conv && G > 1 ? acc_half : r1 - r0;  // groups share accumulator-sized chunks
        for (int64_t c0 = r0; c0 < r1; c0 += step) {
          const int64_t c1 = std::min(r1, c0 + step);
          for (int64_t g = 0; g < (conv ? G : 1); ++g) {
            GemmJob job = weight_gemm(li, c1 - c0, weight_base, g);
            const int64_t ch_base = g * cin_g, out_base = conv ? g * cout_g : 0;
            job.a_region = [&, c0, ch_base, conv](int64_t m0, int64_t m1, int64_t k0, int64_t k1) {
              if (!conv) return in_region(0, c0 + m0, c0 + m1, k0, k1);
              const auto [a, b] = input_rows(layer, maps[0], 0, c0 + m0, c0 + m1);
              const auto [lo, hi] = im2col_channels(k0, k1, cin_g);
              return in_region(0, a, b, ch_base + lo, ch_base + hi);
            };
            job.out_region = [&, c0, out_base](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
              return out_region(c0 + m0, c0 + m1, out_base + n0, out_base + n1);
            };
            job.out_address = [&, c0, out_base](int64_t m0, int64_t n0) { return out_address(c0 + m0, out_base + n0); };
            emit_gemm(job);
          }
        }
      } else {
        Instruction v;
        v.op = Opcode::kVector;
        v.layer = li;
        v.vector_function = graph::op_def(layer.op).listing_name();
        v.vector_class = graph::op_def(layer.op).vector_class;
        for (int i = 0; i < n_in; ++i) {
          const int x = layer.inputs[static_cast<size_t>(i)];
          const auto [a, b] = bands[static_cast<size_t>(i)];
          v.reads.push_back(in_region(i, a, b, 0, place_[x].cols));
          // Gathered output rows come from all over the input (kept whole): a tile reads the
          // elements it writes, not the whole input.
          v.ub_read_bytes += gathers
                                 ? static_cast<uint64_t>((r1 - r0) * y_cols * dtype_bytes(g_.tensors[static_cast<size_t>(x)].dtype))
                                 : static_cast<uint64_t>(b - a) * row_bytes(x);
        }
        if (reduction) {
          // Every input element once; the partial result is read back and updated in place.
          v.elements = (r1 - r0) * place_[layer.inputs[0]].cols;
          const Region whole_out = rows_region(y, s * rps_y, (s + 1) * rps_y, 0, y_cols);
          if (r0 > 0) {
            v.reads.push_back(whole_out);
            v.ub_read_bytes += static_cast<uint64_t>(rps_y) * row_bytes(y);
          }
          v.writes.push_back(whole_out);
          v.ub_write_bytes = static_cast<uint64_t>(rps_y) * row_bytes(y);
          v.ub_address = place_[storage(y)].offset;
        } else {
          v.elements = vector_conv ? (r1 - r0) * (layer.macs_per_sample() / rps_y) : (r1 - r0) * y_cols * work_per_output;
          if (vector_conv) v.element_bytes = dtype_bytes(layer.weight_dtype);
          v.writes.push_back(out_region(r0, r1, 0, y_cols));
          v.ub_write_bytes = static_cast<uint64_t>(r1 - r0) * row_bytes(y);
          v.ub_address = out_address(r0, 0);
        }
        emit(std::move(v));
      }
      if (out_streamed) {
        host_transfer(Opcode::kWriteHost, y, li, Region{Space::kUnifiedBuffer, out_slot[k], 0, r1 - r0, 0, y_cols},
                      static_cast<uint64_t>(r1 - r0) * row_bytes(y), place_[out_slot[k]].offset);
      }
    }
  }
  for (int i = 0; i < n_in; ++i) {
    if (streamed[static_cast<size_t>(i)]) place_[storage(layer.inputs[static_cast<size_t>(i)])].loaded = true;
  }
  if (out_streamed) place_[y].on_host = true;  // its rows are in host memory only
  info.row_tiles += tile;
  account_layer(li);
}

// The LayerInfo facts of a row-tiled layer: the same as its untiled lowering's.
void Lowering::account_layer(int li) {
  const Layer& layer = g_.layers[static_cast<size_t>(li)];
  LayerInfo& info = p_.layers[static_cast<size_t>(li)];
  const Dtype x_dtype = g_.tensors[static_cast<size_t>(layer.inputs[0])].dtype;
  if (!graph::is_matrix_op(layer.op)) {
    info.mapping = "vector";
    info.a_dtype = info.b_dtype = g_.tensors[static_cast<size_t>(layer.output)].dtype;
    return;
  }
  const int64_t G = layer.gemm_groups, K = layer.gemm_k, N = layer.gemm_n;
  const int64_t M = batch_ * layer.gemm_m_per_sample;
  if (layer.op == OpKind::kMatmul) {
    info.mapping = "array_ub";
    account_gemm(li, G * M, K, N, G, 0, x_dtype, g_.tensors[static_cast<size_t>(layer.inputs[1])].dtype);
    return;
  }
  info.mapping = grouped_conv_on_vector(layer) ? "vector" : "array";
  account_gemm(li, M * G, K, N, G, layer.weight_count(), x_dtype, layer.weight_dtype);
}

}  // namespace tessera::compiler::detail
