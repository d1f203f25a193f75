#pragma once
// The stored instruction templates of a program that runs in passes, projected from its
// first passes (issue 33 item 4: a batch over the stored-template bound is refused after a
// few passes instead of after all of them).
//
// Why not from the tiles alone: tile counts give instructions (the 2^28 bound is checked
// that way before lowering), but which instructions fold into repeats depends on their
// strides and shared hazard lists, so a tile-based template count could only be an upper
// bound, the expanded instruction count (CNN1 on tpu-v1, one pass of 55 samples: 3,640
// templates), and would refuse programs that run. What is regular is the passes: the
// compact program folds within a pass, not across passes when a pass adds more top-level
// items than a repeat's body may have (InstructionStream::kMaxBody; a shorter pass, as in a
// one-layer graph, folds into a repeat of passes and is not projected), and every pass after the first is the
// same instructions up to (a) host addresses, a constant offset per pass (a stride, which
// leaves the folds within the pass as they are), (b) which accumulator half each tile fills
// (with one matrix unit a relabelling 0 <-> 1 that negates those strides, which leaves which
// items fold unchanged) and (c) with several matrix units, which unit (core, unit: not
// strided) takes which tile: a rotation whose state, next unit and each unit's half, repeats
// within 2 x units passes. So the templates each pass adds repeat with that period (checked
// on every shipped config x workload: tests/sim/compiler/test_pass_templates.cpp), and the
// count after pass n follows from the passes seen once one whole period after the first
// pass has been lowered.
#include <cstdint>
#include <vector>

#include "models/isa/program.h"

namespace tessera::compiler {

class PassTemplates {
 public:
  // `passes` in the program; `period`: passes after which the pass-to-pass state repeats
  // (1 with one matrix unit, else 2 x units).
  PassTemplates(int64_t passes, int64_t period) : passes_(passes), period_(period < 1 ? 1 : period) {}

  // The templates and top-level items stored when a pass ends; only the first 1 + period
  // passes are kept.
  void end_pass(uint64_t templates_stored, uint64_t items_stored) {
    if (passes_seen() < 1 + period_) {
      seen_.push_back(templates_stored);
      items_.push_back(items_stored);
    }
  }
  int64_t passes_seen() const { return static_cast<int64_t>(seen_.size()); }
  int64_t passes() const { return passes_; }
  // The first pass and one whole period after it have been seen, each pass after the first
  // added more top-level items than a repeat's body may have (so no repeat spans a pass),
  // and none took templates away.
  bool can_project() const {
    if (passes_seen() < 1 + period_) return false;
    for (size_t i = 1; i < seen_.size(); ++i) {
      if (seen_[i] < seen_[i - 1] || items_[i] <= items_[i - 1] + isa::InstructionStream::kMaxBody) return false;
    }
    return true;
  }
  // Templates stored at the end of pass n (1-based): as seen, or projected (can_project()).
  uint64_t after_pass(int64_t n) const {
    const int64_t k = passes_seen();
    if (n <= 0) return 0;
    if (n <= k) return seen_[static_cast<size_t>(n - 1)];
    // Pass k + 1 repeats pass k + 1 - period, and so on: whole periods, then the first
    // (n - k) mod period passes of one.
    const int64_t m = n - k;
    const uint64_t per_period = seen_.back() - seen_[static_cast<size_t>(k - 1 - period_)];
    uint64_t t = seen_.back() + static_cast<uint64_t>(m / period_) * per_period;
    for (int64_t i = 0; i < m % period_; ++i) t += delta(k - period_ + i);
    return t;
  }
  // Templates a pass adds, on average over one period.
  double per_pass() const {
    const int64_t k = passes_seen();
    return static_cast<double>(seen_.back() - seen_[static_cast<size_t>(k - 1 - period_)]) / static_cast<double>(period_);
  }
  // The first pass at whose end `cap` templates are stored (0: none of the program's).
  int64_t first_pass_reaching(uint64_t cap) const {
    if (after_pass(passes_) < cap) return 0;
    int64_t lo = 0, hi = passes_;  // after_pass(lo) < cap <= after_pass(hi)
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (after_pass(mid) < cap ? lo : hi) = mid;
    }
    return hi;
  }

 private:
  // Templates pass i + 1 (0-based index i >= 1) added.
  uint64_t delta(int64_t i) const { return seen_[static_cast<size_t>(i)] - seen_[static_cast<size_t>(i - 1)]; }
  int64_t passes_;
  int64_t period_;
  std::vector<uint64_t> seen_;   // templates stored after each pass seen
  std::vector<uint64_t> items_;  // top-level items stored after each pass seen
};

}  // namespace tessera::compiler
