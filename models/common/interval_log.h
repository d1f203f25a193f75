#pragma once
// Busy intervals of one unit, in core cycles, for the cycle breakdown and traces.
#include <cstdint>
#include <vector>

namespace tessera::models {

struct Interval {
  int64_t begin = 0;
  int64_t end = 0;
  int32_t kind = 0;   // unit-specific meaning
  int32_t layer = -1;
  int32_t instruction = -1;
};

class IntervalLog {
 public:
  void add(int64_t begin, int64_t end, int32_t kind, int32_t layer, int32_t instruction = -1) {
    if (end <= begin) return;
    intervals_.push_back(Interval{begin, end, kind, layer, instruction});
  }
  const std::vector<Interval>& intervals() const { return intervals_; }
  int64_t total(int32_t kind) const {
    int64_t n = 0;
    for (const auto& i : intervals_) n += i.kind == kind ? i.end - i.begin : 0;
    return n;
  }

 private:
  std::vector<Interval> intervals_;
};

// A shared resource that serves requests first come, first served: each takes
// `service` cycles of the resource after it arrives and the resource is free.
// Contention emerges from the queueing, not from a formula.
class BandwidthServer {
 public:
  // Returns the cycle the request's service ends.
  int64_t serve(int64_t arrival, int64_t service, int32_t layer = -1, int32_t instruction = -1) {
    const int64_t start = arrival > busy_until_ ? arrival : busy_until_;
    busy_until_ = start + service;
    log_.add(start, busy_until_, 0, layer, instruction);
    busy_cycles_ += service;
    return busy_until_;
  }
  int64_t busy_until() const { return busy_until_; }
  int64_t busy_cycles() const { return busy_cycles_; }
  const IntervalLog& log() const { return log_; }

 private:
  int64_t busy_until_ = 0;
  int64_t busy_cycles_ = 0;
  IntervalLog log_;
};

}  // namespace tessera::models
