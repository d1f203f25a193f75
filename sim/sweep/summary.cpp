#include "sim/sweep/summary.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_set>

#include "sim/common/error.h"

namespace tessera::sweep {
namespace {

std::string cell(const Value& v) {
  if (v.kind == Value::Kind::kReal) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v.d);
    return buf;
  }
  std::string t = v.text();
  for (char& c : t) {
    if (c == '|' || c == '\n') c = ' ';
  }
  return t;
}

std::optional<Value> axis_value(const Row& r, const std::string& name) {
  for (const auto& [k, v] : r.metrics) {
    if (k == name) return v;
  }
  for (const auto& [k, v] : r.params) {
    if (k == name) return v;
  }
  return std::nullopt;
}

}  // namespace

std::vector<size_t> pareto_front(const std::vector<std::vector<double>>& values, const std::vector<bool>& minimize) {
  // In lexicographic order, best first, a point can only be dominated by points before it,
  // and if one of those dominates it, so does one already on the front (domination is
  // transitive): each point is compared with the front so far, not with every other point
  // (100,000 rows: O(n log n + n x front) instead of O(n^2), issue 35 item 5).
  const size_t axes = minimize.size();
  auto better = [&](double a, double b, size_t k) { return minimize[k] ? a < b : a > b; };
  std::vector<size_t> order(values.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t i, size_t j) {
    for (size_t k = 0; k < axes; ++k) {
      if (better(values[i][k], values[j][k], k)) return true;
      if (better(values[j][k], values[i][k], k)) return false;
    }
    return false;
  });
  std::vector<size_t> front;
  for (size_t i : order) {
    bool dominated = false;
    for (size_t j : front) {
      bool all = true, some = false;
      for (size_t k = 0; k < axes && all; ++k) {
        all = !better(values[i][k], values[j][k], k);
        some = some || better(values[j][k], values[i][k], k);
      }
      if (all && some) {
        dominated = true;
        break;
      }
    }
    if (!dominated) front.push_back(i);
  }
  std::sort(front.begin(), front.end());  // input order
  return front;
}

std::vector<ParetoAxis> parse_pareto_axes(const std::string& spec, const Experiment& e) {
  std::vector<ParetoAxis> axes;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    if (comma == std::string::npos) comma = spec.size();
    std::string item = spec.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) continue;
    ParetoAxis a;
    const auto colon = item.rfind(':');
    if (colon != std::string::npos) {
      const std::string goal = item.substr(colon + 1);
      if (goal != "min" && goal != "max") throw InputError("--pareto: goal must be min or max, got '" + goal + "'");
      a.minimize = goal == "min";
      item = item.substr(0, colon);
    }
    const bool known = std::any_of(e.metrics.begin(), e.metrics.end(), [&](const auto& m) { return m.name == item; }) ||
                       std::find(e.param_keys.begin(), e.param_keys.end(), item) != e.param_keys.end();
    if (!known) throw InputError("--pareto: '" + item + "' is neither a metric nor a parameter of experiment " + e.name);
    a.name = item;
    axes.push_back(a);
  }
  if (axes.size() < 2) throw InputError("--pareto: give at least two axes, e.g. summary.latency_s:min,sram_bytes:min");
  return axes;
}

std::string summarize(const Experiment& e, const std::vector<Row>& rows, const std::vector<ParetoAxis>& axes) {
  // Hash sets: 100,000 ids of 16 hex digits (issue 35 item 5: --summarize in under 2 s).
  std::unordered_set<std::string> ids(e.points.size());
  for (const auto& p : e.points) ids.insert(p.id);
  size_t ok = 0, failed = 0, stale = 0;
  std::unordered_set<std::string> have(rows.size());
  for (const auto& r : rows) {
    if (!ids.count(r.point)) {
      ++stale;
      continue;
    }
    have.insert(r.point);
    (r.ok ? ok : failed) += 1;
  }
  const size_t pending = e.points.size() - have.size();
  std::string out = "# Sweep " + e.name + "\n\n";
  out += std::to_string(e.points.size()) + " points: " + std::to_string(ok) + " ok, " + std::to_string(failed) +
         " failed, " + std::to_string(pending) + " not run yet";
  if (stale) out += " (and " + std::to_string(stale) + " rows of points no longer in the experiment, ignored)";
  out += ".\n\n";

  std::string axes_text;
  for (const auto& a : axes) axes_text += (axes_text.empty() ? "" : ", ") + a.name + " (" + (a.minimize ? "min" : "max") + ")";
  out += "Pareto front over " + axes_text + ", per workload and batch.\n";

  // Groups in expansion order of their first point.
  std::map<std::string, size_t> order;
  for (const auto& p : e.points) order.emplace(p.workload + "\x1f" + std::to_string(p.batch), order.size());
  std::map<size_t, std::vector<const Row*>> groups;
  std::map<size_t, std::string> titles;
  for (const auto& r : rows) {
    if (!r.ok || !ids.count(r.point)) continue;
    const auto it = order.find(r.workload + "\x1f" + std::to_string(r.batch));
    if (it == order.end()) continue;
    groups[it->second].push_back(&r);
    titles[it->second] = r.workload + ", batch " + std::to_string(r.batch);
  }
  for (auto& [g, members] : groups) {
    std::sort(members.begin(), members.end(), [](const Row* a, const Row* b) { return a->index < b->index; });
    std::vector<std::vector<double>> values;
    std::vector<const Row*> usable;
    for (const Row* r : members) {
      std::vector<double> v;
      for (const auto& a : axes) {
        auto x = axis_value(*r, a.name);
        auto n = x ? x->number() : std::nullopt;
        if (!n) break;
        v.push_back(*n);
      }
      if (v.size() != axes.size()) continue;
      values.push_back(std::move(v));
      usable.push_back(r);
    }
    std::vector<bool> minimize;
    for (const auto& a : axes) minimize.push_back(a.minimize);
    std::vector<size_t> front = pareto_front(values, minimize);
    std::stable_sort(front.begin(), front.end(), [&](size_t a, size_t b) {
      return minimize[0] ? values[a][0] < values[b][0] : values[a][0] > values[b][0];
    });
    out += "\n## " + titles[g] + ": " + std::to_string(front.size()) + " of " + std::to_string(usable.size()) +
           " ok points on the front\n\n";
    // Show the swept parameters that vary within the group (derived ones follow from them), then the axes.
    std::vector<std::string> shown;
    for (const auto& k : e.param_keys) {
      if (std::any_of(axes.begin(), axes.end(), [&](const auto& a) { return a.name == k; })) continue;
      if (std::any_of(e.derived.begin(), e.derived.end(), [&](const Derived& d) { return d.key == k; })) continue;
      std::set<std::string> distinct;
      for (const Row* r : usable) {
        distinct.insert(axis_value(*r, k).value_or(Value::null()).json().dump());
        if (distinct.size() > 1) break;
      }
      if (distinct.size() > 1) shown.push_back(k);
    }
    out += "| point |";
    for (const auto& k : shown) out += " " + k + " |";
    for (const auto& a : axes) out += " " + a.name + " |";
    out += "\n|---|";
    for (size_t k = 0; k < shown.size() + axes.size(); ++k) out += "---|";
    out += "\n";
    for (size_t i : front) {
      const Row& r = *usable[i];
      out += "| " + r.point + " |";
      for (const auto& k : shown) out += " " + cell(axis_value(r, k).value_or(Value::null())) + " |";
      for (const auto& a : axes) out += " " + cell(*axis_value(r, a.name)) + " |";
      out += "\n";
    }
  }
  if (groups.empty()) out += "\nNo ok points yet.\n";

  if (failed) {
    std::map<std::string, std::pair<size_t, std::string>> by_error;  // first line of error -> (count, example point)
    for (const auto& r : rows) {
      if (r.ok || !ids.count(r.point)) continue;
      std::string first = r.error.substr(0, r.error.find('\n'));
      // Paths name the point (points/<id>/config.yaml): group on the message with the id masked.
      for (size_t at = first.find(r.point); at != std::string::npos; at = first.find(r.point, at + 4)) {
        first.replace(at, r.point.size(), "<id>");
      }
      auto& slot = by_error[first];
      if (slot.first++ == 0) slot.second = r.point;
    }
    out += "\n## Failed points\n\n| count | example point | error |\n|---|---|---|\n";
    for (const auto& [err, info] : by_error) {
      std::string text = err.substr(0, 240);
      for (char& c : text) {
        if (c == '|') c = '/';
      }
      out += "| " + std::to_string(info.first) + " | " + info.second + " | " + text + " |\n";
    }
  }
  return out;
}

}  // namespace tessera::sweep
