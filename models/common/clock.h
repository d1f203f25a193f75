#pragma once
// Every unit counts time in cycles of the accelerator's core clock. A duration
// measured in ns or bytes/bandwidth is rounded up to whole cycles, so all events
// land on cycle boundaries and cycle counts add up exactly.
//
// Simulated time is bounded (models/common/time_bounds.h): a cycle count that would
// pass kMaxSimulatedPs is clamped, the clock records the overflow and stops the
// simulation, and the engine fails the run. No double is cast to an integer out of
// range and no cycle sum wraps.
#include <systemc>

#include <cmath>
#include <cstdint>

#include "models/common/time_bounds.h"

namespace tessera::models {

class CoreClock {
 public:
  explicit CoreClock(double mhz)
      : mhz_(mhz), period_ps_(1e6 / mhz), max_cycle_(max_cycle_for(period_ps_)) {}

  double mhz() const { return mhz_; }
  double period_ps() const { return period_ps_; }
  // The last cycle that starts within kMaxSimulatedPs.
  int64_t max_cycle() const { return max_cycle_; }
  // True once any duration or cycle passed max_cycle(): the run's results are void.
  bool overflowed() const { return overflowed_; }

  sc_core::sc_time at(int64_t cycle) const {
    if (cycle > max_cycle_) {
      overflow();
      cycle = max_cycle_;
    }
    if (cycle < 0) cycle = 0;
    return sc_core::sc_time(static_cast<double>(std::llround(static_cast<double>(cycle) * period_ps_)), sc_core::SC_PS);
  }
  int64_t cycle_of(const sc_core::sc_time& t) const {
    return std::llround(t.to_seconds() * 1e12 / period_ps_);
  }
  int64_t now() const { return cycle_of(sc_core::sc_time_stamp()); }
  // Whole cycles covering `ns` nanoseconds.
  int64_t cycles_for_ns(double ns) const { return ceil_cycles(ns * mhz_ / 1000.0); }
  // Whole cycles covering a fractional cycle count (a tile at a slow MAC rate). Beyond
  // max_cycle() (or not a number) the result is max_cycle() + 1 and the run overflows.
  int64_t ceil_cycles(double cycles) const {
    const double c = std::ceil(cycles - 1e-9);
    if (!(c <= static_cast<double>(max_cycle_))) {
      overflow();
      return max_cycle_ + 1;
    }
    return c > 0 ? static_cast<int64_t>(c) : 0;
  }
  double seconds(int64_t cycles) const { return static_cast<double>(cycles) / (mhz_ * 1e6); }
  // Blocks the calling SC_THREAD until the start of `cycle` (no-op if past). A cycle
  // beyond max_cycle() stops the simulation and parks the thread for good (returning
  // would let a waiting loop spin within one delta cycle).
  void wait_until(int64_t cycle) const {
    if (cycle > max_cycle_) {
      overflow();
      static sc_core::sc_event* const never = new sc_core::sc_event("tessera_time_overflow");
      sc_core::wait(*never);
      return;
    }
    const sc_core::sc_time target = at(cycle);
    if (target > sc_core::sc_time_stamp()) sc_core::wait(target - sc_core::sc_time_stamp());
  }

 private:
  static int64_t max_cycle_for(double period_ps) {
    const double c = std::floor(kMaxSimulatedPs / period_ps);
    return c < static_cast<double>(INT64_MAX / 4) ? static_cast<int64_t>(c) : INT64_MAX / 4;
  }
  // Records the overflow and ends the simulation after the current delta cycle (once:
  // SystemC warns about a second sc_stop).
  void overflow() const {
    if (overflowed_) return;
    overflowed_ = true;
    if (sc_core::sc_is_running()) sc_core::sc_stop();
  }

  double mhz_;
  double period_ps_;
  int64_t max_cycle_;
  mutable bool overflowed_ = false;
};

}  // namespace tessera::models
