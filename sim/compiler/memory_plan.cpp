// The unified-buffer side of lowering: regions of tensors, placement with reuse hazards,
// working buffers, lifetimes, and the memory plan that says whether a pass fits.
#include "sim/compiler/lowering.h"

#include "sim/common/error.h"

namespace tessera::compiler::detail {

Region Lowering::rows_region(int t, int64_t r0, int64_t r1, int64_t c0, int64_t c1) const {
  const int s = storage(t);
  if (s != t) {
    // An alias (flatten/reshape) covers whole samples of its source, all columns.
    const int64_t rps_t = place_[t].rows_per_sample, rps_s = place_[s].rows_per_sample;
    const int64_t s0 = r0 / rps_t, s1 = ceil_div(r1, rps_t);
    const int64_t shift = row_shift(s);
    return Region{Space::kUnifiedBuffer, s, shift + s0 * rps_s, shift + s1 * rps_s, 0, place_[s].cols};
  }
  const int64_t shift = row_shift(t);
  return Region{Space::kUnifiedBuffer, t, shift + r0, shift + r1, c0, c1 < 0 ? place_[t].cols : c1};
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
  return static_cast<uint64_t>(elements_bytes(ten.dtype, samples * graph::shape_elements(ten.shape)));
}

std::string Lowering::scratchpad_text() const {
  const std::string bytes = std::to_string(scratchpad_bytes()) + " bytes";
  if (arch_.active_cores() <= 1) return "the unified buffer of '" + arch_.name + "' (" + bytes + ")";
  return "the scratchpad of each core of '" + arch_.name + "' (" + bytes + " per core, " +
         std::to_string(arch_.active_cores()) + " cores)";
}

std::string Lowering::does_not_fit_message(const Shortfall& s) const {
  const std::string where = s.layer >= 0 ? "layer '" + g_.layers[static_cast<size_t>(s.layer)].name + "'" : "its inputs";
  const std::string what = static_cast<size_t>(s.tensor) < g_.tensors.size()
                               ? "tensor '" + g_.tensors[static_cast<size_t>(s.tensor)].name + "'"
                               : std::string("its working buffers (gates and state)");
  return g_.source + ": workload '" + g_.name + "' at batch " + std::to_string(batch_) +
         " does not fit " + scratchpad_text() + ": " + where + " needs " +
         std::to_string(s.bytes) + " more bytes for " + what + " with " + std::to_string(s.live_bytes) +
         " bytes live; use a smaller --batch or a larger unified_buffer.capacity";
}

void Lowering::allocate(int t, int layer_index) {
  TensorPlace& tp = place_[t];
  if (tp.alias_of >= 0 || tp.allocated) return;
  auto offset = ub_.allocate(tp.bytes);
  if (!offset) throw InputError(does_not_fit_message(Shortfall{layer_index, t, tp.bytes, ub_.in_use()}));
  tp.offset = *offset;
  tp.allocated = true;
  tp.reused.clear();  // earlier writers of t (a previous residency) have been emitted already
  tp.reused_list = nullptr;
  // Bytes reused from dead or evicted tensors: writers of t must wait for their readers.
  for (auto* list : {&vacated_, &prev_vacated_}) {
    std::erase_if(*list, [&](const Vacated& v) { return inert_hazard(v.region.buffer); });
    for (const Vacated& v : *list) {
      if (list == &vacated_ && v.region.buffer == t) continue;
      if (v.offset < tp.offset + tp.bytes && tp.offset < v.offset + v.bytes) tp.reused.push_back(v.id);
    }
  }
}

void Lowering::note_buffer_off_vector(int buffer) {
  if (buffer < 0) return;
  if (static_cast<size_t>(buffer) >= touched_off_vector_.size()) touched_off_vector_.resize(static_cast<size_t>(buffer) + 1, 0);
  touched_off_vector_[static_cast<size_t>(buffer)] = 1;
}

// Every UB buffer an instruction of another unit than the vector unit reads or writes
// (its hazard regions included).
void Lowering::note_units(const Instruction& in) {
  if (in.op == Opcode::kActivate || in.op == Opcode::kVector) return;
  for (const auto* list : {&in.reads, &in.writes}) {
    for (const Region& r : *list) {
      if (r.space == Space::kUnifiedBuffer) note_buffer_off_vector(r.buffer);
    }
  }
}

// A vacated buffer whose region, in the writes of the tensors placed over its bytes from
// now on, could order nothing: see touched_off_vector_.
bool Lowering::inert_hazard(int buffer) const {
  if (!hazards_may_be_inert()) return false;
  const auto b = static_cast<size_t>(buffer);
  if (b >= dead_.size() || !dead_[b]) return false;
  if (b < settled_.size() && settled_[b]) return true;
  return b >= touched_off_vector_.size() || !touched_off_vector_[b];
}

// A vector-unit instruction has just carried dead buffer d's whole region: it waits for every
// instruction of another unit that touched d, so once it is dispatched, all of them have
// finished; nothing of another unit touches d again (the conditions of inert_hazard), so the
// region orders nothing from then on. Only in a program of one pass: a pass with a smaller
// batch lays d out over fewer rows than the previous pass's accesses covered.
void Lowering::settle(int buffer) {
  if (spill_ || lazy_inputs_ || !only_pass_) return;
  const auto b = static_cast<size_t>(buffer);
  if (b >= dead_.size() || !dead_[b]) return;
  if (b >= settled_.size()) settled_.resize(b + 1, 0);
  settled_[b] = 1;
}

// Records t's bytes as given up, for the hazards of whoever is placed over them next.
void Lowering::vacate(int t) {
  vacated_.push_back(vacated_entry(t));
  forget_panels(t);
  // Nothing writes t until it is placed again (allocate recomputes the list): its hazard
  // list is freed now instead of being held by every dead or evicted tensor to the end.
  TensorPlace& tp = place_[t];
  std::vector<uint32_t>().swap(tp.reused);
  tp.reused_list = nullptr;
}

// t's bytes as they are laid out now, its region entered in the program's table of hazard
// regions (once per distinct region).
Vacated Lowering::vacated_entry(int t) {
  const TensorPlace& tp = place_[t];
  const int64_t shift = row_shift(t);
  const Region region{Space::kUnifiedBuffer, t, shift, shift + tp.rows, 0, tp.cols};
  auto& table = p_.shared_regions->table;
  const auto [it, added] = hazard_ids_.try_emplace(region, static_cast<uint32_t>(table.size()));
  if (added) table.push_back(region);
  return Vacated{region, it->second, tp.offset, tp.bytes};
}

size_t Lowering::RegionKeyHash::operator()(const Region& r) const {
  size_t h = std::hash<int64_t>()(static_cast<int64_t>(r.space) * 0x9E3779B1 + r.buffer);
  for (int64_t v : {r.row_begin, r.row_end, r.col_begin, r.col_end}) h = h * 1000003u ^ std::hash<int64_t>()(v);
  return h;
}

// The program's stored list of these hazard regions: an equal list stored before, or a new one.
const isa::SharedRegionList* Lowering::shared_list(const std::vector<uint32_t>& ids) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a over the ids
  for (uint32_t id : ids) h = (h ^ id) * 1099511628211ull;
  auto& same_hash = shared_lists_[h];
  for (const isa::SharedRegionList* l : same_hash) {
    if (l->ids == ids) return l;
  }
  auto& pool = *p_.shared_regions;
  pool.lists.push_back(isa::SharedRegionList{&pool.table, ids});
  same_hash.push_back(&pool.lists.back());
  return &pool.lists.back();
}

// t's whole hazard list as a shared tail (null when empty), looked up once per residency.
const isa::SharedRegionList* Lowering::reused_list(int t) {
  TensorPlace& tp = place_[t];
  if (tp.reused_list == nullptr && !tp.reused.empty()) tp.reused_list = shared_list(tp.reused);
  return tp.reused_list;
}

int Lowering::add_scratch(int li, int64_t rows, int64_t cols, int64_t rows_per_sample, Dtype dtype, bool allocate_now) {
  TensorPlace tp;
  tp.rows = rows;
  tp.cols = cols;
  tp.rows_per_sample = rows_per_sample;
  tp.bytes = static_cast<uint64_t>(elements_bytes(dtype, rows * cols));
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

// Working buffers a layer needs besides its output (live only during the layer): lstm/gru
// gates and state.
std::vector<Lowering::WorkingBuffer> Lowering::working_buffers(int li) const {
  const Layer& layer = g_.layers[static_cast<size_t>(li)];
  if (layer.op != OpKind::kLstm && layer.op != OpKind::kGru) return {};
  const Dtype dt = g_.tensors[static_cast<size_t>(layer.output)].dtype;
  const int64_t T = layer.gemm_m_per_sample, H = layer.hidden, G = layer.gates(), D = layer.directions;
  std::vector<WorkingBuffer> buffers{{batch_ * T, D * G * H, T, dt}};  // input projections of every step
  for (int64_t d = 0; d < D; ++d) {
    buffers.push_back({batch_, G * H, 1, dt});  // recurrent gate sums of the current step
    buffers.push_back({batch_, H, 1, dt});      // h state
    buffers.push_back({batch_, H, 1, dt});      // lstm: c state; gru: r * h
  }
  return buffers;
}

void Lowering::allocate_scratch(int li, bool allocate_now) {
  for (const WorkingBuffer& b : working_buffers(li)) add_scratch(li, b.rows, b.cols, b.rows_per_sample, b.dtype, allocate_now);
}

int64_t Lowering::element_bytes(int buffer) const {
  if (static_cast<size_t>(buffer) < g_.tensors.size()) return dtype_bytes(g_.tensors[static_cast<size_t>(buffer)].dtype);
  return place_[static_cast<size_t>(buffer)].element_bytes;
}

// Tensor sizes, aliases and lifetimes of a pass over `batch` samples, and when each graph
// input is read and each output written.
void Lowering::lay_out(int64_t batch) {
  batch_ = batch;
  const size_t T = g_.tensors.size();
  const int L = static_cast<int>(g_.layers.size());
  place_.assign(T, TensorPlace{});
  dead_.assign(T, false);
  last_use_.assign(T, -1);
  pinned_.assign(T, 0);
  readers_.assign(T, {});
  output_storage_.assign(T, 0);
  scratch_.assign(static_cast<size_t>(L), {});
  for (size_t t = 0; t < T; ++t) {
    const Tensor& ten = g_.tensors[t];
    TensorPlace& tp = place_[t];
    tp.rows_per_sample = graph::shape_elements(ten.shape) / ten.shape.back();
    tp.rows = batch_ * tp.rows_per_sample;
    tp.cols = ten.shape.back();
    tp.bytes = static_cast<uint64_t>(elements_bytes(ten.dtype, tp.rows * tp.cols));
  }
  for (int in : g_.inputs) place_[static_cast<size_t>(in)].on_host = true;  // the host holds the inputs
  for (int li = 0; li < L; ++li) {
    const Layer& layer = g_.layers[li];
    if (graph::is_layout_op(layer.op)) place_[layer.output].alias_of = layer.inputs[0];
  }
  for (int li = 0; li < L; ++li) {
    for (int in : g_.layers[li].inputs) {
      last_use_[storage(in)] = std::max(last_use_[storage(in)], li);
      auto& r = readers_[static_cast<size_t>(storage(in))];
      if (!graph::is_layout_op(g_.layers[li].op) && (r.empty() || r.back() != li)) r.push_back(li);
    }
  }
  for (int out : g_.outputs) output_storage_[static_cast<size_t>(storage(out))] = 1;
  // Outputs go to the host after the last layer; in streaming mode as soon as they are
  // complete (after their producer and their last reader), which frees their bytes early.
  outputs_at_.assign(static_cast<size_t>(L) + 1, {});
  for (int out : g_.outputs) {
    const int s = storage(out);
    int done = L;
    if (lazy_inputs_) {
      done = std::max(last_use_[s], g_.tensors[static_cast<size_t>(out)].producer);
      if (done < 0) done = L;
    }
    last_use_[s] = std::max(last_use_[s], done);
    outputs_at_[static_cast<size_t>(done)].push_back(out);
  }
  dying_.assign(static_cast<size_t>(L), {});
  for (size_t t = 0; t < T; ++t) {
    if (last_use_[t] >= 0 && last_use_[t] < L) dying_[static_cast<size_t>(last_use_[t])].push_back(static_cast<int>(t));
  }
  // Graph inputs are read before the first layer, or (lazy) before their first consumer.
  inputs_at_.assign(static_cast<size_t>(L) + 1, {});
  for (int in : g_.inputs) {
    int first = L;
    for (int li = 0; li < L && first == L; ++li) {
      for (int t : g_.layers[li].inputs) {
        if (storage(t) == in) first = li;
      }
    }
    inputs_at_[static_cast<size_t>(lazy_inputs_ ? first : 0)].push_back(in);
  }
}

// The allocations of a pass without spills, in the order the pass makes them (first fit
// over the same lifetimes), without emitting anything: the first that the unified buffer
// cannot hold, or none when the pass fits.
std::optional<Lowering::Shortfall> Lowering::first_shortfall(int64_t batch) {
  lay_out(batch);
  const int L = static_cast<int>(g_.layers.size());
  BufferAllocator ub(scratchpad_bytes());
  std::vector<std::optional<uint64_t>> offset(place_.size());  // resident graph tensors
  auto place = [&](int t, int layer) -> std::optional<Shortfall> {
    if (place_[t].alias_of >= 0 || offset[t]) return std::nullopt;
    offset[t] = ub.allocate(place_[t].bytes);
    if (!offset[t]) return Shortfall{layer, t, place_[t].bytes, ub.in_use()};
    return std::nullopt;
  };
  auto take_inputs = [&](int li) -> std::optional<Shortfall> {
    for (int in : inputs_at_[static_cast<size_t>(li)]) {
      if (auto s = place(in, li < L && lazy_inputs_ ? li : -1)) return s;
    }
    return std::nullopt;
  };
  if (!lazy_inputs_) {
    if (auto s = take_inputs(0)) return s;
  }
  for (int li = 0; li < L; ++li) {
    if (lazy_inputs_) {
      if (auto s = take_inputs(li)) return s;
    }
    if (auto s = place(g_.layers[li].output, li)) return s;
    std::vector<uint64_t> working;
    for (const WorkingBuffer& b : working_buffers(li)) {
      const uint64_t bytes = static_cast<uint64_t>(elements_bytes(b.dtype, b.rows * b.cols));
      const auto at = ub.allocate(bytes);
      if (!at) return Shortfall{li, -1, bytes, ub.in_use()};
      working.push_back(*at);
    }
    for (int t : dying_[static_cast<size_t>(li)]) {
      if (place_[t].alias_of < 0 && offset[t]) ub.release(*offset[t]), offset[t].reset();
    }
    for (uint64_t at : working) ub.release(at);
  }
  if (lazy_inputs_) return take_inputs(L);  // inputs no layer reads
  return std::nullopt;
}

}  // namespace tessera::compiler::detail
