#include "models/units/region_conflicts.h"

#include <algorithm>

namespace tessera::models {

namespace {

int space_bit(const isa::Region& x) {
  return x.space == isa::Space::kAccumulators ? RegionConflicts::kAccumulators : RegionConflicts::kUnifiedBuffer;
}

int segment_spaces(std::span<const isa::Region> xs, std::span<const isa::Region> ys) {
  int spaces = 0;
  for (const isa::Region& x : xs) {
    for (const isa::Region& y : ys) {
      if (x.overlaps(y)) spaces |= space_bit(x);
    }
  }
  return spaces;
}

bool by_buffer(const isa::Region& a, const isa::Region& b) {
  return std::make_pair(a.space, a.buffer) < std::make_pair(b.space, b.buffer);
}

}  // namespace

// Shared tails are carried by writes only: the regions of the dead or evicted tensors whose
// bytes the written tensor now holds. Two writes' tails meeting orders nothing: two tensors
// live at once hold disjoint bytes, whatever old tensor both were placed over, and a tensor
// placed over the bytes of one that died has that one's region in its tail, which meets the
// dead one's writes as their own regions. Tested anyway, it made every write over a big dead
// tensor wait for every other (a later pass's K/V reads and its scores' activations, each
// over the previous pass's V).
int RegionConflicts::spaces(const isa::Instruction& a, const isa::Instruction& b) {
  return list_spaces(a.reads, b.writes) | list_spaces(a.writes, b.reads) | list_spaces(a.writes, b.writes, false);
}

void RegionConflicts::trim() {
  if (sorted_tails_.size() > 64) sorted_tails_.clear();
  if (tail_pairs_.size() > 4096) tail_pairs_.clear();
}

const std::vector<isa::Region>& RegionConflicts::sorted(const isa::SharedRegionList* tail) {
  auto it = sorted_tails_.find(tail);
  if (it == sorted_tails_.end()) {
    std::vector<isa::Region> copy;
    copy.reserve(tail->size());
    for (size_t i = 0; i < tail->size(); ++i) copy.push_back((*tail)[i]);
    std::stable_sort(copy.begin(), copy.end(), by_buffer);
    it = sorted_tails_.emplace(tail, std::move(copy)).first;
  }
  return it->second;
}

int RegionConflicts::own_tail_spaces(std::span<const isa::Region> own, const isa::SharedRegionList* tail) {
  if (own.empty() || tail == nullptr || tail->size() == 0) return 0;
  int spaces = 0;
  if (tail->size() <= 16) {
    for (const isa::Region& x : own) {
      for (size_t i = 0; i < tail->size(); ++i) {
        if (x.overlaps((*tail)[i])) spaces |= space_bit(x);
      }
    }
    return spaces;
  }
  const std::vector<isa::Region>& t = sorted(tail);
  for (const isa::Region& x : own) {
    const auto [lo, hi] = std::equal_range(t.begin(), t.end(), x, by_buffer);
    spaces |= segment_spaces({&x, 1}, {lo, hi});
  }
  return spaces;
}

// Two tails: merged by (space, buffer), all pairs tested within a buffer.
int RegionConflicts::tail_tail_spaces(const isa::SharedRegionList* xt, const isa::SharedRegionList* yt) {
  const std::vector<isa::Region>& xs = sorted(xt);
  const std::vector<isa::Region>& ys = sorted(yt);
  int spaces = 0;
  auto x = xs.begin(), y = ys.begin();
  while (x != xs.end() && y != ys.end()) {
    if (by_buffer(*x, *y)) {
      ++x;
    } else if (by_buffer(*y, *x)) {
      ++y;
    } else {
      const auto xe = std::upper_bound(x, xs.end(), *x, by_buffer), ye = std::upper_bound(y, ys.end(), *y, by_buffer);
      spaces |= segment_spaces({x, xe}, {y, ye});
      x = xe, y = ye;
    }
  }
  return spaces;
}

int RegionConflicts::list_spaces(const isa::RegionList& xs, const isa::RegionList& ys, bool tails_meet) {
  const auto xo = xs.own_regions(), yo = ys.own_regions();
  const isa::SharedRegionList *xt = xs.shared_tail(), *yt = ys.shared_tail();
  int spaces = segment_spaces(xo, yo) | own_tail_spaces(xo, yt) | own_tail_spaces(yo, xt);
  if (tails_meet && xt != nullptr && yt != nullptr) {
    const auto key = std::make_pair(xt, yt);
    const auto it = tail_pairs_.find(key);
    spaces |= it != tail_pairs_.end() ? it->second : tail_pairs_.emplace(key, tail_tail_spaces(xt, yt)).first->second;
  }
  return spaces;
}

}  // namespace tessera::models
