// Experiment -> design points: the odometer over each parameter block, derived keys,
// constraints, checks of keys and values the base config lacks, deduplication by point id;
// point identity, the seeded random numbers of random: blocks, a point's config and its
// `tessera run` arguments.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "sim/common/fnv_hash.h"
#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/config/arch_config.h"
#include "sim/sweep/experiment.h"
#include "sim/sweep/experiment_internal.h"

namespace fs = std::filesystem;

namespace tessera::sweep {
namespace {

using namespace detail;

// Above this many candidate points an experiment is almost certainly a mistake (and would
// not fit in memory comfortably); split it or use random samples.
constexpr uint64_t kMaxCandidates = 5'000'000;
// Each kept point costs memory (its id, parameter keys and values: about 0.5 KB with three
// parameters, docs/reliability.md), in every MPI rank: a bound with a clear message instead of
// gigabytes. Pruned candidates cost nothing to keep.
// (LoadOptions::max_points, default kMaxDesignPoints in experiment.h.)

Params merge(const std::vector<const Params*>& parts) {
  Params out;
  for (const Params* p : parts) {
    for (const auto& kv : *p) out.push_back(kv);
  }
  return out;
}

std::string describe(const Params& params) {
  std::string s;
  for (const auto& [k, v] : params) {
    if (v.is_null()) continue;
    if (!s.empty()) s += ", ";
    s += k + "=" + v.text();
  }
  return s.empty() ? "(base config)" : s;
}

// Loader (experiment.cpp) has read and checked the file; this turns it into points.
class Expander {
 public:
  Expander(const YamlNode& root, const LoadOptions& opts, std::map<std::string, std::string>& key_location,
           const std::vector<YamlNode>& constraint_nodes)
      : root_(root), opts_(opts), key_location_(key_location), constraint_nodes_(constraint_nodes) {}

 private:
  // String values come from this file (checked), the base config or templates over them.
  // They must be UTF-8 (they go into JSON), and a precision policy file must lie inside the
  // experiment's directory: tessera run quotes a bad policy file's first line in its error,
  // which the sweep stores in results.jsonl, so a value such as ../../etc/shadow would copy
  // another user's data into the results.
  void check_string_value(const Experiment& e, const std::string& key, const std::string& text) {
    if (!checked_values_.insert(key + '\n' + text).second) return;
    const std::string where = key_location_.count(key) ? key_location_[key] + ": " : root_.location() + ": ";
    if (const std::string bad = utf8_problem(text); !bad.empty()) {
      throw InputError(where + key + ": the value is not valid UTF-8 (" + bad + ")");
    }
    if (key == kPrecisionKey && is_policy_path(text)) {
      std::string problem;
      const fs::path dir = resolve(fs::path(), e.dir.string(), &problem);
      const fs::path file = resolve(e.dir, text, &problem);  // symbolic links resolved
      if (!problem.empty()) {
        throw InputError(where + key + ": '" + text + "': cannot resolve the path (" + problem + ")");
      }
      const fs::path rel = file.lexically_relative(dir);
      if (fs::path(text).is_absolute() || rel.empty() || *rel.begin() == "..") {
        throw InputError(where + key + ": '" + text + "' names a policy file outside the experiment's directory " +
                         dir.string() + " (resolved: " + file.string() +
                         "); precision policy files of an experiment must lie inside its directory");
      }
    }
  }

  // Keys absent from the base config must still be config keys: try each once.
  void check_new_key(const Experiment& e, const std::string& key, const Value& v) {
    if (is_run_option_key(key) || checked_.count(key)) return;
    checked_.insert(key);
    if (e.base_value(key) || find_path(e.base_tree, key)) return;
    YAML::Node tree = YAML::Clone(e.base_tree);
    try {
      set_dotted(tree, key, v);
    } catch (const std::invalid_argument& err) {
      throw InputError(key_location_[key] + ": " + key + ": " + err.what());
    }
    try {
      parse_arch_config(YamlNode::load_string(emit_yaml(tree), "(base config + " + key + ")"));
    } catch (const InputError& err) {
      const std::string msg = err.what();
      if (msg.find("unknown key") != std::string::npos) {
        throw InputError(key_location_[key] + ": " + key + ": not a key of the architecture config (" + msg + ")");
      }
    }
  }

 public:
  void expand(Experiment& e) {
    if (e.blocks.empty()) e.blocks.push_back(ParamBlock{});
    // Keys the base sets to a mapping or list cannot take a single value.
    for (const auto& key : e.param_keys) {
      if (auto n = find_path(e.base_tree, key)) {
        if (n->IsMap() || n->IsSequence()) {
          throw InputError(key_location_[key] + ": " + key + ": is a " + (n->IsMap() ? "mapping" : "list") +
                           " in the base config; a parameter sets a single value (name a key inside it)");
        }
      }
    }
    uint64_t per_workload = 0;
    for (const auto& b : e.blocks) {
      uint64_t n = 1;
      for (const auto& axis : b.axes) {
        if (n > kMaxCandidates) break;
        n *= axis.size();
      }
      per_workload += n;
    }
    uint64_t batches = 0;
    for (const auto& w : e.workloads) batches += w.batches.size();
    if (per_workload > kMaxCandidates || per_workload * batches > kMaxCandidates) {
      root_.fail("the experiment expands to more than " + std::to_string(kMaxCandidates) +
                 " candidate points; split it or sample with random:");
    }
    if (e.constraints.empty() && per_workload * batches > opts_.max_points) too_many_points(per_workload * batches);
    std::vector<std::string> swept;
    for (const auto& k : e.param_keys) {
      if (std::none_of(e.derived.begin(), e.derived.end(), [&](const Derived& d) { return d.key == k; })) swept.push_back(k);
    }
    std::unordered_set<uint64_t> seen;  // point hashes: 8 bytes each instead of a string
    std::vector<Value> base_values;
    for (const auto& k : swept) base_values.push_back(e.base_value(k).value_or(Value::null()));

    for (const auto& w : e.workloads) {
      for (int64_t batch : w.batches) {
        for (const auto& block : e.blocks) {
          std::vector<size_t> pos(block.axes.size(), 0);
          while (true) {
            std::vector<const Params*> parts;
            for (size_t a = 0; a < block.axes.size(); ++a) parts.push_back(&block.axes[a][pos[a]]);
            add_candidate(e, w, batch, swept, base_values, merge(parts), seen);
            // Odometer: the last axis varies fastest.
            bool done = true;
            for (size_t a = block.axes.size(); a-- > 0;) {
              if (++pos[a] < block.axes[a].size()) {
                done = false;
                break;
              }
              pos[a] = 0;
            }
            if (done) break;
          }
        }
      }
    }
  }

 private:
  [[noreturn]] void too_many_points(uint64_t n) const {
    const uint64_t cap = opts_.max_points;
    root_.fail("the experiment has " +
               (n > cap + 1 ? std::to_string(n) + " design points (no constraints prune them)"
                            : "more than " + std::to_string(cap) + " design points after constraints") +
               "; at most " + std::to_string(cap) +
               " fit in one sweep (about 0.5 KB of memory each in every process): split it into several experiments, "
               "prune with constraints: or sample with random:");
  }

  void add_candidate(Experiment& e, const WorkloadSpec& w, int64_t batch, const std::vector<std::string>& swept,
                     const std::vector<Value>& base_values, const Params& assignment,
                     std::unordered_set<uint64_t>& seen) {
    ++e.stats.candidates;
    Params params;
    params.reserve(e.param_keys.size());
    for (size_t k = 0; k < swept.size(); ++k) {
      auto it = std::find_if(assignment.begin(), assignment.end(), [&](const auto& kv) { return kv.first == swept[k]; });
      params.emplace_back(swept[k], it != assignment.end() ? it->second : base_values[k]);
    }
    size_t derived_done = 0;
    const Lookup lookup = [&](const std::string& name) -> std::optional<Value> {
      if (name == "batch") return Value::of_int(batch);
      if (name == "workload") return Value::of_string(w.name);
      for (const auto& [k, v] : params) {
        if (k == name) return v;
      }
      for (size_t i = derived_done; i < e.derived.size(); ++i) {
        if (e.derived[i].key == name) {
          throw ExprError("'" + name + "' is derived further down; derived keys may use only those above them");
        }
      }
      return e.base_value(name);
    };
    for (const auto& d : e.derived) {
      try {
        params.emplace_back(d.key, d.value.eval(lookup));
      } catch (const ExprError& err) {
        throw InputError(d.location + ": derived " + d.key + ": " + err.what() + " (point: " + w.name + ", batch " +
                         std::to_string(batch) + ", " + describe(params) + ")");
      }
      ++derived_done;
    }
    for (size_t c = 0; c < e.constraints.size(); ++c) {
      Value ok;
      try {
        ok = e.constraints[c].expr.eval(lookup);
      } catch (const ExprError& err) {
        constraint_nodes_[c].fail(std::string("constraint: ") + err.what() + " (point: " + describe(params) + ")");
      }
      if (ok.kind != Value::Kind::kBool) {
        constraint_nodes_[c].fail("constraint must be true or false, got " + ok.kind_name() + " '" + ok.text() + "'");
      }
      if (!ok.b) {
        ++e.stats.pruned;
        return;
      }
    }
    for (const auto& [k, v] : params) {
      if (v.is_null()) continue;
      if (v.kind == Value::Kind::kString) check_string_value(e, k, v.s);
      check_new_key(e, k, v);
      if (!w.onnx && starts_with(k, kInputShapePrefix)) {
        // Not a per-point failure: every point of this workload would fail the same way.
        throw InputError(key_location_[k] + ": " + k + ": input shapes bind the inputs of ONNX models (*.onnx); workload '" +
                         w.name + "' is a YAML graph (sweep input shapes in an experiment of ONNX workloads)");
      }
    }
    const uint64_t hash = point_hash(w.name, batch, params);
    if (!seen.insert(hash).second) {
      ++e.stats.duplicates;
      return;
    }
    if (e.points.size() >= opts_.max_points) too_many_points(opts_.max_points + 1);
    Point p;
    p.id = hash_text(hash);
    p.index = e.points.size();
    p.workload = w.name;
    p.workload_index = static_cast<uint32_t>(&w - e.workloads.data());
    p.batch = batch;
    for (size_t k = 0; k < params.size(); ++k) {
      if (params.size() != e.param_keys.size() || params[k].first != e.param_keys[k]) {
        throw std::logic_error("a point's parameters are not the experiment's keys in order");
      }
    }
    if (value_index_.size() < params.size()) value_index_.resize(params.size());
    e.param_values.resize(params.size());
    for (size_t k = 0; k < params.size(); ++k) {
      // Each distinct value once (Experiment::point_values).
      const Value& v = params[k].second;
      std::string text(1, static_cast<char>('0' + static_cast<int>(v.kind)));
      if (v.kind == Value::Kind::kInt) text += std::to_string(v.i);
      if (v.kind == Value::Kind::kReal) text.append(reinterpret_cast<const char*>(&v.d), sizeof v.d);
      if (v.kind == Value::Kind::kBool) text += v.b ? '1' : '0';
      if (v.kind == Value::Kind::kString) text += v.s;
      auto [it, added] = value_index_[k].emplace(text, static_cast<uint32_t>(e.param_values[k].size()));
      if (added) e.param_values[k].push_back(v);
      e.point_values.push_back(it->second);
    }
    e.points.push_back(std::move(p));
  }

  std::vector<std::unordered_map<std::string, uint32_t>> value_index_;  // per key: value text -> param_values index

  const YamlNode& root_;
  const LoadOptions& opts_;
  std::map<std::string, std::string>& key_location_;
  const std::vector<YamlNode>& constraint_nodes_;
  std::unordered_set<std::string> checked_;
  std::unordered_set<std::string> checked_values_;
};

}  // namespace

namespace detail {

void expand_points(Experiment& e, const YamlNode& root, const LoadOptions& opts,
                   std::map<std::string, std::string>& key_location, const std::vector<YamlNode>& constraint_nodes) {
  Expander(root, opts, key_location, constraint_nodes).expand(e);
}

}  // namespace detail

uint64_t Rng::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

int64_t Rng::uniform_int(int64_t lo, int64_t hi) {
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;
  if (span == 0) return static_cast<int64_t>(next());  // the full 64-bit range
  const uint64_t limit = UINT64_MAX - UINT64_MAX % span;  // reject to avoid modulo bias
  uint64_t x;
  do {
    x = next();
  } while (x >= limit);
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + x % span);
}

std::string canonical_point_text(const std::string& workload, int64_t batch, const Params& params) {
  std::vector<std::pair<std::string, std::string>> sorted;
  // Strings are checked for UTF-8 on load; `replace` only keeps a bug from becoming an exception.
  for (const auto& [k, v] : params) sorted.emplace_back(k, v.json().dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
  std::sort(sorted.begin(), sorted.end());
  std::string text = "workload=" + workload + "\nbatch=" + std::to_string(batch) + "\n";
  for (const auto& [k, v] : sorted) text += k + "=" + v + "\n";
  return text;
}

uint64_t point_hash(const std::string& workload, int64_t batch, const Params& params) {
  const std::string text = canonical_point_text(workload, batch, params);
  Fnv1a64 f;
  f.add(text.data(), text.size());
  return f.value;
}

std::string hash_text(uint64_t hash) { return Fnv1a64::hex16(hash); }

std::string point_id(const std::string& workload, int64_t batch, const Params& params) {
  return hash_text(point_hash(workload, batch, params));
}

bool is_run_option_key(const std::string& key) { return key == kPrecisionKey || starts_with(key, kInputShapePrefix); }

std::optional<Value> Experiment::base_value(const std::string& key) const {
  if (key == kPrecisionKey) return Value::of_string(kDefaultPrecision);
  if (is_run_option_key(key)) return std::nullopt;  // input shapes: the workload's own bindings
  auto n = find_path(base_tree, key);
  if (!n || !(n->IsScalar() || n->IsNull())) return std::nullopt;
  return value_from_yaml(*n);
}

Params Experiment::params(const Point& p) const {
  Params out;
  out.reserve(param_keys.size());
  for (size_t k = 0; k < param_keys.size(); ++k) out.emplace_back(param_keys[k], param(p, k));
  return out;
}

std::string Experiment::config_yaml(const Point& p) const {
  YAML::Node tree = YAML::Clone(base_tree);
  Params config_params;
  for (const auto& [k, v] : params(p)) {
    if (is_run_option_key(k)) continue;  // tessera run options (run_arguments), not config keys
    config_params.emplace_back(k, v);
    if (!v.is_null()) set_dotted(tree, k, v);
  }
  std::string run_options;
  for (const auto& a : run_arguments(p)) run_options += " " + a;
  return emit_yaml(tree, "Generated by tessera sweep (experiment " + name + ", point " + p.id + ", " + p.workload +
                             " batch " + std::to_string(p.batch) + ")\nfrom " + base_config.string() +
                             " with: " + describe(config_params) +
                             (run_options.empty() ? "" : "\nrun with:" + run_options));
}

std::vector<std::string> Experiment::run_arguments(const Point& p) const {
  std::vector<std::string> args;
  const WorkloadSpec* w = nullptr;
  for (const auto& spec : workloads) {
    if (spec.name == p.workload) w = &spec;
  }
  std::vector<std::pair<std::string, std::string>> shapes;
  if (w) shapes = w->input_shapes;
  for (const auto& [k, v] : params(p)) {
    if (v.is_null()) continue;
    if (k == kPrecisionKey) {
      // Invalid values are passed on as written: tessera run rejects them, and the point
      // is recorded as failed with its message.
      const std::string spec = v.text();
      args.push_back("--precision");
      args.push_back(v.kind == Value::Kind::kString && is_policy_path(spec) ? resolve(dir, spec).string() : spec);
    } else if (starts_with(k, kInputShapePrefix)) {
      const std::string name = input_shape_name(k);
      auto it = std::find_if(shapes.begin(), shapes.end(), [&](const auto& b) { return b.first == name; });
      if (it != shapes.end()) {
        it->second = v.text();
      } else {
        shapes.emplace_back(name, v.text());
      }
    }
  }
  for (const auto& [name, dims] : shapes) {
    args.push_back("--input-shape");
    args.push_back(name + "=" + dims);
  }
  if (w) {
    for (const auto& [name, values] : w->input_values) {
      args.push_back("--input-value");
      args.push_back(name + "=" + values);
    }
    for (const auto& [name, axis] : w->batch_axes) {
      args.push_back("--batch-axis");
      args.push_back(name + "=" + axis);
    }
  }
  args.insert(args.end(), extra_run_arguments.begin(), extra_run_arguments.end());
  return args;
}

}  // namespace tessera::sweep
