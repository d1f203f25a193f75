#pragma once
// Experiment files (experiments/*.yaml, docs/experiments.md) -> a deterministic list of
// design points. Each point is (workload, batch, parameter values); its id is a hash of
// exactly those, so it is stable across runs, runners and experiment edits that keep it.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/sweep/expr.h"
#include "sim/sweep/value.h"

namespace tessera {
class YamlNode;
}

namespace tessera::sweep {

using Params = std::vector<std::pair<std::string, Value>>;  // in Experiment::param_keys order

// Parameter keys that are `tessera run` options rather than config keys (docs/experiments.md):
// `precision` is --precision (a policy name or a policy YAML relative to the experiment file),
// `input_shape.NAME` is --input-shape NAME=... (an ONNX input or named dimension).
inline constexpr const char* kPrecisionKey = "precision";
inline constexpr const char* kInputShapePrefix = "input_shape.";
inline constexpr const char* kDefaultPrecision = "int8";  // tessera run's default
bool is_run_option_key(const std::string& key);

struct WorkloadSpec {
  std::string name;             // results' "workload" (default: file stem)
  std::filesystem::path path;   // absolute
  std::vector<int64_t> batches; // at least one (default: the workload's own batch)
  bool onnx = false;            // an ONNX model (*.onnx): takes input shapes
  // Fixed --input-shape bindings of this workload (NAME -> "d0,d1,..."), in file order;
  // a swept input_shape.NAME replaces the binding of the same NAME.
  std::vector<std::pair<std::string, std::string>> input_shapes;
  // --input-value NAME=v0,... and --batch-axis NAME=AXIS bindings of this workload, in file order.
  std::vector<std::pair<std::string, std::string>> input_values, batch_axes;
};

struct MetricSpec {
  std::string name;  // CSV column and key in "metrics"
  std::string path;  // report.json path (dotted; numbers index lists) when expr is empty
  Expr expr;         // computed metric: names are report.json paths
};

struct ParetoAxis {
  std::string name;  // a metric name or a parameter key
  bool minimize = true;
};

struct Point {
  size_t index = 0;    // position in the deterministic expansion
  std::string id;      // 16 hex digits, FNV-1a 64 of the canonical (workload, batch, params)
  std::string workload;
  uint32_t workload_index = 0;  // in Experiment::workloads (its path is there, not copied per point)
  int64_t batch = 0;
  // Its parameter values (every key of Experiment::param_keys; null where neither set nor in
  // the base) are Experiment::params(point): stored once per distinct value, not per point,
  // because a sweep process forks once per point and a fork costs in proportion to the
  // process's memory (issue 35: 100,000 points held 72 MB as key-value lists).
};

struct ExpansionStats {
  uint64_t candidates = 0;  // before constraints and de-duplication
  uint64_t pruned = 0;      // removed by constraints
  uint64_t duplicates = 0;  // identical (workload, batch, params) seen earlier
};

// One product of axes: grid keys, zip groups, an explicit point list, random samples.
struct ParamBlock {
  // Each axis is a list of partial assignments; the block is their cartesian product.
  std::vector<std::vector<Params>> axes;
};

struct Derived {
  std::string key;
  Template value;
  std::string location;  // file:line:col for messages
};

struct Constraint {
  Expr expr;
  std::string location;
};

struct Experiment {
  std::string name;
  std::string description;
  std::filesystem::path file;         // the experiment file
  std::filesystem::path dir;          // its directory (absolute): precision policy files are relative to it
  std::filesystem::path base_config;  // absolute
  std::string base_text;              // the base config file's contents (its own `base:` unresolved)
  YAML::Node base_tree;               // parsed base config, composed (any `base:` chain merged in)
  std::vector<WorkloadSpec> workloads;
  std::vector<std::string> param_keys;  // swept keys in order of appearance, then derived keys
  std::vector<Derived> derived;
  std::vector<Constraint> constraints;
  std::vector<MetricSpec> metrics;
  std::vector<ParetoAxis> pareto;
  std::string out;            // default output directory ("" = out/sweeps/<name>)
  bool keep_reports = false;  // keep each point's config.yaml, report.json, layers.csv, summary.md
  double timeout_s = 0;       // per point; 0 = none
  // `tessera run` options every point gets after its own (not from the experiment file: set by
  // a program that drives the runner, e.g. `tessera serve` passing --baseline).
  std::vector<std::string> extra_run_arguments;

  std::vector<ParamBlock> blocks;
  std::vector<Point> points;
  ExpansionStats stats;
  std::vector<std::vector<Value>> param_values;  // per param key: its distinct values
  std::vector<uint32_t> point_values;  // point i's value of key k: param_values[k][point_values[i * keys + k]]

  // The point's values of param_keys, in that order.
  Params params(const Point& p) const;
  const Value& param(const Point& p, size_t key) const {
    return param_values[key][point_values[p.index * param_keys.size() + key]];
  }

  // The point's full config as YAML text: the base tree with the point's values set.
  std::string config_yaml(const Point& p) const;
  // The value of a dotted key in the base config (nullopt if absent or not a scalar);
  // for `precision`, tessera run's default.
  std::optional<Value> base_value(const std::string& key) const;
  // The point's `tessera run` options beyond --arch/--workload/--batch/--out:
  // --precision and --input-shape, from the run-option parameters and the workload's bindings
  // (--input-shape, --input-value, --batch-axis),
  // then extra_run_arguments.
  std::vector<std::string> run_arguments(const Point& p) const;
};

// At most this many design points (after constraints and de-duplication) in one experiment:
// each costs about 0.5 KB in every sweep process (docs/reliability.md, D17).
inline constexpr uint64_t kMaxDesignPoints = 1'000'000;

struct LoadOptions {
  // What `${build}` in a path means: the build directory, where the build generates the
  // ONNX workloads (<build>/workloads/onnx). The CLI passes the running executable's
  // directory; empty: `${build}` is an error.
  std::filesystem::path build_dir;
  uint64_t max_points = kMaxDesignPoints;  // tests lower it
};

// Loads, validates and expands; throws InputError ("file:line:col: key: what is wrong").
Experiment load_experiment(const std::filesystem::path& path, const LoadOptions& options = {});
// `dir` resolves relative paths (base, workloads, precision policy files) in the document.
Experiment parse_experiment(const YamlNode& root, const std::filesystem::path& dir, const LoadOptions& options = {});

// The canonical text a point id hashes, and the id itself.
std::string canonical_point_text(const std::string& workload, int64_t batch, const Params& params);
std::string point_id(const std::string& workload, int64_t batch, const Params& params);
uint64_t point_hash(const std::string& workload, int64_t batch, const Params& params);  // the id as a number
std::string hash_text(uint64_t hash);  // 16 hex digits

// Sets a dotted key in a YAML tree (creating maps on the way; numeric components index lists).
// Throws std::invalid_argument naming the component that is not a mapping.
void set_dotted(YAML::Node& root, const std::string& key, const Value& v);
// Emits a YAML tree as block-style text; strings that were quoted stay quoted.
std::string emit_yaml(const YAML::Node& root, const std::string& header_comment = "");

// Deterministic random numbers for `random:` samples (splitmix64; the same on every platform).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  double uniform();                         // [0, 1)
  int64_t uniform_int(int64_t lo, int64_t hi);  // [lo, hi]
 private:
  uint64_t state_;
};

}  // namespace tessera::sweep
