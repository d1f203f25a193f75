#pragma once
// The bounded queue of weight tiles between weight memory and the array. The
// fetcher reserves a slot before it requests a tile from DRAM (so at most
// depth_tiles requests are outstanding) and the tile becomes usable at its
// ready cycle; the array frees the slot when it takes the tile.
#include <systemc>

#include <cstdint>
#include <deque>

#include "models/common/clock.h"

namespace tessera::models {

struct WeightTile {
  int32_t instruction = -1;  // the read_weights that fetched it
  uint64_t bytes = 0;
  int64_t ready_cycle = 0;  // last byte in the FIFO
  bool from_weight_memory = false;  // fetched from weight (or host) memory, not loaded from the unified buffer
  bool from_host = false;           // fetched over the host link (residency.weights: host)
};

class WeightFifo {
 public:
  WeightFifo(int64_t depth_tiles, const CoreClock& clock) : depth_(depth_tiles), clock_(clock) {}

  // Producer: blocks while all slots are taken; returns the cycle the slot was obtained.
  int64_t reserve() {
    while (static_cast<int64_t>(slots_.size()) >= depth_) sc_core::wait(popped_);
    slots_.push_back(WeightTile{});
    return clock_.now();
  }
  // Producer: fills the most recently reserved slot.
  void fill(const WeightTile& tile) {
    slots_.back() = tile;
    filled_++;
    pushed_.notify(sc_core::SC_ZERO_TIME);
  }
  // Consumer: blocks until the oldest tile is filled and ready, then frees its slot.
  WeightTile pop() {
    while (filled_ == 0) sc_core::wait(pushed_);
    const WeightTile tile = slots_.front();
    clock_.wait_until(tile.ready_cycle);
    slots_.pop_front();
    filled_--;
    popped_.notify(sc_core::SC_ZERO_TIME);
    return tile;
  }
  int64_t depth() const { return depth_; }

 private:
  int64_t depth_;
  const CoreClock& clock_;
  std::deque<WeightTile> slots_;
  int64_t filled_ = 0;
  sc_core::sc_event pushed_, popped_;
};

}  // namespace tessera::models
