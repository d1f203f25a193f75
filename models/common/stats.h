#pragma once
// Statistics owned by the modules that produce them. A module that counts something
// derives from StatProvider and registers each counter once, with its unit and a
// one-line description, in its StatGroup; collect_stats() walks the sc_object tree and
// reads every registered counter, so a new counter needs no change in the engine.
#include <systemc>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace tessera::models {

// One counter's value at collection time; `path` is "<module path>.<name>".
struct StatValue {
  std::string path;
  std::string unit;         // "cycles", "bytes", "MACs", "instructions"
  std::string description;
  int64_t value = 0;
};

class StatGroup {
 public:
  // `read` is called at collection time (the module keeps the counter itself).
  void add(std::string name, std::string unit, std::string description, std::function<int64_t()> read) {
    counters_.push_back(Counter{std::move(name), std::move(unit), std::move(description), std::move(read)});
  }
  // In registration order, each name prefixed with `prefix` + ".".
  std::vector<StatValue> values(const std::string& prefix) const {
    std::vector<StatValue> out;
    out.reserve(counters_.size());
    for (const Counter& c : counters_) out.push_back(StatValue{prefix + "." + c.name, c.unit, c.description, c.read()});
    return out;
  }
  size_t size() const { return counters_.size(); }

 private:
  struct Counter {
    std::string name, unit, description;
    std::function<int64_t()> read;
  };
  std::vector<Counter> counters_;
};

class StatProvider {
 public:
  virtual ~StatProvider() = default;
  const StatGroup& stat_group() const { return stats_; }

 protected:
  StatGroup stats_;
};

// Every counter of every StatProvider at or under `top`, depth first in construction
// order, keyed by the module's hierarchical name.
inline void collect_stats(const sc_core::sc_object& top, std::vector<StatValue>& out) {
  if (const auto* p = dynamic_cast<const StatProvider*>(&top)) {
    for (StatValue& v : p->stat_group().values(top.name())) out.push_back(std::move(v));
  }
  for (const sc_core::sc_object* child : top.get_child_objects()) collect_stats(*child, out);
}
inline std::vector<StatValue> collect_stats(const sc_core::sc_object& top) {
  std::vector<StatValue> out;
  collect_stats(top, out);
  return out;
}

}  // namespace tessera::models
