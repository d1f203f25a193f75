#pragma once
// Busy intervals of one unit, in core cycles, for the cycle breakdown and traces.
#include <array>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::models {

struct Interval {
  int64_t begin = 0;
  int64_t end = 0;
  int32_t kind = 0;   // unit-specific meaning
  int32_t layer = -1;
  int32_t instruction = -1;
  uint8_t detail = 0;  // unit-specific (the controller: the head instruction's opcode); fills padding
};

// A unit's interval kinds, declared next to the enum with the name each one has in
// traces and statistics: one table, so kinds and names cannot drift apart.
template <typename Kind, std::size_t N>
using KindNames = std::array<std::pair<Kind, std::string_view>, N>;

template <typename Kind, std::size_t N>
constexpr std::string_view kind_name(const KindNames<Kind, N>& names, int32_t kind) {
  for (const auto& [k, name] : names) {
    if (static_cast<int32_t>(k) == kind) return name;
  }
  return "?";
}

// The statistics (count, busy cycles, cycles per kind) are kept as running totals; the
// intervals themselves, 32 bytes each, only while keep_intervals is on (the default). The
// engine turns it off for the logs that only a trace reads, unless one is asked for
// (issue 19: statistics memory proportional to what is asked).
class IntervalLog {
 public:
  void add(int64_t begin, int64_t end, int32_t kind, int32_t layer, int32_t instruction = -1, uint8_t detail = 0) {
    if (end <= begin) return;
    if (kind < 0) throw std::invalid_argument("IntervalLog::add: negative interval kind");
    ++count_;
    busy_ += end - begin;
    if (static_cast<size_t>(kind) >= kind_totals_.size()) kind_totals_.resize(static_cast<size_t>(kind) + 1, 0);
    kind_totals_[static_cast<size_t>(kind)] += end - begin;
    if (!keep_) return;
    const Interval next{begin, end, kind, layer, instruction, detail};
    if (coalesce_key_) {
      const int64_t key = coalesce_key_(next);
      if (!intervals_.empty() && intervals_.back().end == begin && key == last_key_) {
        intervals_.back().end = end;
        return;
      }
      last_key_ = key;
    }
    intervals_.push_back(next);
  }
  void keep_intervals(bool keep) { keep_ = keep; }
  // Coalescing (off by default): an interval that begins where the last stored one ends and
  // has the same key lengthens it instead of being stored; the stored interval keeps the
  // first one's fields. For a log that only a reader telling intervals apart by the key reads
  // (the cycle breakdown, when no trace is asked for: issue 19, memory per change of state
  // instead of per instruction).
  void coalesce_by(std::function<int64_t(const Interval&)> key) { coalesce_key_ = std::move(key); }
  bool keeps_intervals() const { return keep_; }
  // Every interval added while keep_intervals was on (all of them, by default), less those
  // taken.
  const std::vector<Interval>& intervals() const { return intervals_; }
  // Appends the stored intervals to `out` and forgets them (the totals stay): for a reader
  // that consumes them as the run goes (the cycle breakdown, issue 19).
  void move_intervals_to(std::vector<Interval>& out) {
    out.insert(out.end(), intervals_.begin(), intervals_.end());
    intervals_.clear();
  }
  int64_t count() const { return count_; }  // intervals added
  int64_t busy() const { return busy_; }    // their cycles, summed
  int64_t total(int32_t kind) const {
    return kind >= 0 && static_cast<size_t>(kind) < kind_totals_.size() ? kind_totals_[static_cast<size_t>(kind)] : 0;
  }

 private:
  std::vector<Interval> intervals_;
  std::vector<int64_t> kind_totals_;  // cycles per kind (kinds are small non-negative numbers)
  int64_t count_ = 0;
  int64_t busy_ = 0;
  bool keep_ = true;
  std::function<int64_t(const Interval&)> coalesce_key_;
  int64_t last_key_ = 0;
};

}  // namespace tessera::models
