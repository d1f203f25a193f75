// Transfers between host memory and the unified buffer over PCIe: graph inputs and outputs,
// spills and the tiles of row-tiled layers.
#include "sim/compiler/lowering.h"

namespace tessera::compiler::detail {

// Whole tensors move in chunks of samples_per_chunk samples so that consumers can start
// before all of it has moved.
void Lowering::for_each_chunk(int t, uint64_t ub_base, const ChunkFn& move) const {
  const int64_t chunk = samples_per_chunk(t);
  const uint64_t per_sample = place_[t].bytes / static_cast<uint64_t>(batch_);
  for (int64_t s0 = 0; s0 < batch_; s0 += chunk) {
    const int64_t s1 = std::min(batch_, s0 + chunk);
    move(region(t, s0, s1), per_sample * static_cast<uint64_t>(s1 - s0), ub_base + per_sample * static_cast<uint64_t>(s0));
  }
}

// One read_host (into `region`) or write_host (from it), counted as a spill or as the
// workload's own input/output traffic. Where that class of tensor lives in device memory
// (ArchConfig::residency: graph inputs, outputs, spills), it is a dma_read / dma_write of
// device memory instead, on the next of the core's DMA engines.
void Lowering::emit_host_io(Opcode op, int layer, bool spill, const Region& region, uint64_t bytes, uint64_t ub_address) {
  const bool to_host = op == Opcode::kWriteHost;
  const Residency where = spill ? arch_.residency.spills() : to_host ? arch_.residency.outputs : arch_.residency.inputs;
  Instruction in;
  in.op = op;
  in.layer = layer;
  in.bytes = bytes;
  in.ub_address = ub_address;
  in.spill = spill;
  if (where == Residency::kDevice) {
    in.op = to_host ? Opcode::kDmaWrite : Opcode::kDmaRead;
    in.weight_address = ub_address;  // an assumption: the tile's device-memory address (channel interleaving only)
    in.unit = static_cast<uint8_t>(next_dma_engine_);
    next_dma_engine_ = (next_dma_engine_ + 1) % arch_.dma.engines;
    if (!spill) (to_host ? p_.device_output_bytes : p_.device_input_bytes) += bytes;
  }
  if (spill && layer >= 0) {
    LayerInfo& info = p_.layers[static_cast<size_t>(layer)];
    (to_host ? info.spill_bytes_out : info.spill_bytes_in) += bytes;
  }
  if (spill) {
    (to_host ? p_.spill_bytes_out : p_.spill_bytes_in) += bytes;
  } else if (where == Residency::kHost) {
    (to_host ? p_.host_output_bytes : p_.host_input_bytes) += bytes;
  }
  if (to_host) {
    in.reads.push_back(region);
    emit(std::move(in), false);
  } else {
    in.writes.push_back(region);
    emit(std::move(in));
    // Device memory holds what was just read from it (a row tile streamed in, a spill read back).
    if (where == Residency::kDevice && arch_.active_cores() > 1) device_copy_[region.buffer] = region;
  }
}

void Lowering::read_input(int in) {
  for_each_chunk(in, place_[in].offset, [&](const Region& r, uint64_t bytes, uint64_t ub_address) {
    emit_host_io(Opcode::kReadHost, -1, false, r, bytes, ub_address);
  });
}

void Lowering::write_output(int out) {
  // Evicted or streamed by a row-tiled layer: its host copy is the result already.
  if (!place_[storage(out)].allocated && place_[storage(out)].on_host) return;
  if (write_split_output(out)) return;
  for_each_chunk(out, place_[storage(out)].offset, [&](const Region& r, uint64_t bytes, uint64_t ub_address) {
    emit_host_io(Opcode::kWriteHost, -1, false, r, bytes, ub_address);
  });
}

// A transfer of (part of) tensor t for layer li (li == the layer count: after the last layer).
void Lowering::host_transfer(Opcode op, int t, int li, const Region& region, uint64_t bytes, uint64_t ub_address) {
  const bool graph_tensor = static_cast<size_t>(t) < g_.tensors.size();
  // A graph output's host copy is the result, and a graph input's first read is the
  // input itself; everything else crosses the link only for want of room: a spill.
  const bool spill = op == Opcode::kWriteHost
                         ? !(graph_tensor && output_storage_[static_cast<size_t>(t)])
                         : !(graph_tensor && g_.tensors[static_cast<size_t>(t)].producer < 0 && !place_[t].loaded);
  emit_host_io(op, li < static_cast<int>(p_.layers.size()) ? li : -1, spill, region, bytes, ub_address);
}

}  // namespace tessera::compiler::detail

namespace tessera::compiler::detail {

// Split layers on several cores (docs/architecture.md "Work split"). Each core's scratchpad is
// filled by its own DMA engines from device memory; there is no path between two cores'
// scratchpads, so another core's operand panel and results cross device memory.

bool Lowering::extend(CorePart& a, const CorePart& b) {
  Region& r = a.region;
  const Region& o = b.region;
  if (r.space != o.space || r.buffer != o.buffer || a.layer != b.layer) return false;
  if (r.col_begin == o.col_begin && r.col_end == o.col_end && r.row_end == o.row_begin) {
    r.row_end = o.row_end;
  } else if (r.row_begin == o.row_begin && r.row_end == o.row_end && r.col_end == o.col_begin) {
    r.col_end = o.col_end;
  } else {
    return false;
  }
  a.bytes += b.bytes;
  return true;
}

bool Lowering::holds_panel(int64_t core, const Region& r) const {
  const auto& held = held_panels_[static_cast<size_t>(core)];
  const auto it = held.find(r.buffer);
  if (it == held.end()) return false;
  return std::any_of(it->second.begin(), it->second.end(), [&](const Region& h) {
    return h.row_begin <= r.row_begin && r.row_end <= h.row_end && h.col_begin <= r.col_begin && r.col_end <= h.col_end;
  });
}

// `buffer` is written again or gives up its bytes: no core holds a valid panel of it.
void Lowering::forget_panels(int buffer) {
  for (auto& held : held_panels_) held.erase(buffer);
}

uint64_t Lowering::region_bytes(const Region& r) const {
  const int64_t n = (r.row_end - r.row_begin) * (r.col_end - r.col_begin);
  const auto b = static_cast<size_t>(r.buffer);
  if (b < g_.tensors.size()) return static_cast<uint64_t>(elements_bytes(g_.tensors[b].dtype, n));
  return static_cast<uint64_t>(n * place_[b].element_bytes);
}

uint64_t Lowering::region_address(const Region& r) const {
  const TensorPlace& tp = place_[static_cast<size_t>(r.buffer)];
  const Region first{r.space, r.buffer, row_shift(r.buffer), r.row_begin, 0, tp.cols};  // the rows before it
  const Region left{r.space, r.buffer, r.row_begin, r.row_begin + 1, 0, r.col_begin};
  return tp.offset + region_bytes(first) + region_bytes(left);
}

// A dma_read (into `core`'s scratchpad) or dma_write (from it) of one part, on the next DMA engine.
void Lowering::emit_core_copy(Opcode op, int64_t core, int layer, const CorePart& part) {
  Instruction in;
  in.op = op;
  in.layer = layer;
  in.core = static_cast<uint8_t>(core);
  in.bytes = part.bytes;
  in.ub_address = part.ub_address;
  in.weight_address = part.ub_address;  // an assumption, as for spills: channel interleaving only
  in.unit = static_cast<uint8_t>(next_dma_engine_);
  next_dma_engine_ = (next_dma_engine_ + 1) % arch_.dma.engines;
  (op == Opcode::kDmaWrite ? p_.core_copy_bytes_out : p_.core_copy_bytes_in) += part.bytes;
  if (op == Opcode::kDmaWrite) {
    in.reads.push_back(part.region);
    emit(std::move(in), false);
  } else {
    in.writes.push_back(part.region);
    emit(std::move(in));
  }
}

// Before other cores read `whole` (an operand of a split layer, in core 0's scratchpad), device
// memory must hold it: a graph input that lives there, or a spill there, already does; a
// result of an earlier split layer needs only the tiles core 0 made (the other cores wrote
// theirs); anything else core 0 writes whole. Serial work: a sync follows before the split.
void Lowering::copy_to_device_memory(int layer, const Region& whole) {
  const auto b = static_cast<size_t>(whole.buffer);
  const bool graph_tensor = b < g_.tensors.size();
  if (auto it = device_copy_.find(whole.buffer); it != device_copy_.end()) {
    const Region& c = it->second;
    if (c.row_begin <= whole.row_begin && whole.row_end <= c.row_end && c.col_begin <= whole.col_begin &&
        whole.col_end <= c.col_end) {
      return;
    }
  }
  if (graph_tensor) {
    if (in_device_memory_.size() < g_.tensors.size()) in_device_memory_.resize(g_.tensors.size(), 0);
    if (in_device_memory_[b]) return;
    const TensorPlace& tp = place_[b];
    const bool input = g_.tensors[b].producer < 0;
    if (tp.on_host && (input ? arch_.residency.inputs : arch_.residency.spills()) == Residency::kDevice) {
      in_device_memory_[b] = 1;
      return;
    }
  }
  if (auto it = core0_parts_.find(whole.buffer); it != core0_parts_.end()) {
    for (const CorePart& part : it->second) emit_core_copy(Opcode::kDmaWrite, 0, layer, part);
    core0_parts_.erase(it);
  } else {
    emit_core_copy(Opcode::kDmaWrite, 0, layer, CorePart{whole, region_bytes(whole), region_address(whole), layer});
  }
  // A scratch buffer (a row tile's) holds other rows next time: only graph tensors stay valid.
  if (graph_tensor) in_device_memory_[b] = 1;
}

// A result of split layers that lives in device memory (residency.outputs: device) is written
// where it was made: the other cores wrote their tiles there already, so they are not gathered
// (no reader is left) and core 0 writes only its own tiles. Returns false for any other output.
bool Lowering::write_split_output(int out) {
  const int s = storage(out);
  const auto parts = core0_parts_.find(s);
  if (parts == core0_parts_.end() || arch_.residency.outputs != Residency::kDevice || s != out) return false;
  uint64_t remote = place_[s].bytes;
  for (const CorePart& part : parts->second) remote -= part.bytes;
  std::erase_if(pending_gathers_, [&](const CorePart& g) { return g.region.buffer == s; });
  // The other cores' tiles are output bytes, not copies between cores.
  p_.core_copy_bytes_out -= remote;
  p_.device_output_bytes += remote;
  std::vector<CorePart> own;
  own.swap(parts->second);
  core0_parts_.erase(parts);
  for (const CorePart& part : own) emit_host_io(Opcode::kWriteHost, -1, false, part.region, part.bytes, part.ub_address);
  return true;
}

// After a sync: core 0 reads the results the other cores wrote to device memory, so its
// scratchpad holds every split result whole for serial work, outputs and spills. They need
// no ordering of their own: no other core touches core 0's scratchpad.
void Lowering::gather_results() {
  if (pending_gathers_.empty()) return;
  std::vector<CorePart> parts;
  parts.swap(pending_gathers_);
  gathering_ = true;
  for (const CorePart& part : parts) emit_core_copy(Opcode::kDmaRead, 0, part.layer, part);
  gathering_ = false;
}

}  // namespace tessera::compiler::detail
