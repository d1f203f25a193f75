#pragma once
// Which address spaces two instructions' regions conflict in: the controller's hazard test.
// Own regions are tested in plain loops. A shared tail (the hazard regions of dead tensors,
// hundreds for row-tiled layers with spills) is carried by many consecutive tiles: a long
// one is copied once, sorted by (space, buffer), and an own region looked up in it, since
// only regions of the same buffer can overlap; the result of two tails meeting is kept,
// keyed by the pair. Plain C++: no SystemC.
#include <cstddef>
#include <functional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "models/isa/program.h"

namespace tessera::models {

class RegionConflicts {
 public:
  // Bits of spaces(): the unified buffer, the accumulators.
  static constexpr int kUnifiedBuffer = 1;
  static constexpr int kAccumulators = 2;
  // The spaces in which a reads what b writes, or writes what b reads or writes.
  int spaces(const isa::Instruction& a, const isa::Instruction& b);
  // Forgets the kept tails and pairs once many have piled up: only those of recent tiles recur.
  void trim();

 private:
  using TailPair = std::pair<const isa::SharedRegionList*, const isa::SharedRegionList*>;
  struct TailPairHash {
    size_t operator()(const TailPair& p) const {
      return std::hash<const void*>()(p.first) * 31 + std::hash<const void*>()(p.second);
    }
  };
  // `tails_meet`: whether two shared tails are tested against each other (see spaces()).
  int list_spaces(const isa::RegionList& xs, const isa::RegionList& ys, bool tails_meet = true);
  int own_tail_spaces(std::span<const isa::Region> own, const isa::SharedRegionList* tail);
  int tail_tail_spaces(const isa::SharedRegionList* xt, const isa::SharedRegionList* yt);
  const std::vector<isa::Region>& sorted(const isa::SharedRegionList* tail);

  std::unordered_map<const isa::SharedRegionList*, std::vector<isa::Region>> sorted_tails_;
  std::unordered_map<TailPair, int, TailPairHash> tail_pairs_;
};

}  // namespace tessera::models
