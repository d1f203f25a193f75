#pragma once
// Every unit counts time in cycles of the accelerator's core clock. A duration
// measured in ns or bytes/bandwidth is rounded up to whole cycles, so all events
// land on cycle boundaries and cycle counts add up exactly.
#include <systemc>

#include <cmath>
#include <cstdint>

namespace tessera::models {

class CoreClock {
 public:
  explicit CoreClock(double mhz) : mhz_(mhz), period_ps_(1e6 / mhz) {}

  double mhz() const { return mhz_; }
  double period_ps() const { return period_ps_; }
  sc_core::sc_time at(int64_t cycle) const {
    return sc_core::sc_time(static_cast<double>(std::llround(static_cast<double>(cycle) * period_ps_)), sc_core::SC_PS);
  }
  int64_t cycle_of(const sc_core::sc_time& t) const {
    return std::llround(t.to_seconds() * 1e12 / period_ps_);
  }
  int64_t now() const { return cycle_of(sc_core::sc_time_stamp()); }
  // Whole cycles covering `ns` nanoseconds.
  int64_t cycles_for_ns(double ns) const { return static_cast<int64_t>(std::ceil(ns * mhz_ / 1000.0 - 1e-9)); }
  double seconds(int64_t cycles) const { return static_cast<double>(cycles) / (mhz_ * 1e6); }
  // Blocks the calling SC_THREAD until the start of `cycle` (no-op if past).
  void wait_until(int64_t cycle) const {
    const sc_core::sc_time target = at(cycle);
    if (target > sc_core::sc_time_stamp()) sc_core::wait(target - sc_core::sc_time_stamp());
  }

 private:
  double mhz_;
  double period_ps_;
};

}  // namespace tessera::models
