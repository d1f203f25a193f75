// Spills: Belady eviction to host memory and read-back before the next consumer, when one
// sample does not fit the unified buffer.
#include "sim/compiler/lowering.h"

#include "sim/common/error.h"

namespace tessera::compiler::detail {

int Spiller::next_use(int t, int li) const {
  if (static_cast<size_t>(t) < l_.readers_.size()) {
    const auto& r = l_.readers_[static_cast<size_t>(t)];
    auto it = std::upper_bound(r.begin(), r.end(), li);
    if (it != r.end()) return *it;
  }
  return static_cast<int>(l_.g_.layers.size());  // only the final write to the host is left
}

// Belady: the resident tensor needed again furthest in the future; at a tie one that
// host memory already holds (evicting it moves nothing), then the bigger one.
int Spiller::pick_victim(int li) const {
  int best = -1;
  std::tuple<int, int, uint64_t> best_key{-1, -1, 0};
  for (size_t t = 0; t < l_.place_.size(); ++t) {
    const TensorPlace& tp = l_.place_[t];
    if (!tp.allocated || tp.alias_of >= 0 || l_.dead_[t] || l_.pinned_[t]) continue;
    const std::tuple<int, int, uint64_t> key{next_use(static_cast<int>(t), li), tp.on_host ? 1 : 0, tp.bytes};
    if (best < 0 || key > best_key) best = static_cast<int>(t), best_key = key;
  }
  return best;
}


// (activations do not change once produced), then frees its bytes.
void Spiller::evict(int t, int li) {
  TensorPlace& tp = l_.place_[t];
  if (!tp.on_host) {
    l_.for_each_chunk(t, tp.offset, [&](const Region& r, uint64_t bytes, uint64_t ub_address) {
      l_.host_transfer(Opcode::kWriteHost, t, li, r, bytes, ub_address);
    });
    tp.on_host = true;
  }
  l_.ub_.release(tp.offset);
  l_.vacate(t);
  tp.allocated = false;
}

// Reads a tensor (just allocated) from host memory: a graph input's first read, or a
// spilled activation coming back before its consumer.
void Spiller::reload(int t, int li) {
  TensorPlace& tp = l_.place_[t];
  if (static_cast<size_t>(t) < l_.g_.tensors.size() && l_.g_.tensors[static_cast<size_t>(t)].producer < 0 && !tp.loaded) {
    l_.read_input(t);
  } else {
    l_.for_each_chunk(t, tp.offset, [&](const Region& r, uint64_t bytes, uint64_t ub_address) {
      l_.host_transfer(Opcode::kReadHost, t, li, r, bytes, ub_address);
    });
  }
  tp.loaded = true;
}

// Allocates `needs` (in order) for layer li, evicting other tensors until they all fit;
// needs that live in host memory are read back. When nothing else is left to evict and
// the buffer is still too fragmented, the layer's own resident tensors go out and come
// back laid out afresh.
void Spiller::make_room(int li, std::vector<int> needs) {
  for (int t : needs) l_.pinned_[static_cast<size_t>(t)] = 1;
  for (;;) {
    BufferAllocator trial = l_.ub_;
    bool ok = true;
    for (int t : needs) {
      if (!trial.allocate(l_.place_[t].bytes)) {
        ok = false;
        break;
      }
    }
    if (ok) break;
    if (const int v = pick_victim(li); v >= 0) {
      evict(v, li);
      continue;
    }
    int own = -1;
    for (size_t t = 0; t < l_.place_.size(); ++t) {
      const TensorPlace& tp = l_.place_[t];
      if (tp.allocated && tp.alias_of < 0 && !l_.dead_[t] && l_.pinned_[t] && (own < 0 || tp.bytes > l_.place_[own].bytes)) {
        own = static_cast<int>(t);
      }
    }
    if (own < 0) {
      uint64_t need = 0;
      for (int t : needs) need += l_.place_[t].bytes;
      throw InputError(l_.g_.source + ": workload '" + l_.g_.name + "' does not fit " + l_.scratchpad_text() + ": layer '" +
                       l_.g_.layers[static_cast<size_t>(std::min<int>(li, static_cast<int>(l_.g_.layers.size()) - 1))].name +
                       "' needs " + std::to_string(need) + " bytes; use a larger unified_buffer.capacity");
    }
    evict(own, li);
    needs.push_back(own);
  }
  for (int t : needs) {
    l_.allocate(t, std::min<int>(li, static_cast<int>(l_.g_.layers.size()) - 1));
    if (l_.place_[t].on_host) reload(t, li);
  }
}

uint64_t Spiller::working_set_bytes(int li) const {
  const Layer& layer = l_.g_.layers[static_cast<size_t>(li)];
  std::vector<int> seen;
  uint64_t bytes = 0;
  for (int in : layer.inputs) {
    const int s = l_.storage(in);
    if (std::find(seen.begin(), seen.end(), s) != seen.end()) continue;
    seen.push_back(s);
    bytes += l_.place_[s].bytes;
  }
  bytes += l_.place_[layer.output].bytes;
  for (int sc : l_.scratch_[static_cast<size_t>(li)]) bytes += l_.place_[sc].bytes;
  return bytes;
}

void Spiller::lower_with_spills(int li) {
  const Layer& layer = l_.g_.layers[static_cast<size_t>(li)];
  if (graph::is_layout_op(layer.op)) {  // an alias: nothing moves, nothing needs to be resident
    l_.p_.layers[static_cast<size_t>(li)].mapping = "alias";
    return;
  }
  l_.allocate_scratch(li, false);
  std::vector<int> needs;
  for (int in : layer.inputs) {
    const int s = l_.storage(in);
    l_.pinned_[static_cast<size_t>(s)] = 1;
    if (!l_.place_[s].allocated && std::find(needs.begin(), needs.end(), s) == needs.end()) needs.push_back(s);
  }
  needs.push_back(layer.output);
  for (int sc : l_.scratch_[static_cast<size_t>(li)]) needs.push_back(sc);
  if (working_set_bytes(li) <= l_.scratchpad_bytes()) {
    make_room(li, needs);
    l_.lower_layer(li);
  } else {
    RowTiler(l_, li).run();
  }
  std::fill(l_.pinned_.begin(), l_.pinned_.end(), 0);
}

}  // namespace tessera::compiler::detail
