// The unified-buffer side of lowering: regions of tensors, placement with reuse hazards,
// working buffers, and whether a pass fits.
#include "sim/compiler/lowering.h"

#include "sim/common/error.h"

namespace tessera::compiler::detail {

Region Lowering::rows_region(int t, int64_t r0, int64_t r1, int64_t c0, int64_t c1) const {
  const int s = storage(t);
  if (s != t) {
    // An alias (flatten/reshape) covers whole samples of its source, all columns.
    const int64_t rps_t = place_[t].rows_per_sample, rps_s = place_[s].rows_per_sample;
    const int64_t s0 = r0 / rps_t, s1 = ceil_div(r1, rps_t);
    return Region{Space::kUnifiedBuffer, s, s0 * rps_s, s1 * rps_s, 0, place_[s].cols};
  }
  return Region{Space::kUnifiedBuffer, t, r0, r1, c0, c1 < 0 ? place_[t].cols : c1};
}

Region Lowering::region(int t, int64_t s0, int64_t s1, int64_t c0, int64_t c1) const {
  const int64_t rps = place_[t].rows_per_sample;
  return rows_region(t, s0 * rps, s1 * rps, c0, c1);
}

int64_t Lowering::samples_per_chunk(int t) const {
  // Host transfers and vector work go in chunks of about one accumulator half so
  // that consumers can start before the whole tensor has moved.
  const int64_t rows = std::max<int64_t>(1, arch_.accumulators.entries / 2);
  return std::max<int64_t>(1, rows / place_[t].rows_per_sample);
}

uint64_t Lowering::tensor_bytes(int t, int64_t samples) const {
  const Tensor& ten = g_.tensors[static_cast<size_t>(t)];
  return static_cast<uint64_t>(samples * graph::shape_elements(ten.shape) * dtype_bytes(ten.dtype));
}

void Lowering::allocate(int t, int layer_index) {
  TensorPlace& tp = place_[t];
  if (tp.alias_of >= 0 || tp.allocated) return;
  auto offset = ub_.allocate(tp.bytes);
  if (!offset) {
    const std::string where = layer_index >= 0 ? "layer '" + g_.layers[layer_index].name + "'" : "its inputs";
    const std::string what = static_cast<size_t>(t) < g_.tensors.size()
                                 ? "tensor '" + g_.tensors[t].name + "'"
                                 : std::string("its working buffers (gates and state)");
    throw InputError(g_.source + ": workload '" + g_.name + "' at batch " + std::to_string(batch_) +
                     " does not fit the unified buffer of '" + arch_.name + "' (" +
                     std::to_string(arch_.unified_buffer.capacity_bytes) + " bytes): " + where + " needs " +
                     std::to_string(tp.bytes) + " more bytes for " + what + " with " +
                     std::to_string(ub_.in_use()) +
                     " bytes live; use a smaller --batch or a larger unified_buffer.capacity");
  }
  tp.offset = *offset;
  tp.allocated = true;
  tp.reused.clear();  // earlier writers of t (a previous residency) have been emitted already
  if (dry_run_) return;  // nothing is emitted: no hazards to record
  // Bytes reused from dead or evicted tensors: writers of t must wait for their readers.
  for (const auto* list : {&vacated_, &prev_vacated_}) {
    for (const Vacated& v : *list) {
      if (list == &vacated_ && v.region.buffer == t) continue;
      if (v.offset < tp.offset + tp.bytes && tp.offset < v.offset + v.bytes) tp.reused.push_back(v.region);
    }
  }
}

// Records t's bytes as given up, for the hazards of whoever is placed over them next.
// Sizing (dry-run) passes emit nothing and record nothing.
void Lowering::vacate(int t) {
  if (dry_run_) return;
  const TensorPlace& tp = place_[t];
  vacated_.push_back(Vacated{Region{Space::kUnifiedBuffer, t, 0, tp.rows, 0, tp.cols}, tp.offset, tp.bytes});
}

int Lowering::add_scratch(int li, int64_t rows, int64_t cols, int64_t rows_per_sample, Dtype dtype, bool allocate_now) {
  TensorPlace tp;
  tp.rows = rows;
  tp.cols = cols;
  tp.rows_per_sample = rows_per_sample;
  tp.bytes = static_cast<uint64_t>(rows * cols * dtype_bytes(dtype));
  tp.element_bytes = dtype_bytes(dtype);
  place_.push_back(tp);
  dead_.push_back(false);
  last_use_.push_back(li);
  pinned_.push_back(0);
  const int id = static_cast<int>(place_.size() - 1);
  if (allocate_now) allocate(id, li);
  scratch_[static_cast<size_t>(li)].push_back(id);
  return id;
}

// Working buffers a layer needs besides its output (live only during the layer).
void Lowering::allocate_scratch(int li, bool allocate_now) {
  const Layer& layer = g_.layers[static_cast<size_t>(li)];
  if (layer.op != OpKind::kLstm && layer.op != OpKind::kGru) return;
  const Dtype dt = g_.tensors[static_cast<size_t>(layer.output)].dtype;
  const int64_t T = layer.gemm_m_per_sample, H = layer.hidden, G = layer.gates(), D = layer.directions;
  add_scratch(li, batch_ * T, D * G * H, T, dt, allocate_now);  // input projections of every step
  for (int64_t d = 0; d < D; ++d) {
    add_scratch(li, batch_, G * H, 1, dt, allocate_now);  // recurrent gate sums of the current step
    add_scratch(li, batch_, H, 1, dt, allocate_now);      // h state
    add_scratch(li, batch_, H, 1, dt, allocate_now);      // lstm: c state; gru: r * h
  }
}

int64_t Lowering::element_bytes(int buffer) const {
  if (static_cast<size_t>(buffer) < g_.tensors.size()) return dtype_bytes(g_.tensors[static_cast<size_t>(buffer)].dtype);
  return place_[static_cast<size_t>(buffer)].element_bytes;
}

bool Lowering::fits(int64_t batch) {
  try {
    lower_pass(batch, true);
    return true;
  } catch (const InputError&) {
    return false;
  }
}

}  // namespace tessera::compiler::detail
