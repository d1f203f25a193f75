#pragma once
// A shared resource (a DRAM channel, the PCIe link, a unified-buffer port) as a
// non-preemptive server: each request occupies it for `service` cycles, starting no
// earlier than its arrival. Contention emerges from the queueing, not from a formula.
//
// Requests are served in arrival order, not call order: a request may arrive
// earlier than one already reserved (a unit reserves a port for a future stream
// start, or two initiators share the server), and it then takes the earliest idle gap
// at or after its arrival that is long enough (backfill). A reservation, once made,
// never moves: its caller already holds its end cycle.
#include <cstdint>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>

#include "models/common/interval_log.h"
#include "models/common/time_bounds.h"

namespace tessera::models {

class BandwidthServer {
 public:
  // Returns the cycle the request's service ends. `kind` is the caller's (the log's kind).
  int64_t serve(int64_t arrival, int64_t service, int32_t layer = -1, int32_t instruction = -1, int32_t kind = 0) {
    if (arrival < floor_) {
      throw std::logic_error("BandwidthServer: a request arrives at cycle " + std::to_string(arrival) +
                             ", before cycle " + std::to_string(floor_) + " its reservations were forgotten up to");
    }
    const int64_t start = earliest_start(arrival, service);
    const int64_t end = saturating_add(start, service);  // past the time bound: the clock fails the run
    if (service > 0) occupy(start, end);
    busy_until_ = end > busy_until_ ? end : busy_until_;
    log_.add(start, end, kind, layer, instruction);
    busy_cycles_ = saturating_add(busy_cycles_, service);
    return end;
  }
  // Forgets the reservations that end by `cycle`; the caller promises that no request
  // arrives before it from now on, and those reservations cannot delay one that does not
  // (issue 19: memory for the reservations ahead, not for the whole run). A request that
  // arrives earlier after all is refused (std::logic_error).
  void forget_before(int64_t cycle) {
    floor_ = cycle > floor_ ? cycle : floor_;
    while (!busy_.empty() && busy_.begin()->second <= cycle) busy_.erase(busy_.begin());
  }
  int64_t busy_until() const { return busy_until_; }  // end of the latest reservation
  int64_t busy_cycles() const { return busy_cycles_; }
  // Busy intervals in call order (a backfilled request appears after later ones).
  const IntervalLog& log() const { return log_; }
  IntervalLog& log() { return log_; }  // the cycle breakdown's access (sim/engine)
  void keep_intervals(bool keep) { log_.keep_intervals(keep); }

 private:
  // The first idle gap of `service` cycles at or after `arrival`.
  int64_t earliest_start(int64_t arrival, int64_t service) const {
    int64_t start = arrival;
    auto next = busy_.upper_bound(start);  // first reservation beginning after start
    if (next != busy_.begin()) {
      const auto prev = std::prev(next);
      if (prev->second > start) start = prev->second;  // arrival falls inside a reservation
    }
    while (next != busy_.end() && next->first < saturating_add(start, service)) {
      start = next->second > start ? next->second : start;
      ++next;
    }
    return start;
  }
  // Records [begin, end) as busy, merged with touching neighbours.
  void occupy(int64_t begin, int64_t end) {
    auto next = busy_.lower_bound(begin);
    if (next != busy_.end() && next->first == end) {
      end = next->second;
      next = busy_.erase(next);
    }
    if (next != busy_.begin()) {
      const auto prev = std::prev(next);
      if (prev->second == begin) {
        prev->second = end;
        return;
      }
    }
    busy_.emplace_hint(next, begin, end);
  }

  std::map<int64_t, int64_t> busy_;  // reservations: begin -> end, disjoint, touching ones merged
  int64_t busy_until_ = 0;
  int64_t busy_cycles_ = 0;
  int64_t floor_ = INT64_MIN;  // see forget_before
  IntervalLog log_;
};

}  // namespace tessera::models
