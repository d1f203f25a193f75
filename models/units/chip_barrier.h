#pragma once
// The barrier where the cores of a chip meet at a sync.
#include <systemc>

#include <cstdint>

namespace tessera::models {

// Where the cores of a chip meet at a sync: each arrives once per sync, and all leave
// when the last one has arrived (the chip template's cross-core synchronisation: a layer
// split over cores ends when every core has finished its share).
class ChipBarrier {
 public:
  explicit ChipBarrier(int cores) : cores_(cores) {}
  void arrive_and_wait() {
    const uint64_t generation = generation_;
    if (++arrived_ == cores_) {
      arrived_ = 0;
      ++generation_;
      released_.notify(sc_core::SC_ZERO_TIME);
      return;
    }
    while (generation_ == generation) sc_core::wait(released_);
  }

 private:
  int cores_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  sc_core::sc_event released_;
};

}  // namespace tessera::models
