#include "sim/compiler/compiler.h"

#include <algorithm>
#include <cmath>

#include "sim/common/error.h"
#include "sim/compiler/lowering.h"

// The emitting pass: lays out and lowers the graph pass after pass, and the compile() entry.
namespace tessera::compiler {
namespace detail {

// "layer 'x'" (or the graph's inputs and outputs) and "batch N (in passes of n)" for the
// two messages below.
std::string Lowering::where_at(int layer) const {
  return layer >= 0 && static_cast<size_t>(layer) < g_.layers.size()
             ? "layer '" + g_.layers[static_cast<size_t>(layer)].name + "'"
             : "its inputs and outputs";
}

std::string Lowering::batch_text() const {
  return "batch " + std::to_string(total_batch_) +
         (batch_ < total_batch_ ? " (in passes of " + std::to_string(batch_) + ")" : "");
}

void Lowering::too_many_instructions(int layer) const {
  throw InputError(g_.source + ": workload '" + g_.name + "' at " + batch_text() + " needs more than " +
                   std::to_string(kMaxInstructions) + " instructions on '" + arch_.name + "' (" +
                   std::to_string(arch_.array.rows) + "x" + std::to_string(arch_.array.cols) +
                   " array), the most one program may have (minutes of simulation); reached at " + where_at(layer) +
                   ": use a smaller --batch, smaller layers or a larger array");
}

void Lowering::too_many_stored_instructions(int layer) const {
  throw InputError(g_.source + ": workload '" + g_.name + "' at " + batch_text() + " on '" + arch_.name +
                   "' needs more than " + std::to_string(max_stored_templates_) +
                   " instructions that do not fold into repeats, the most one program may store (about 1-1.5 GB of simulator "
                   "memory); "
                   "reached at " + where_at(layer) + ": use a smaller --batch or smaller layers");
}

// After the first passes of a program of many (pass_templates.h): when the templates stored
// by the end of its second-to-last pass would already reach the bound, the program cannot
// be stored, so it is refused now, with the batch that fits, instead of after lowering the
// passes up to the bound (BERT at batch 64 x 512 tokens on edge-npu-32: 44.7 s). The last
// pass is left out: it may be partial, and its templates are not needed to know the bound is
// reached, so the projection never counts more than the program would store.
void Lowering::check_projected_templates(const PassTemplates& passes, int64_t sub_batch) const {
  const uint64_t cap = max_stored_templates_;
  const int64_t n = passes.passes();
  const uint64_t before_last = passes.after_pass(n - 1);
  if (before_last < cap) return;
  // The pass, and the layer in it (from the last pass lowered), at whose end the bound is reached.
  const int64_t reach_pass = passes.first_pass_reaching(cap);
  const uint64_t reach_base = passes.after_pass(reach_pass - 1);
  int reach_layer = static_cast<int>(g_.layers.size()) - 1;
  for (size_t li = 0; li < layer_end_templates_.size(); ++li) {
    if (reach_base + (layer_end_templates_[li] - pass_start_templates_) >= cap) {
      reach_layer = static_cast<int>(li);
      break;
    }
  }
  // The most passes a run may have: its last pass full, with room for what follows a pass's
  // end (instructions still waiting for their weight reads, the halts: under 16 on every
  // shipped case) and for the folds a pass's templates undergo as they arrive.
  constexpr uint64_t kTailTemplates = 256;
  const int64_t fit_passes = cap > kTailTemplates ? std::max<int64_t>(passes.first_pass_reaching(cap - kTailTemplates) - 1, 0) : 0;
  const int64_t fit_batch = fit_passes * sub_batch;
  const auto per_pass = static_cast<uint64_t>(passes.per_pass() + 0.5);
  std::string split;
  if (fit_batch > 0) {
    const int64_t runs = ceil_div(total_batch_, fit_batch);
    split = "the largest batch that fits is " + std::to_string(fit_batch) + " (" + std::to_string(fit_passes) +
            " passes): split the batch into " + std::to_string(runs) + " runs of at most " + std::to_string(fit_batch) +
            " samples";
  } else {
    split = "not even one pass fits: use smaller layers";
  }
  throw InputError(g_.source + ": workload '" + g_.name + "' at " + batch_text() + " on '" + arch_.name +
                   "' would store about " + std::to_string(passes.after_pass(n)) +
                   " instruction templates (instructions that do not fold into repeats: about " +
                   std::to_string(per_pass) + " per pass of " + std::to_string(sub_batch) +
                   (sub_batch == 1 ? " sample" : " samples") + ", projected from the first " +
                   std::to_string(passes.passes_seen()) + " of " + std::to_string(n) + " passes), more than the " +
                   std::to_string(cap) +
                   " one program may store (about 1-1.5 GB of simulator memory: a limit of the simulator, not of "
                   "the chip); it would reach them in pass " + std::to_string(reach_pass) + ", at " + where_at(reach_layer) +
                   "; " + split);
}

void Lowering::order_across_cores(bool split, int layer) {
  if (arch_.active_cores() <= 1) return;
  // Split work after serial work waits only for what core 0 wrote to device memory since the
  // last sync (operands, spills): the other cores read nothing else of core 0's.
  const bool after_serial = serial_since_sync_ && device_written_since_sync_;
  if (split ? after_serial || (split_since_sync_ && split_layer_ != layer) : split_since_sync_) {
    sync_cores();
    gather_results();  // the other cores' results of the split work before the sync
  }
  if (split) {
    split_since_sync_ = true;
    split_layer_ = layer;
  } else {
    serial_since_sync_ = true;
  }
}

// A sync on every core: a barrier (DESIGN.md §4: cores synchronise where data dependences
// require it). A weight tile read from the unified buffer is not placed above it.
void Lowering::sync_cores() {
  serial_since_sync_ = split_since_sync_ = device_written_since_sync_ = false;
  for (int64_t c = 0; c < arch_.active_cores(); ++c) {
    Instruction sync;
    sync.op = Opcode::kSync;
    sync.core = static_cast<uint8_t>(c);
    note_units(sync);
    body_.push_back(std::move(sync));
  }
  layer_body_start_ = std::max(layer_body_start_, body_emitted());
  merge_weight_reads(false);
}

void Lowering::emit(Instruction in, bool writes_tensor_storage) {
  if (!gemm_.emitting() && !gathering_) order_across_cores(false, in.layer);
  // A workload whose tiling needs more instructions than minutes of simulation, or whose
  // compact program would store more than about 1 GB, is refused with a message instead
  // of running for hours or out of memory (audit D14). GemmTiler::emit checks a whole layer's
  // tiles before emitting any; this catches every other path.
  if (body_emitted() + reads_emitted() >= kMaxInstructions) too_many_instructions(in.layer);
  if (p_.instructions.templates() >= max_stored_templates_) too_many_stored_instructions(in.layer);
  if (in.op == Opcode::kVector) {
    // The vector datapath is `lanes` bytes wide: the widest element the instruction
    // reads or writes sets how many lanes one element operation takes.
    for (const auto* list : {&in.reads, &in.writes}) {
      for (const Region& r : *list) {
        if (r.space == Space::kUnifiedBuffer) in.element_bytes = std::max(in.element_bytes, element_bytes(r.buffer));
      }
    }
  }
  if (writes_tensor_storage) {
    const bool vector_unit = in.op == Opcode::kActivate || in.op == Opcode::kVector;
    const auto& table = p_.shared_regions->table;
    int ub_writes = 0, written = -1;
    for (const Region& w : in.writes) {
      if (w.space == Space::kUnifiedBuffer) ++ub_writes, written = w.buffer;
    }
    // The same list follows every tile written over the same bytes: stored once, in the
    // program, and shared by the instructions that carry it (issue 19). One tensor written
    // and no region that could be dropped: the tensor's own list, looked up once.
    const isa::SharedRegionList* tail = nullptr;
    if (ub_writes == 1 && !(vector_unit && hazards_may_be_inert())) {
      tail = reused_list(written);
    } else if (ub_writes > 0) {
      extra_.clear();
      for (const Region& w : in.writes) {
        if (w.space != Space::kUnifiedBuffer) continue;
        for (uint32_t id : place_[w.buffer].reused) {
          if (vector_unit && inert_hazard(table[id].buffer)) continue;  // orders nothing (see settled_)
          extra_.push_back(id);
        }
      }
      if (!extra_.empty()) tail = shared_list(extra_);
    }
    if (tail != nullptr) {
      in.writes.set_shared_tail(tail);
      if (vector_unit) {
        for (uint32_t id : tail->ids) settle(table[id].buffer);
      }
    }
  }
  if (!device_copy_.empty() && in.op != Opcode::kDmaRead) {  // a buffer written otherwise: its device copy is stale
    for (const Region& w : in.writes) {
      if (w.space == Space::kUnifiedBuffer) device_copy_.erase(w.buffer);
    }
  }
  if (!held_panels_.empty() && !(in.op == Opcode::kDmaRead && in.core != 0)) {  // not a panel load: held copies are stale
    for (const Region& w : in.writes) {
      if (w.space == Space::kUnifiedBuffer) forget_panels(w.buffer);
    }
  }
  if (in.core == 0 && in.op == Opcode::kDmaWrite) device_written_since_sync_ = true;
  note_units(in);
  body_.push_back(std::move(in));
  merge_weight_reads(false);
}

void Lowering::lower_pass(int64_t batch) {
  lay_out(batch);
  ub_ = BufferAllocator(scratchpad_bytes());
  weight_cursor_ = 0;
  vacated_.clear();
  settled_.clear();
  const int L = static_cast<int>(g_.layers.size());
  auto write_outputs = [&](int at) {
    for (int out : outputs_at_[static_cast<size_t>(at)]) write_output(out);
  };

  // Graph inputs arrive from the host in chunks so the first layer can start early.
  // With spills, each input is read when a layer first needs it (lower_with_spills).
  auto take_inputs = [&](int li) {
    for (int in : inputs_at_[static_cast<size_t>(li)]) {
      if (spill_) {
        if (li < L) continue;  // read by lower_with_spills before its first consumer
        Spiller(*this).make_room(L, {in});    // an input no layer reads still crosses the link
        continue;
      }
      allocate(in, li < L && lazy_inputs_ ? li : -1);
      place_[in].loaded = true;
      read_input(in);
    }
  };
  if (!lazy_inputs_) take_inputs(0);
  layer_end_templates_.assign(static_cast<size_t>(L), 0);

  for (int li = 0; li < L; ++li) {
    const Layer& layer = g_.layers[li];
    if (lazy_inputs_) take_inputs(li);
    if (spill_) {
      Spiller(*this).lower_with_spills(li);
    } else {
      allocate(layer.output, li);
      allocate_scratch(li);
      lower_layer(li);
    }
    write_outputs(li);
    // Free tensors (and working buffers) whose last reader was this layer, in id order
    // (graph tensors, then the layer's working buffers): only those, not a scan of all.
    auto free_dead = [&](int t) {
      if (last_use_[t] == li && place_[t].alias_of < 0 && !dead_[t]) {
        if (place_[t].allocated) {
          ub_.release(place_[t].offset);
          vacate(t);
          place_[t].allocated = false;
        }
        dead_[t] = true;
      }
    };
    for (int t : dying_[static_cast<size_t>(li)]) free_dead(t);
    for (int t : scratch_[static_cast<size_t>(li)]) free_dead(t);
    layer_end_templates_[static_cast<size_t>(li)] = p_.instructions.templates();
  }
  if (lazy_inputs_) take_inputs(L);  // inputs no layer reads
  p_.ub_peak_bytes = std::max(p_.ub_peak_bytes, ub_.peak());

  write_outputs(L);
  pending_gathers_.clear();  // results no later layer or output reads (the next pass lays out afresh)
  core0_parts_.clear();
  device_copy_.clear();
  for (auto& held : held_panels_) held.clear();
  in_device_memory_.assign(g_.tensors.size(), 0);
  // The next pass overwrites every byte this one used.
  prev_vacated_ = vacated_;
  for (size_t t = 0; t < place_.size(); ++t) {
    const TensorPlace& tp = place_[t];
    if (!tp.allocated || tp.alias_of >= 0) continue;
    prev_vacated_.push_back(vacated_entry(static_cast<int>(t)));
  }
}

void Lowering::lower_layer(int li) {
  const Layer& layer = g_.layers[li];
  layer_body_start_ = body_emitted();
  if (VectorLowering(*this).grouped_conv_on_vector(layer)) {
    VectorLowering(*this).lower_grouped_conv_on_vector(li);
  } else if (graph::is_matrix_op(layer.op)) {
    MatrixLowering(*this).lower_matrix(li);
  } else {
    VectorLowering(*this).lower_vector(li);
  }
}

int64_t Lowering::plan_sub_batch() {
  // When the whole batch does not fit the unified buffer, run the graph on the
  // largest sub-batch that does, pass after pass (weights are fetched again per
  // pass). A single sample that does not fit is an error.
  int64_t sub_batch = total_batch_;
  const auto fits = [&](int64_t batch) { return !first_shortfall(batch).has_value(); };
  if (!fits(1)) {
    lazy_inputs_ = true;  // inputs up front do not fit even one sample: read each when needed
    // Not even so: spill activations to host memory and tile the layers that need it,
    // one sample per pass (the real pass throws if a layer cannot run even in tiles).
    if (!fits(1)) spill_ = true;
  }
  if (spill_) {
    sub_batch = 1;
  } else if (!fits(total_batch_)) {
    int64_t lo = 1, hi = total_batch_;  // fits(lo), !fits(hi)
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (fits(mid) ? lo : hi) = mid;
    }
    sub_batch = lo;
  }
  return sub_batch;
}

Program Lowering::run() {
  p_.workload = g_.name;
  p_.arch = arch_.name;
  p_.batch = total_batch_;
  p_.scratchpads = arch_.active_cores();

  uint64_t unique_weight_bytes = 0;
  for (const auto& layer : g_.layers) unique_weight_bytes += static_cast<uint64_t>(elements_bytes(layer.weight_dtype, layer.weight_count()));
  // Host-resident weights need no room in device memory.
  if (arch_.residency.weights == Residency::kDevice && unique_weight_bytes > arch_.weight_memory.capacity_bytes) {
    throw InputError(g_.source + ": workload '" + g_.name + "' has " + std::to_string(unique_weight_bytes) +
                     " bytes of weights, more than weight_memory.capacity of '" + arch_.name + "' (" +
                     std::to_string(arch_.weight_memory.capacity_bytes) + " bytes)");
  }

  // The matrix layers' tiles alone, before lowering anything: a program over the
  // instruction bound fails here at once instead of after gigabytes of instructions.
  {
    double planned = 0;
    for (size_t li = 0; li < g_.layers.size(); ++li) {
      const Layer& l = g_.layers[li];
      if (!graph::is_matrix_op(l.op) || l.gemm_k <= 0 || l.gemm_n <= 0) continue;
      const int64_t m = total_batch_ * std::max<int64_t>(1, l.gemm_m_per_sample);
      planned += static_cast<double>(std::max<int64_t>(1, l.gemm_groups)) * gemm_.planned_instructions(m, l.gemm_k, l.gemm_n);
      if (planned > static_cast<double>(kMaxInstructions)) too_many_instructions(static_cast<int>(li));
    }
  }

  for (const auto& layer : g_.layers) {
    LayerInfo info;
    info.name = layer.name;
    info.op = std::string(graph::op_name(layer.op));
    info.output_shape = graph::shape_text(g_.tensors[layer.output].shape);
    p_.layers.push_back(info);
  }

  const int64_t sub_batch = plan_sub_batch();
  p_.ub_peak_bytes = 0;
  p_.sub_batch = sub_batch;
  // Passes after the first repeat with a period of 2 x matrix units passes, or 1 with one
  // unit (pass_templates.h): once one whole period has been lowered, the templates the
  // whole program stores are known.
  PassTemplates pass_templates(ceil_div(total_batch_, sub_batch), slots() == 1 ? 1 : 2 * slots());
  bool projected = false;
  for (int64_t done = 0; done < total_batch_; done += sub_batch) {
    last_pass_ = done + sub_batch >= total_batch_;
    only_pass_ = last_pass_ && done == 0;
    if (last_pass_ && projected) p_.templates_measured = p_.instructions.templates();
    pass_start_templates_ = p_.instructions.templates();
    pass_row_shift_samples_ = (done / sub_batch) % 2 == 1 ? sub_batch : 0;
    lower_pass(std::min(sub_batch, total_batch_ - done));
    pass_templates.end_pass(p_.instructions.templates(), p_.instructions.items().size());
    if (!projected && pass_templates.passes_seen() < pass_templates.passes() - 1 && pass_templates.can_project()) {
      projected = true;
      p_.templates_projected = pass_templates.after_pass(pass_templates.passes() - 1);
      check_projected_templates(pass_templates, sub_batch);
    }
  }

  merge_weight_reads(true);
  for (int64_t c = 0; c < arch_.active_cores(); ++c) {
    Instruction halt;
    halt.op = Opcode::kHalt;
    halt.core = static_cast<uint8_t>(c);
    p_.instructions.push_back(halt);
  }
  return std::move(p_);
}

}  // namespace detail


int64_t samples_per_pass(const graph::Graph& graph, const ArchConfig& arch, int64_t batch) {
  return detail::Lowering(graph, arch, batch > 0 ? batch : graph.default_batch).plan_sub_batch();
}

Program compile(const graph::Graph& graph, const ArchConfig& arch, const CompileOptions& options) {
  const int64_t batch = options.batch > 0 ? options.batch : graph.default_batch;
  const size_t max_templates = options.max_stored_templates > 0 ? options.max_stored_templates : detail::kMaxStoredInstructions;
  return detail::Lowering(graph, arch, batch, options.compact, max_templates).run();
}

}  // namespace tessera::compiler
