// Transfers between host memory and the unified buffer over PCIe: graph inputs and outputs, spills.
#include "sim/compiler/lowering.h"

namespace tessera::compiler::detail {

void Lowering::read_input(int in) {
  const int64_t chunk = samples_per_chunk(in);
  const uint64_t per_sample = place_[in].bytes / static_cast<uint64_t>(batch_);
  for (int64_t s0 = 0; s0 < batch_; s0 += chunk) {
    const int64_t s1 = std::min(batch_, s0 + chunk);
    Instruction rh;
    rh.op = Opcode::kReadHost;
    rh.layer = -1;
    rh.bytes = per_sample * static_cast<uint64_t>(s1 - s0);
    rh.ub_address = place_[in].offset + per_sample * static_cast<uint64_t>(s0);
    rh.writes.push_back(region(in, s0, s1));
    p_.host_input_bytes += rh.bytes;
    emit(std::move(rh));
  }
}

void Lowering::host_transfer(Opcode op, int t, int li, const Region& region, uint64_t bytes, uint64_t ub_address) {
  const bool graph_tensor = static_cast<size_t>(t) < g_.tensors.size();
  const bool to_host = op == Opcode::kWriteHost;
  Instruction in;
  in.op = op;
  in.layer = li < static_cast<int>(p_.layers.size()) ? li : -1;
  in.bytes = bytes;
  in.ub_address = ub_address;
  // A graph output's host copy is the result, and a graph input's first read is the
  // input itself; everything else crosses the link only for want of room: a spill.
  if (to_host) {
    in.spill = !(graph_tensor && output_storage_[static_cast<size_t>(t)]);
  } else {
    in.spill = !(graph_tensor && g_.tensors[static_cast<size_t>(t)].producer < 0 && !place_[t].loaded);
  }
  if (in.spill && in.layer >= 0) {
    LayerInfo& info = p_.layers[static_cast<size_t>(in.layer)];
    (to_host ? info.spill_bytes_out : info.spill_bytes_in) += bytes;
  }
  if (in.spill) {
    (to_host ? p_.spill_bytes_out : p_.spill_bytes_in) += bytes;
  } else {
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

// Evicts a resident tensor: writes it to host memory unless a copy is there already

void Lowering::write_output(int out) {
  // Evicted or streamed by a row-tiled layer: its host copy is the result already.
  if (!place_[storage(out)].allocated && place_[storage(out)].on_host) return;
  const int64_t chunk = samples_per_chunk(out);
  const uint64_t per_sample = place_[out].bytes / static_cast<uint64_t>(batch_);
  for (int64_t s0 = 0; s0 < batch_; s0 += chunk) {
    const int64_t s1 = std::min(batch_, s0 + chunk);
    Instruction wh;
    wh.op = Opcode::kWriteHost;
    wh.layer = -1;
    wh.bytes = per_sample * static_cast<uint64_t>(s1 - s0);
    wh.ub_address = place_[storage(out)].offset + per_sample * static_cast<uint64_t>(s0);
    wh.reads.push_back(region(out, s0, s1));
    p_.host_output_bytes += wh.bytes;
    emit(std::move(wh), false);
  }
}

}  // namespace tessera::compiler::detail
