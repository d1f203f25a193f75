#include "sim/cli/sweep_point.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iostream>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/common/atomic_file.h"
#include "sim/common/error.h"
#include "sim/common/exit_code.h"
#include "sim/common/yaml_reader.h"
#include "sim/compiler/config_keys.h"
#include "sim/precision/precision.h"
#include "sim/report/report.h"
#include "sim/run/pipeline.h"

namespace tessera::cli {
namespace {

// The point's `tessera run` command line (runner.cpp builds it) as a request. nullopt for an
// option this runner does not handle (extra_run_arguments such as --baseline): `tessera run`
// itself runs that point.
struct PointRequest {
  run::CompileRequest inputs;
  std::string out_dir;
};
std::optional<PointRequest> parse_point_args(const std::vector<std::string>& args) {
  PointRequest r;
  for (size_t i = 2; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (flag == "-q") continue;
    if (i + 1 >= args.size()) return std::nullopt;
    const std::string& value = args[++i];
    if (flag == "--arch") r.inputs.arch = value;
    else if (flag == "--workload") r.inputs.workload = value;
    else if (flag == "--batch") r.inputs.batch = std::stoll(value);
    else if (flag == "--out") r.out_dir = value;
    else if (flag == "--precision") r.inputs.precision = value;
    else if (flag == "--input-shape") r.inputs.input_shapes.push_back(value);
    else if (flag == "--input-value") r.inputs.input_values.push_back(value);
    else if (flag == "--batch-axis") r.inputs.batch_axes.push_back(value);
    else return std::nullopt;
  }
  // What `tessera run`'s option checks would refuse is left to it, with its own message.
  std::error_code ec;
  if (r.inputs.batch < 1 || r.inputs.batch > (1 << 24) || !std::filesystem::is_regular_file(r.inputs.workload, ec)) {
    return std::nullopt;
  }
  return r;
}

// Compiled programs of this process, by sharing key: the workload and its bindings, the
// batch, the precision policy and the point's values of the keys the compiler reads
// (config_keys.h). The other keys come from the experiment's base config, the same for
// every point of the sweep. Few are kept: points that share a program are mostly neighbours
// in the expansion order, and a smaller sweep process forks faster.
class ProgramCache {
 public:
  static constexpr size_t kKept = 4;
  const run::CompiledRun* find(const std::string& key) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->first == key) {
        entries_.splice(entries_.begin(), entries_, it);
        return &entries_.front().second;
      }
    }
    return nullptr;
  }
  void add(std::string key, run::CompiledRun compiled) {
    entries_.emplace_front(std::move(key), std::move(compiled));
    if (entries_.size() > kKept) entries_.pop_back();
  }

 private:
  std::list<std::pair<std::string, run::CompiledRun>> entries_;
};

size_t g_programs_compiled = 0;

ProgramCache& programs() {
  static ProgramCache cache;
  return cache;
}

// A policy with an sqnr rule measures layers on the architecture (run::apply_precision),
// reading keys beyond config_keys.h: its points compile each for themselves.
bool policy_reads_only_compiler_keys(const std::string& precision) {
  static std::map<std::string, bool> known;
  auto it = known.find(precision);
  if (it == known.end()) {
    // No --precision: the workload's own declared dtypes, a fact of the workload alone.
    bool ok = precision.empty();
    try {
      if (!ok) ok = !precision::parse_policy(precision).sqnr_below_db.has_value();
    } catch (const std::exception&) {
    }
    it = known.emplace(precision, ok).first;
  }
  return it->second;
}

std::string sharing_key(const sweep::PointJob& job, const PointRequest& r) {
  if (!job.share_programs || !policy_reads_only_compiler_keys(r.inputs.precision)) return "";
  std::string key = r.inputs.workload + '\n' + std::to_string(r.inputs.batch) + '\n' + r.inputs.precision + '\n';
  for (const auto* list : {&r.inputs.input_shapes, &r.inputs.input_values, &r.inputs.batch_axes}) {
    for (const auto& b : *list) key += b + '\x1f';
    key += '\n';
  }
  for (const auto& [k, v] : job.experiment.params(job.point)) {
    if (!sweep::is_run_option_key(k) && compiler::compiler_reads_config_key(k)) key += k + '=' + v.json().dump() + '\n';
  }
  return key;
}

ArchConfig point_arch(const sweep::PointJob& job) {
  // As load_arch_config(points/<id>/config.yaml) reads it: same text, same name in messages.
  ArchConfig arch = parse_arch_config(YamlNode::load_string(job.experiment.config_yaml(job.point), job.config_path));
  arch.source = job.config_path;
  return arch;
}

void prepare(const sweep::PointJob& job) {
  const auto r = parse_point_args(job.args);
  if (!r) return;
  run::preload_workload(r->inputs.workload, {r->inputs.input_shapes, r->inputs.input_values, r->inputs.batch_axes});
  const std::string key = sharing_key(job, *r);
  if (key.empty() || programs().find(key) != nullptr) return;
  // A point whose compile fails is not kept: its child compiles again and reports the error.
  programs().add(key, run::compile(r->inputs, point_arch(job)));
  ++g_programs_compiled;
}

// The parts of report.json the experiment's metrics read: the first key of each metric's path
// and of each name a computed metric reads. A key that is no part (a path the metric check
// let through) builds the whole report, so that the row's error names the report's keys.
report::ReportParts parts_read(const sweep::Experiment& e) {
  report::ReportParts parts{false, false, false, false, false, false, false};
  bool whole = false;
  auto read = [&](const std::string& path) {
    const size_t dot = path.find('.');
    const std::string key = path.substr(0, dot);
    if (key == "arch") parts.arch = true;
    else if (key == "workload") parts.workload = true;
    else if (key == "summary") {
      // The run is simulated without the cycle breakdown when no summary key read needs it
      // (issue 35: ~4 % of a point).
      parts.summary = true;
      const std::string sub = dot == std::string::npos ? "" : path.substr(dot + 1, path.find('.', dot + 1) - dot - 1);
      if (report::summary_key_reads_cycle_breakdown(sub)) parts.cycle_breakdown = true;
    }
    else if (key == "layers") parts.layers = true;
    else if (key == "roofline") parts.roofline = true;
    else if (key == "table3") parts.table3 = true;
    else if (key != "tessera_report_version" && key != "baselines") whole = true;
  };
  for (const auto& m : e.metrics) {
    if (m.expr.empty()) {
      read(m.path);
    } else {
      for (const auto& name : m.expr.names()) read(name);
    }
  }
  return whole ? report::ReportParts{} : parts;
}

std::optional<int> run_point(const sweep::PointJob& job, nlohmann::ordered_json& report) {
  const auto r = parse_point_args(job.args);
  if (!r) return std::nullopt;
  return exit_code_of([&] {
    const ArchConfig arch = point_arch(job);
    const std::string key = sharing_key(job, *r);
    const run::CompiledRun* shared = key.empty() ? nullptr : programs().find(key);
    std::optional<run::CompiledRun> own;
    if (shared == nullptr) own = run::compile(r->inputs, arch);
    const run::CompiledRun& compiled = shared ? *shared : *own;
    // The report names the policy that ran (the workload's own when no --precision was given),
    // as `tessera run` does.
    // Without reports kept, only the row leaves the child: the parts of the report its metrics
    // read are built, not the per-layer tables (issue 35: ~2 ms of a point's CPU).
    const report::ReportParts parts = job.keep_reports ? report::ReportParts{} : parts_read(job.experiment);
    report = run::simulate_report(arch, compiled.graph, compiled.program, compiled.precision.name, parts);
    if (job.keep_reports) {
      const auto outputs = report::report_files(r->out_dir, report, compiled.precision.label);
      run::refuse_overwriting_inputs(outputs, r->inputs);
      write_files_atomically(outputs);
    }
    return 0;
  });
}

}  // namespace

const sweep::InProcessRunner& sweep_point_runner() {
  static const sweep::InProcessRunner runner{prepare, run_point, [] { return g_programs_compiled; }};
  return runner;
}

}  // namespace tessera::cli
