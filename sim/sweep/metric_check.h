#pragma once
// Sweeps fail loudly (issue 33 item 3): metric paths checked before the first point runs,
// and what a sweep whose points failed says and returns.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace tessera::sweep {

struct Experiment;
struct Row;

// Checks every metric's report.json path (and every name a computed metric reads) against
// `known`, the report's paths (report::report_paths: list indices as "#", open subtrees as
// "PREFIX.*"). Throws InputError naming the experiment file, the metric, the path and the
// closest known paths.
void check_metric_paths(const Experiment& e, const std::vector<std::string>& known);

// The closest of `known` to `path` (edit distance over the whole dotted path), best first.
std::vector<std::string> closest_paths(const std::string& path, const std::vector<std::string>& known, size_t count);

// Exit code of a sweep that finished with points that failed for their own reasons (a
// config the array rejects, a metric the report lacks): their rows are in results.jsonl.
// (kExitEnvironmentFailures, 3, wins when some failures are the environment's.)
inline constexpr int kExitPointFailures = 4;

// The distinct errors of the failed points, with how often each occurred.
class FailureTally {
 public:
  void add(const Row& row);
  size_t failed() const { return failed_; }
  // "sweep NAME: 3 of 12 points failed (exit 4); 2 distinct errors:\n  2 x <error>\n..." with
  // each error in full (its lines indented); empty when none failed.
  std::string summary(const std::string& sweep_name, size_t points, int exit_code) const;

 private:
  size_t failed_ = 0;
  std::map<std::string, size_t> counts_;
  std::vector<std::string> order_;  // first occurrence first
};

// 0, kExitEnvironmentFailures or kExitPointFailures.
int sweep_exit_code(size_t failed, size_t environment_failed);

}  // namespace tessera::sweep
