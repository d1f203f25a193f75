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
