#pragma once
// When each in-flight instruction's results are visible (the controller's and units' waits).
#include <systemc>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tessera::models {

// When each instruction's results are visible; unknown until its unit decides. Held for a
// window of instructions only (issue 19: memory for what is in flight, not for the
// program): an instruction leaves the window once it and every one before it have
// finished, no later than the cycle of a dispatch; its times are then summed into its
// layer's and the run's. A query of an instruction that has left answers a cycle no later
// than the one it left at: it finished in the past, which is all a wait needs to know.
class CompletionTracker {
 public:
  static constexpr int64_t kUnknown = INT64_MAX;
  struct LayerTimes {
    int64_t first_dispatch_cycle = -1;
    int64_t last_finish_cycle = -1;
    int64_t instructions = 0;
  };
  CompletionTracker() = default;
  // `index` is the next instruction in program order (the controller dispatches in order),
  // dispatched at `cycle`, the current one.
  void dispatched(int32_t index, int64_t cycle, int32_t layer) {
    if (static_cast<int64_t>(index) != base_ + static_cast<int64_t>(window_.size())) {
      throw std::logic_error("CompletionTracker: instruction " + std::to_string(index) + " dispatched out of order");
    }
    while (!window_.empty() && window_.front().finish <= cycle) retire_front();
    window_.push_back(Entry{cycle, kUnknown, layer});
  }
  void finish_at(int32_t index, int64_t cycle) {
    entry(index).finish = cycle;
    changed_.notify(sc_core::SC_ZERO_TIME);
  }
  int64_t finish(int32_t index) const {
    if (index < base_) return retired_finish_;
    if (index >= base_ + static_cast<int64_t>(window_.size())) return kUnknown;  // not dispatched yet
    return window_[static_cast<size_t>(index - base_)].finish;
  }
  // The dispatch cycle of an instruction in the window; -1 before it is dispatched.
  int64_t dispatch(int32_t index) const {
    if (index >= base_ + static_cast<int64_t>(window_.size())) return -1;
    return entry(index).dispatch;
  }
  const sc_core::sc_event& changed() const { return changed_; }
  // After the run: every instruction leaves; then the sums are complete.
  void retire_all() {
    while (!window_.empty()) retire_front();
  }
  // Per layer (by index): first dispatch, last finish and instruction count of those that
  // left; and the latest finish of all of them (kUnknown if one never finished).
  const std::vector<LayerTimes>& layer_times() const { return layers_; }
  int64_t last_finish() const { return last_finish_; }
  size_t window_size() const { return window_.size(); }

  // Instructions of another unit that `index` must wait for in its own unit, not at the
  // controller (Controller: an activate's accumulator half); taken once by that unit.
  void wait_in_unit(int32_t index, std::vector<int32_t> producers) {
    if (!producers.empty()) unit_waits_.emplace(index, std::move(producers));
  }
  std::vector<int32_t> take_unit_waits(int32_t index) {
    const auto it = unit_waits_.find(index);
    if (it == unit_waits_.end()) return {};
    std::vector<int32_t> out = std::move(it->second);
    unit_waits_.erase(it);
    return out;
  }

 private:
  struct Entry {
    int64_t dispatch;
    int64_t finish;
    int32_t layer;
  };
  const Entry& entry(int32_t index) const {
    if (index < base_ || index >= base_ + static_cast<int64_t>(window_.size())) {
      throw std::logic_error("CompletionTracker: instruction " + std::to_string(index) + " is not in flight");
    }
    return window_[static_cast<size_t>(index - base_)];
  }
  Entry& entry(int32_t index) { return const_cast<Entry&>(std::as_const(*this).entry(index)); }
  void retire_front() {
    const Entry& e = window_.front();
    if (e.layer >= 0) {
      if (static_cast<size_t>(e.layer) >= layers_.size()) layers_.resize(static_cast<size_t>(e.layer) + 1);
      LayerTimes& l = layers_[static_cast<size_t>(e.layer)];
      if (l.first_dispatch_cycle < 0 || e.dispatch < l.first_dispatch_cycle) l.first_dispatch_cycle = e.dispatch;
      l.last_finish_cycle = std::max(l.last_finish_cycle, e.finish);
      l.instructions++;
    }
    last_finish_ = std::max(last_finish_, e.finish);
    if (e.finish != kUnknown) retired_finish_ = std::max(retired_finish_, e.finish);
    window_.pop_front();
    ++base_;
  }
  std::deque<Entry> window_;  // instructions base_, base_ + 1, ...
  int64_t base_ = 0;
  int64_t retired_finish_ = 0;  // the latest finish of those that left
  int64_t last_finish_ = 0;
  std::vector<LayerTimes> layers_;
  std::unordered_map<int32_t, std::vector<int32_t>> unit_waits_;  // only instructions in flight
  sc_core::sc_event changed_;
};

}  // namespace tessera::models
