// GEMM tiling: one GemmJob into read_weights / matmul / activate tiles for the dataflow.
#include "sim/compiler/lowering.h"

#include "sim/common/error.h"

namespace tessera::compiler::detail {

namespace {

// The ISA's activate function for a layer's fused activation.
ActivationFn activation_fn(graph::Activation a) {
  switch (a) {
    case graph::Activation::kNone: return ActivationFn::kNone;
    case graph::Activation::kRelu: return ActivationFn::kRelu;
    case graph::Activation::kSigmoid: return ActivationFn::kSigmoid;
    case graph::Activation::kTanh: return ActivationFn::kTanh;
    case graph::Activation::kRelu6: return ActivationFn::kRelu6;
  }
  return ActivationFn::kNone;
}

}  // namespace

// The largest matmul tile: the dimensions the dataflow keeps stationary capped by the
// array (ws: B's k x n, os: C's m x n, is: A's k x m), the results within one half of the
// accumulators (the other half drains while this one fills; accumulator_bounds says which
// tile dimension indexes its entries and which its array.cols-wide rows), and the
// dimension that only streams (ws: m, os: k, is: n) otherwise whole: splitting a streamed
// dimension would only add exposed drains and reloads of the same stationary tile.
array::GemmTile GemmTiler::max_tile() const {
  const auto& a = l_.arch_.array;
  const int64_t acc_half = std::max<int64_t>(1, l_.arch_.accumulators.entries / 2);
  const array::DataflowModel& df = array::dataflow_model(a.dataflow);
  return df.max_tile(array::ArrayDims{a.rows, a.cols}, df.accumulator_bounds(acc_half, a.cols));
}

// Instructions emit emits for an M x K x N GEMM (at most): per (m, n) tile, one
// matmul per K tile, one read_weights per array tile (rows x cols) of B, one activate.
double GemmTiler::planned_instructions(int64_t M, int64_t K, int64_t N) const {
  const array::GemmTile max = max_tile();
  const auto& a = l_.arch_.array;
  const auto tiles = [](int64_t total, int64_t step) { return static_cast<double>((total + step - 1) / step); };
  const double fifo_tiles = tiles(K, a.rows) * tiles(std::min(N, max.n), a.cols);
  return tiles(M, max.m) * tiles(N, max.n) * (tiles(K, max.k) + fifo_tiles + 1.0);
}

void GemmTiler::emit(const GemmJob& job) {
  const array::GemmTile max = max_tile();
  const int64_t kt = max.k, nt = max.n;
  // Work split (docs/architecture.md): output tiles go round-robin to the matrix units
  // (slots). N first: each unit then holds its own columns of B, and no weight is fetched
  // twice. When N has fewer tiles than there are units, M is split too, so every unit gets
  // a tile (each unit that shares a column block fetches its weights again). K is never
  // split: its partial sums would have to meet in one accumulator.
  int64_t mt = max.m;
  const int64_t S = l_.slots();
  if (S > 1) {
    const int64_t n_tiles = ceil_div(job.N, nt);
    if (n_tiles < S && ceil_div(job.M, mt) * n_tiles < S) mt = std::max<int64_t>(1, ceil_div(job.M, ceil_div(S, n_tiles)));
  }
  if (slot_half_.size() != static_cast<size_t>(S)) slot_half_.assign(static_cast<size_t>(S), 0);
  const int64_t rows = l_.arch_.array.rows, cols = l_.arch_.array.cols;
  const bool full_tile_fetch = l_.arch_.weight_memory.fetch == WeightFetch::kTile;
  const int64_t a_bytes = dtype_bytes(job.a_dtype);
  const int64_t y_bytes = dtype_bytes(job.y_dtype);
  LayerInfo& info = l_.p_.layers[static_cast<size_t>(job.li)];
  // Per (m, n) tile: per k tile, the read_weights of its B (one per array tile of B, in
  // the order the array consumes them) and one matmul; then one activate.
  const double planned = planned_instructions(job.M, job.K, job.N);
  if (static_cast<double>(l_.body_emitted() + l_.reads_emitted()) + planned > static_cast<double>(kMaxInstructions)) {
    l_.too_many_instructions(job.li);
  }
  // The output tiles in order (m major), dealt to the slots in waves of one tile per slot.
  // Within a wave the K steps interleave across the units (each unit's read_weights and
  // matmul of step k, then step k + 1), so the in-order controller keeps every unit's queue
  // fed instead of filling one unit's queue with all of its K steps; then the wave's
  // activates. With one slot a wave is one tile: TPU v1's order.
  std::vector<OutTile> wave;
  CoreCopies copies;
  copies.several_cores = l_.arch_.active_cores() > 1;
  if (copies.several_cores) l_.held_panels_.resize(static_cast<size_t>(l_.arch_.active_cores()));
  auto flush_wave = [&]() {
    if (wave.empty()) return;
    const int64_t units = l_.arch_.array.count;
    const bool remote = std::any_of(wave.begin(), wave.end(), [&](const OutTile& t) { return t.slot >= units; });
    if (remote && !copies.operands_in_device_memory) {
      copies.operands_in_device_memory = true;
      l_.copy_to_device_memory(job.li, job.a_region(0, job.M, 0, job.K));
      if (job.b_from_ub) l_.copy_to_device_memory(job.li, job.b_region(0, job.K, 0, job.N));
    }
    l_.order_across_cores(true, job.li);
    in_gemm_ = true;
    if (remote) load_panels(job, wave);
    for (int64_t k0 = 0; k0 < job.K; k0 += kt) {
      const int64_t k1 = std::min(job.K, k0 + kt);
      for (const OutTile& t : wave) {
        const auto core = static_cast<uint8_t>(t.slot / l_.arch_.array.count);
        const auto unit = static_cast<uint8_t>(t.slot % l_.arch_.array.count);
        // B[k0:k1, n0:n1] in weight-FIFO tiles of at most rows x cols. A held B (ws) is one;
        // a streamed B (os: along k, is: along n) is several, in stream order.
        uint64_t b_tile_bytes = 0;
        int32_t fifo_tiles = 0;
        for (int64_t kc = k0; kc < k1; kc += rows) {
          const int64_t kc1 = std::min(k1, kc + rows);
          for (int64_t nc = t.n0; nc < t.n1; nc += cols) {
            const int64_t nc1 = std::min(t.n1, nc + cols);
            const uint64_t tile_bytes = static_cast<uint64_t>(elements_bytes(job.b_dtype, (kc1 - kc) * (nc1 - nc)));
            // What the weight-memory path fetches for it: the real bytes, or (fetch: tile) the
            // whole rows x cols array tile, padding included.
            const uint64_t fetch_bytes = full_tile_fetch ? static_cast<uint64_t>(elements_bytes(job.b_dtype, rows * cols)) : tile_bytes;
            b_tile_bytes += tile_bytes;
            fifo_tiles++;
            Instruction rw;
            rw.op = Opcode::kReadWeights;
            rw.layer = job.li;
            rw.core = core;
            rw.unit = unit;
            if (job.b_from_ub) {
              rw.weight_source = WeightSource::kUnifiedBuffer;
              rw.bytes = 0;
              rw.ub_read_bytes = tile_bytes;
              rw.reads.push_back(job.b_region(kc, kc1, nc, nc1));
              l_.note_units(rw);
              l_.add_weight_read(std::move(rw), l_.layer_body_start_);
            } else {
              // Host-resident weights (residency.weights: host) are fetched over the host link.
              if (l_.arch_.residency.weights == Residency::kHost) rw.weight_source = WeightSource::kHost;
              rw.bytes = fetch_bytes;
              rw.weight_address = job.weight_base + static_cast<uint64_t>(elements_bytes(job.b_dtype, kc * job.weight_row_stride + nc));
              info.weight_bytes += rw.bytes;
              l_.add_weight_read(std::move(rw), 0);
            }
          }
        }

        Instruction mm;
        mm.op = Opcode::kMatmul;
        mm.layer = job.li;
        mm.core = core;
        mm.unit = unit;
        mm.tile = array::GemmTile{t.m1 - t.m0, k1 - k0, t.n1 - t.n0};
        mm.a_dtype = job.a_dtype;
        mm.b_dtype = job.b_dtype;
        mm.accumulate = k0 > 0;
        mm.weight_tiles = fifo_tiles;
        mm.ub_read_bytes = static_cast<uint64_t>((t.m1 - t.m0) * (k1 - k0) * a_bytes) + (job.b_from_ub ? b_tile_bytes : 0);
        mm.reads.push_back(job.a_region(t.m0, t.m1, k0, k1));
        mm.writes.push_back(t.acc);
        l_.emit(std::move(mm), false);
      }
    }
    std::vector<std::vector<CorePart>> results(static_cast<size_t>(copies.several_cores ? l_.arch_.active_cores() : 0));
    for (const OutTile& t : wave) {
      Instruction act;
      act.op = Opcode::kActivate;
      act.layer = job.li;
      act.core = static_cast<uint8_t>(t.slot / l_.arch_.array.count);
      act.rows = t.m1 - t.m0;
      act.cols = t.n1 - t.n0;
      act.function = job.overlap_add ? ActivationFn::kNone : activation_fn(job.activation);
      act.reads.push_back(t.acc);
      const Region out = job.out_region(t.m0, t.m1, t.n0, t.n1);
      if (job.overlap_add) act.reads.push_back(out);
      act.writes.push_back(out);
      act.ub_write_bytes = static_cast<uint64_t>(act.rows * act.cols * y_bytes);
      if (job.overlap_add) act.ub_read_bytes = act.ub_write_bytes;  // read-modify-write of the overlap
      act.ub_address = job.out_address(t.m0, t.n0);
      const CorePart result{out, act.ub_write_bytes, act.ub_address, job.li};
      const auto core = static_cast<size_t>(act.core);
      l_.emit(std::move(act));
      if (!copies.several_cores) continue;
      // Core 0's tiles stay for outputs and operands; the other cores' go to device memory.
      auto& parts = core == 0 ? l_.core0_parts_[out.buffer] : results[core];
      if (parts.empty() || !Lowering::extend(parts.back(), result)) parts.push_back(result);
    }
    store_results(results);
    in_gemm_ = false;
    wave.clear();
  };
  for (int64_t m0 = 0; m0 < job.M; m0 += mt) {
    const int64_t m1 = std::min(job.M, m0 + mt);
    for (int64_t n0 = 0; n0 < job.N; n0 += nt) {
      const int64_t n1 = std::min(job.N, n0 + nt);
      const int64_t slot = next_slot_;
      next_slot_ = (next_slot_ + 1) % S;
      // Slot 0 alone is TPU v1's one toggle (its accumulators are halves 0 and 1).
      int& slot_half = slot_half_[static_cast<size_t>(slot)];
      const int half = static_cast<int>(slot) * 2 + slot_half;
      slot_half ^= 1;
      wave.push_back(OutTile{m0, m1, n0, n1, slot, Region{Space::kAccumulators, half, 0, m1 - m0, 0, n1 - n0}});
      if (static_cast<int64_t>(wave.size()) == S) flush_wave();
    }
  }
  flush_wave();
}

// Several cores (docs/architecture.md "Work split"): a core other than 0 DMAs the operand panel
// its tiles read (A's rows of its tiles, all of K; a B from the scratchpad: its columns) from
// device memory into its own scratchpad, unless it holds it already (the panel's bytes are
// reserved in every core's scratchpad: one layout; a panel stays held until its buffer is
// written again or gives up its bytes); adjacent panels of a wave are one transfer (a strided
// DMA of one block). Core 0 has put the operands in device memory before the sync.
void GemmTiler::load_panels(const GemmJob& job, const std::vector<OutTile>& wave) {
  const int64_t units = l_.arch_.array.count;
  for (int64_t core = 1; core < l_.arch_.active_cores(); ++core) {
    std::vector<CorePart> reads;
    auto add = [&](const Region& r) {
      if (l_.holds_panel(core, r)) return;
      l_.held_panels_[static_cast<size_t>(core)][r.buffer].push_back(r);
      const CorePart part{r, l_.region_bytes(r), l_.region_address(r), job.li};
      if (reads.empty() || !Lowering::extend(reads.back(), part)) reads.push_back(part);
    };
    for (const OutTile& t : wave) {
      if (t.slot / units == core) add(job.a_region(t.m0, t.m1, 0, job.K));
    }
    for (const OutTile& t : wave) {
      if (t.slot / units == core && job.b_from_ub) add(job.b_region(0, job.K, t.n0, t.n1));
    }
    for (const auto& part : reads) l_.emit_core_copy(Opcode::kDmaRead, core, job.li, part);
  }
}

// The other cores' results of a wave (per core, adjacent tiles as one block) go to device
// memory, for core 0 to gather after the next sync.
void GemmTiler::store_results(std::vector<std::vector<CorePart>>& results) {
  for (size_t core = 1; core < results.size(); ++core) {
    for (const auto& part : results[core]) {
      l_.emit_core_copy(Opcode::kDmaWrite, static_cast<int64_t>(core), part.layer, part);
      auto& gathers = l_.pending_gathers_;
      if (gathers.empty() || !Lowering::extend(gathers.back(), part)) gathers.push_back(part);
    }
    results[core].clear();
  }
}

void GemmTiler::check_mac_mode(const Layer& layer) const {
  const Dtype a_dtype = l_.g_.tensors[layer.inputs[0]].dtype;
  if (!l_.arch_.array.find_mode(a_dtype, layer.weight_dtype)) {
    throw InputError(l_.g_.source + ": layer '" + layer.name + "' multiplies " + std::string(dtype_name(a_dtype)) +
                     " activations by " + std::string(dtype_name(layer.weight_dtype)) + " weights, but '" +
                     l_.arch_.name + "' has no such entry in array.mac_modes (it has: " + l_.arch_.array.mode_names() + ")");
  }
}

}  // namespace tessera::compiler::detail
