#pragma once
// Busy intervals of one unit, in core cycles, for the cycle breakdown and traces.
#include <array>
#include <cstdint>
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

}  // namespace tessera::models
