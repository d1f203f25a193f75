#include "sim/sweep/metric_check.h"

#include <algorithm>

#include "sim/common/error.h"
#include "sim/sweep/experiment.h"
#include "sim/sweep/results.h"
#include "sim/sweep/runner.h"

namespace tessera::sweep {

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    out.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) return out;
    start = dot + 1;
  }
}

// layers.3.latency_s -> layers.#.latency_s: the schema writes list indices as "#".
std::string schema_form(const std::string& path) {
  std::string out;
  for (const auto& c : components(path)) {
    const bool index = !c.empty() && std::all_of(c.begin(), c.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    out += (out.empty() ? "" : ".") + (index ? std::string("#") : c);
  }
  return out;
}

bool known_path(const std::string& path, const std::vector<std::string>& known) {
  const std::string form = schema_form(path);
  for (const auto& k : known) {
    if (k == form) return true;
    if (k.size() > 2 && k.compare(k.size() - 2, 2, ".*") == 0) {
      const std::string prefix = k.substr(0, k.size() - 1);  // "baselines."
      if (form.compare(0, prefix.size(), prefix) == 0) return true;
    }
  }
  return false;
}

}  // namespace

std::vector<std::string> closest_paths(const std::string& path, const std::vector<std::string>& known, size_t count) {
  const std::string form = schema_form(path);
  std::vector<std::pair<size_t, std::string>> scored;
  for (const auto& k : known) scored.emplace_back(edit_distance(form, k), k);
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < count; ++i) out.push_back(scored[i].second);
  return out;
}

void check_metric_paths(const Experiment& e, const std::vector<std::string>& known) {
  for (const auto& m : e.metrics) {
    std::vector<std::string> paths;
    if (m.expr.empty()) {
      paths.push_back(m.path);
    } else {
      paths = m.expr.names();
    }
    for (const auto& path : paths) {
      if (known_path(path, known)) continue;
      std::string near;
      for (const auto& c : closest_paths(path, known, 3)) near += (near.empty() ? "" : ", ") + c;
      throw InputError(e.file.string() + ": metric '" + m.name + "': report.json has no '" + path +
                       "'; closest: " + near + " (list indices are written as numbers: layers.0.latency_s)");
    }
  }
}

void FailureTally::add(const Row& row) {
  if (row.ok) return;
  ++failed_;
  // The same error at different points differs only by the point's id (its directory).
  std::string error = row.error;
  for (size_t at = error.find(row.point); !row.point.empty() && at != std::string::npos; at = error.find(row.point, at)) {
    error.replace(at, row.point.size(), "<point>");
  }
  if (counts_[error]++ == 0) order_.push_back(error);
}

std::string FailureTally::summary(const std::string& sweep_name, size_t points, int exit_code) const {
  if (failed_ == 0) return "";
  std::string out = "sweep " + sweep_name + ": " + std::to_string(failed_) + " of " + std::to_string(points) +
                    " points failed (exit " + std::to_string(exit_code) + "); " + std::to_string(order_.size()) +
                    " distinct error(s), each in full in results.jsonl:\n";
  for (const auto& error : order_) {
    std::string indented;
    for (char ch : error) indented += ch == '\n' ? std::string("\n      ") : std::string(1, ch);
    while (!indented.empty() && (indented.back() == ' ' || indented.back() == '\n')) indented.pop_back();
    out += "  " + std::to_string(counts_.at(error)) + " x " + indented + "\n";
  }
  return out;
}

int sweep_exit_code(size_t failed, size_t environment_failed) {
  if (environment_failed > 0) return kExitEnvironmentFailures;
  return failed > 0 ? kExitPointFailures : 0;
}

}  // namespace tessera::sweep
