#include "sim/sweep/experiment.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_set>

#include "sim/common/error.h"
#include "sim/common/text_file.h"
#include "sim/common/yaml_reader.h"
#include "sim/config/arch_config.h"
#include "sim/graph/graph.h"
#include "sim/graph/onnx_importer.h"
#include "sim/sweep/experiment_internal.h"

namespace fs = std::filesystem;

namespace tessera::sweep {

// Shared with the other experiment files (experiment_internal.h).
namespace detail {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// The NAME of an input_shape.NAME key ("" for other keys).
std::string input_shape_name(const std::string& key) {
  return starts_with(key, kInputShapePrefix) ? key.substr(std::string(kInputShapePrefix).size()) : "";
}

// A --precision value that names a policy file rather than a built-in policy.
bool is_policy_path(const std::string& spec) {
  const std::string ext = fs::path(spec).extension().string();
  return spec.find('/') != std::string::npos || ext == ".yaml" || ext == ".yml";
}

fs::path resolve(const fs::path& dir, const std::string& p, std::string* problem) {
  fs::path path(p);
  if (path.is_relative()) path = dir / path;
  std::error_code ec;
  fs::path resolved = fs::weakly_canonical(path, ec);
  if (!ec) return resolved;
  if (problem) *problem = ec.message();
  return path.lexically_normal();
}
}  // namespace detail

namespace {

using namespace detail;

// Keys are walked and rebuilt one component at a time (set_dotted and the YAML emitter
// recurse per component): bounded like expressions, far above any real key.
constexpr size_t kMaxKeyComponents = 16;
constexpr size_t kMaxKeyChars = 256;

// "" for a key of a sane size, else what is wrong (the key itself may be huge: shown cut).
std::string key_size_problem(const std::string& key) {
  const size_t parts = static_cast<size_t>(std::count(key.begin(), key.end(), '.')) + 1;
  if (parts <= kMaxKeyComponents && key.size() <= kMaxKeyChars) return "";
  return "'" + (key.size() > 40 ? key.substr(0, 40) + "...'" : key + "'") + " (" + std::to_string(key.size()) +
         " characters, " + std::to_string(parts) + " components) is not a key: keys have at most " +
         std::to_string(kMaxKeyComponents) + " components and " + std::to_string(kMaxKeyChars) + " characters";
}

bool valid_key(const std::string& key) {
  if (key.empty() || key.front() == '.' || key.back() == '.' || key.find("..") != std::string::npos) return false;
  if (starts_with(key, kInputShapePrefix)) {
    // ONNX input names may hold characters config keys do not (input:0, past.0.key).
    const std::string name = input_shape_name(key);
    return !name.empty() && std::none_of(name.begin(), name.end(), [](char c) {
      return std::isspace(static_cast<unsigned char>(c)) || c == '=' || c == ',';
    });
  }
  return std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  });
}


// The base config's text, bounded as every YAML file is (sim/common/text_file.h).
std::string read_file(const fs::path& path, const YamlNode& at) {
  try {
    return read_text_file(path, kYamlLimits);
  } catch (const InputError& e) {
    at.fail(std::string("cannot read base config: ") + e.what());
  }
}


constexpr const char* kBuildVar = "${build}";

fs::path resolved_or_fail(const fs::path& dir, const std::string& p, const YamlNode& at) {
  std::string problem;
  fs::path path = resolve(dir, p, &problem);
  if (!problem.empty()) at.fail("'" + p + "': cannot resolve the path (" + problem + ")");
  return path;
}

// A path of the experiment file: relative to its directory, or under `${build}`.
fs::path resolve_path(const fs::path& dir, const LoadOptions& opts, const YamlNode& at) {
  const std::string text = at.as_string();
  if (starts_with(text, kBuildVar)) {
    if (opts.build_dir.empty()) at.fail("${build} (the build directory) is not known here");
    std::string rest = text.substr(std::string(kBuildVar).size());
    while (!rest.empty() && rest.front() == '/') rest.erase(0, 1);
    return resolved_or_fail(opts.build_dir, rest, at);
  }
  if (text.find("${") != std::string::npos) {
    at.fail("'" + text + "': the only variable in paths is ${build} (the build directory), at the start");
  }
  return resolved_or_fail(dir, text, at);
}

// Whether `path` is a regular file; a path the system cannot examine is the key's error.
bool regular_file(const fs::path& path, const YamlNode& at) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
    at.fail("'" + path.string() + "': cannot examine the path (" + ec.message() + ")");
  }
  return fs::is_regular_file(st);
}

// Every key and scalar of the document must be UTF-8: names and values end up in point ids,
// results.jsonl and sweep.json, which are JSON. Iterative: the document may be deep.
void check_utf8(const YAML::Node& root, const std::string& file) {
  std::vector<YAML::Node> todo = {root};
  while (!todo.empty()) {
    const YAML::Node n = todo.back();
    todo.pop_back();
    auto check = [&](const YAML::Node& x) {
      const std::string problem = utf8_problem(x.Scalar());
      if (problem.empty()) return;
      const YAML::Mark m = x.Mark();
      throw InputError(file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1) +
                       ": not valid UTF-8 (" + problem + "); experiment files must be UTF-8 text");
    };
    if (n.IsScalar()) {
      check(n);
    } else if (n.IsMap()) {
      for (const auto& kv : n) {
        if (kv.first.IsScalar()) check(kv.first);
        todo.push_back(kv.first);
        todo.push_back(kv.second);
      }
    } else if (n.IsSequence()) {
      for (const auto& x : n) todo.push_back(x);
    }
  }
}

// The value of `out:` may only name a directory below the working directory: an experiment
// file (perhaps someone else's) must not send results to an arbitrary place; --out can.
bool contained_relative_path(const std::string& text) {
  const fs::path p(text);
  if (text.empty() || p.is_absolute()) return false;
  return std::none_of(p.begin(), p.end(), [](const fs::path& c) { return c == ".."; });
}

// Parses one experiment file into an Experiment; expansion follows.
class Loader {
 public:
  Loader(const YamlNode& root, const fs::path& dir, const LoadOptions& opts) : root_(root), dir_(dir), opts_(opts) {}

  Experiment load() {
    root_.expect_keys({"name", "description", "base", "workloads", "parameters", "derived", "constraints",
                       "metrics", "pareto", "out", "keep_reports", "timeout_s"});
    check_utf8(root_.raw(), root_.file());
    Experiment e;
    e.file = root_.file();
    e.dir = dir_;
    e.name = root_.string_or("name", fs::path(root_.file()).stem().string());
    if (e.name.empty()) root_.at("name").fail("must not be empty");
    if (const std::string bad = utf8_problem(e.name); !bad.empty()) {
      root_.fail("the experiment's name (the file's name without `name:`) is not valid UTF-8 (" + bad +
                 "); add a `name:`");
    }
    e.description = root_.string_or("description", "");
    e.out = root_.string_or("out", "");
    if (!e.out.empty() && !contained_relative_path(e.out)) {
      root_.at("out").fail("'" + e.out +
                           "': an experiment file may only name an output directory below the working directory "
                           "(a relative path without '..'); pass --out for any other place");
    }
    e.keep_reports = root_.bool_or("keep_reports", false);
    e.timeout_s = root_.double_or("timeout_s", 0, 0, 1e7);

    load_base(e);
    load_workloads(e);
    if (auto p = root_.get("parameters")) {
      if (p->is_sequence()) {
        const auto blocks = p->elements();
        if (blocks.empty()) p->fail("expected at least one parameter block");
        for (const auto& b : blocks) e.blocks.push_back(load_block(b, e));
      } else {
        e.blocks.push_back(load_block(*p, e));
      }
    }
    if (auto d = root_.get("derived")) load_derived(*d, e);
    if (auto c = root_.get("constraints")) {
      for (const auto& item : c->elements()) {
        Constraint k;
        k.location = item.location();
        try {
          k.expr = Expr::parse(item.as_string());
        } catch (const ExprError& err) {
          item.fail(std::string("constraint: ") + err.what());
        }
        e.constraints.push_back(std::move(k));
        constraint_nodes_.push_back(item);
      }
    }
    load_metrics(e);
    if (auto p = root_.get("pareto")) load_pareto(*p, e);
    detail::expand_points(e, root_, opts_, key_location_, constraint_nodes_);
    return e;
  }

 private:
  void load_base(Experiment& e) {
    const YamlNode base = root_.at("base");
    e.base_config = resolve_path(dir_, opts_, base);
    if (!regular_file(e.base_config, base)) base.fail("no such config file '" + e.base_config.string() + "'");
    e.base_text = read_file(e.base_config, base);
    // The base must itself be a valid config: its errors are the user's to fix first. A config
    // with `base:` is composed here, so overrides apply to the whole chain and every point's
    // config.yaml stands alone.
    const YamlNode cfg = YamlNode::load_composed(e.base_config);
    parse_arch_config(cfg);
    e.base_tree = YAML::Clone(cfg.raw());
  }

  void load_workloads(Experiment& e) {
    const YamlNode list = root_.at("workloads");
    const auto items = list.elements();
    if (items.empty()) list.fail("expected at least one workload");
    std::set<std::string> names;
    for (const auto& item : items) {
      WorkloadSpec w;
      std::optional<YamlNode> batch;
      std::string path_text;
      if (item.is_scalar()) {
        path_text = item.as_string();
        w.path = resolve_path(dir_, opts_, item);
      } else {
        item.expect_keys({"path", "name", "batch", "input_shape", "input_shapes", "input_values", "batch_axes"});
        path_text = item.at("path").as_string();
        w.path = resolve_path(dir_, opts_, item.at("path"));
        if (auto n = item.get("name")) w.name = n->as_string();
        batch = item.get("batch");
      }
      w.onnx = graph::is_onnx_path(w.path);
      if (!regular_file(w.path, item)) {
        std::string hint;
        if (w.onnx && (starts_with(path_text, kBuildVar) || w.path.parent_path().filename() == "onnx")) {
          // The ONNX workload library is generated by the build, not checked in (docs/workloads.md).
          hint = "; the ONNX workloads are generated by the build: run `cmake --build <build dir>` (target "
                 "onnx_workloads, needs python3-onnx) first";
        }
        item.fail("no such workload file '" + w.path.string() + "'" + hint);
      }
      if (!item.is_scalar()) {
        load_input_shapes(item, w);
        load_input_bindings(item, w);
      }
      if (w.name.empty()) w.name = w.path.stem().string();
      if (const std::string bad = utf8_problem(w.name); !bad.empty()) {
        item.fail("the workload's name (its file name) is not valid UTF-8 (" + bad + "); give it a `name:`");
      }
      if (!names.insert(w.name).second) {
        item.fail("workload name '" + w.name + "' is used twice; give one of them a 'name:'");
      }
      if (batch) {
        for (int64_t b : batch->as_int_list(1, 1 << 24)) {
          if (std::find(w.batches.begin(), w.batches.end(), b) != w.batches.end()) batch->fail("batch " + std::to_string(b) + " is listed twice");
          w.batches.push_back(b);
        }
        if (w.batches.empty()) batch->fail("expected at least one batch size");
      } else {
        const std::string ext = w.path.extension().string();
        if (ext != ".yaml" && ext != ".yml") {
          item.fail("give the batch size(s) of a non-YAML workload: {path: " + path_text + ", batch: [1, 8]}");
        }
        w.batches.push_back(graph::load_graph_yaml(w.path).default_batch);
      }
      e.workloads.push_back(std::move(w));
    }
  }

  // input_shape: "NAME=d0,d1,..."  (tessera run --input-shape), or
  // input_shapes: {NAME: [d0, d1, ...] | d, ...}  or  input_shapes: ["NAME=d0,d1,...", ...].
  static void load_input_shapes(const YamlNode& item, WorkloadSpec& w) {
    if (item.has("input_shape") && item.has("input_shapes")) item.fail("give input_shape (one) or input_shapes, not both");
    std::vector<std::pair<YamlNode, std::string>> bindings;  // node, "NAME=d0,d1,..."
    if (auto one = item.get("input_shape")) bindings.emplace_back(*one, one->as_string());
    if (auto many = item.get("input_shapes")) {
      if (many->is_map()) {
        for (const auto& name : many->keys()) {
          const YamlNode dims = many->at(name);
          std::string text;  // an integer or "d0,d1,..." as written; a list as its integers
          if (dims.is_sequence()) {
            for (int64_t d : dims.as_int_list(1)) text += (text.empty() ? "" : ",") + std::to_string(d);
          } else {
            text = dims.as_string();
          }
          if (text.empty()) dims.fail("expected the dimensions, e.g. [1, 128], or one value for a named dimension");
          bindings.emplace_back(dims, name + "=" + text);
        }
      } else {
        for (const auto& b : many->elements()) bindings.emplace_back(b, b.as_string());
      }
      if (bindings.empty()) many->fail("expected at least one binding, e.g. {input_ids: [1, 128]} or {sequence: 128}");
    }
    if (!bindings.empty() && !w.onnx) {
      item.fail("input shapes bind the inputs of ONNX models (*.onnx); '" + w.path.filename().string() + "' is a YAML graph");
    }
    for (const auto& [node, text] : bindings) {
      std::pair<std::string, std::vector<int64_t>> parsed;
      try {
        parsed = graph::parse_input_shape(text);
      } catch (const InputError& err) {
        std::string msg = err.what();  // "--input-shape 'x=1,a': ..." -> "'x=1,a': ..."
        if (starts_with(msg, "--input-shape ")) msg.erase(0, std::string("--input-shape ").size());
        node.fail(msg);
      }
      for (const auto& [name, dims] : w.input_shapes) {
        if (name == parsed.first) node.fail("input '" + name + "' is bound twice");
      }
      w.input_shapes.emplace_back(parsed.first, text.substr(text.find('=') + 1));
    }
  }

  // input_values: {NAME: V | [v0, v1, ...], ...}  (tessera run --input-value NAME=V) and
  // batch_axes: {NAME: AXIS, ...}  (tessera run --batch-axis NAME=AXIS).
  static void load_input_bindings(const YamlNode& item, WorkloadSpec& w) {
    for (const char* key : {"input_values", "batch_axes"}) {
      const auto map = item.get(key);
      if (!map) continue;
      const bool values = std::string(key) == "input_values";
      const std::string flag = values ? "--input-value" : "--batch-axis";
      if (!w.onnx) item.fail(std::string(key) + " bind the inputs of ONNX models (*.onnx); '" + w.path.filename().string() + "' is a YAML graph");
      if (!map->is_map() || map->keys().empty()) {
        map->fail(values ? "expected a mapping NAME: value, e.g. {sr: 16000}" : "expected a mapping NAME: axis, e.g. {state: 1}");
      }
      auto& out = values ? w.input_values : w.batch_axes;
      for (const auto& name : map->keys()) {
        const YamlNode v = map->at(name);
        std::string text;
        if (v.is_sequence() && values) {
          for (const auto& e : v.elements()) text += (text.empty() ? "" : ",") + e.as_string();
        } else {
          text = v.as_string();
        }
        try {
          if (values) graph::parse_input_value(name + "=" + text);
          else graph::parse_batch_axis(name + "=" + text);
        } catch (const InputError& err) {
          std::string msg = err.what();  // "--input-value 'sr=x': ..." -> "'sr=x': ..."
          if (starts_with(msg, flag + " ")) msg.erase(0, flag.size() + 1);
          v.fail(msg);
        }
        out.emplace_back(name, text);
      }
    }
  }

  void add_key(const std::string& key, const YamlNode& at, Experiment& e, std::set<std::string>& in_block) {
    if (starts_with(key, std::string(kPrecisionKey) + ".")) {
      at.fail("'precision' is a single value (int8, int16, fp16, bf16, first-last-int16 or a policy .yaml file), not a mapping");
    }
    if (const std::string bad = key_size_problem(key); !bad.empty()) at.fail(bad);
    if (!valid_key(key)) at.fail("'" + key + "' is not a dotted config key such as array.rows, nor precision or input_shape.NAME");
    if (key == "batch" || key == "workload") {
      at.fail("'" + key + "' is set per workload (workloads: - {path: ..., batch: [..]}), not as a parameter");
    }
    if (!in_block.insert(key).second) {
      at.fail("'" + key + "' is set twice in this parameter block (first at " + key_location_[key] + ")");
    }
    if (std::find(e.param_keys.begin(), e.param_keys.end(), key) == e.param_keys.end()) {
      e.param_keys.push_back(key);
      key_location_[key] = at.location();
    }
  }

  static Value scalar_value(const YamlNode& n) {
    if (!n.is_scalar() && !n.raw().IsNull()) n.fail("expected a single value (a number, string or boolean)");
    return value_from_yaml(n.raw());
  }

  static std::vector<Value> value_list(const YamlNode& n) {
    std::vector<Value> out;
    if (n.is_sequence()) {
      for (const auto& v : n.elements()) out.push_back(scalar_value(v));
      if (out.empty()) n.fail("expected at least one value");
    } else {
      out.push_back(scalar_value(n));
    }
    return out;
  }

  ParamBlock load_block(const YamlNode& b, Experiment& e) {
    b.expect_keys({"grid", "zip", "points", "random"});
    ParamBlock block;
    std::set<std::string> in_block;
    for (const auto& section : b.keys()) {
      const YamlNode s = b.at(section);
      if (section == "grid") {
        for (const auto& key : s.keys()) {
          const YamlNode values = s.at(key);
          add_key(key, values, e, in_block);
          std::vector<Params> axis;
          for (const auto& v : value_list(values)) axis.push_back({{key, v}});
          block.axes.push_back(std::move(axis));
        }
      } else if (section == "zip") {
        std::vector<YamlNode> groups = s.is_sequence() ? s.elements() : std::vector<YamlNode>{s};
        for (const auto& g : groups) {
          std::vector<std::pair<std::string, std::vector<Value>>> cols;
          for (const auto& key : g.keys()) {
            const YamlNode values = g.at(key);
            add_key(key, values, e, in_block);
            if (!values.is_sequence()) values.fail("a zip entry needs a list of values");
            cols.emplace_back(key, value_list(values));
            if (cols.back().second.size() != cols.front().second.size()) {
              values.fail("zip lists must have the same length: '" + cols.front().first + "' has " +
                          std::to_string(cols.front().second.size()) + " values, this one " +
                          std::to_string(cols.back().second.size()));
            }
          }
          if (cols.empty()) g.fail("expected at least one key with a list of values");
          std::vector<Params> axis;
          for (size_t i = 0; i < cols.front().second.size(); ++i) {
            Params p;
            for (const auto& [key, vals] : cols) p.emplace_back(key, vals[i]);
            axis.push_back(std::move(p));
          }
          block.axes.push_back(std::move(axis));
        }
      } else if (section == "points") {
        std::vector<Params> axis;
        std::set<std::string> keys_here;
        for (const auto& item : s.elements()) {
          if (!item.is_map()) item.fail("expected a mapping of config keys to values, e.g. {array.rows: 128}");
          Params p;
          for (const auto& key : item.keys()) {
            const YamlNode v = item.at(key);
            if (!keys_here.count(key)) {
              add_key(key, v, e, in_block);
              keys_here.insert(key);
            }
            if (std::count_if(p.begin(), p.end(), [&](const auto& kv) { return kv.first == key; })) v.fail("duplicate key");
            p.emplace_back(key, scalar_value(v));
          }
          axis.push_back(std::move(p));
        }
        if (axis.empty()) s.fail("expected at least one point");
        block.axes.push_back(std::move(axis));
      } else {  // random
        s.expect_keys({"samples", "seed", "params"});
        const int64_t samples = s.at("samples").as_int(1, 1'000'000);
        const auto seed = static_cast<uint64_t>(s.at("seed").as_int(0));
        const YamlNode params = s.at("params");
        struct Dist {
          std::string key;
          std::vector<Value> choices;
          double lo = 0, hi = 0, step = 0;
          bool ints = false, log = false, pow2 = false;
        };
        std::vector<Dist> dists;
        for (const auto& key : params.keys()) {
          const YamlNode spec = params.at(key);
          add_key(key, spec, e, in_block);
          Dist d;
          d.key = key;
          if (!spec.is_map()) spec.fail("expected {choices: [...]}, {range: [lo, hi]} or {pow2: [lo, hi]}");
          spec.expect_keys({"choices", "range", "log", "step", "pow2"});
          const int kinds = spec.has("choices") + spec.has("range") + spec.has("pow2");
          if (kinds != 1) spec.fail("give exactly one of choices, range or pow2");
          if (auto c = spec.get("choices")) {
            if (!c->is_sequence()) c->fail("expected a list of values");
            d.choices = value_list(*c);
            if (spec.has("log") || spec.has("step")) spec.fail("log and step apply to range only");
          } else {
            const YamlNode r = spec.has("range") ? spec.at("range") : spec.at("pow2");
            const auto ends = r.elements();
            if (ends.size() != 2) r.fail("expected [lo, hi]");
            const Value lo = scalar_value(ends[0]), hi = scalar_value(ends[1]);
            if (!lo.is_number() || !hi.is_number()) r.fail("expected two numbers [lo, hi]");
            d.lo = *lo.number();
            d.hi = *hi.number();
            if (!(d.lo <= d.hi)) r.fail("lo must be <= hi");
            d.ints = lo.is_int() && hi.is_int();
            if (spec.has("pow2")) {
              d.pow2 = true;
              if (!d.ints || d.lo < 1) r.fail("pow2 bounds must be integers >= 1");
              if (std::ceil(std::log2(d.lo)) > std::floor(std::log2(d.hi))) r.fail("no power of two in [lo, hi]");
              if (spec.has("log") || spec.has("step")) spec.fail("log and step apply to range only");
            } else {
              d.log = spec.bool_or("log", false);
              if (d.log && d.lo <= 0) r.fail("a log range needs lo > 0");
              if (auto st = spec.get("step")) {
                const Value sv = scalar_value(*st);
                if (!sv.is_number() || *sv.number() <= 0) st->fail("step must be a number > 0");
                if (d.log) st->fail("step and log cannot be combined");
                d.step = *sv.number();
                d.ints = d.ints && sv.is_int();
              }
            }
          }
          dists.push_back(std::move(d));
        }
        if (dists.empty()) params.fail("expected at least one parameter to sample");
        Rng rng(seed);
        std::vector<Params> axis;
        for (int64_t i = 0; i < samples; ++i) {
          Params p;
          for (const auto& d : dists) {
            Value v;
            if (!d.choices.empty()) {
              v = d.choices[rng.uniform_int(0, static_cast<int64_t>(d.choices.size()) - 1)];
            } else if (d.pow2) {
              const auto lo_e = static_cast<int64_t>(std::ceil(std::log2(d.lo)));
              const auto hi_e = static_cast<int64_t>(std::floor(std::log2(d.hi)));
              v = Value::of_int(int64_t{1} << rng.uniform_int(lo_e, hi_e));
            } else if (d.step > 0) {
              const auto n = static_cast<int64_t>(std::floor((d.hi - d.lo) / d.step + 1e-9));
              const int64_t k = rng.uniform_int(0, n);
              v = d.ints ? Value::of_int(static_cast<int64_t>(d.lo) + k * static_cast<int64_t>(d.step))
                         : Value::of_real(d.lo + static_cast<double>(k) * d.step);
            } else if (d.ints && !d.log) {
              v = Value::of_int(rng.uniform_int(static_cast<int64_t>(d.lo), static_cast<int64_t>(d.hi)));
            } else if (d.log) {
              const double x = std::exp(std::log(d.lo) + rng.uniform() * (std::log(d.hi) - std::log(d.lo)));
              v = d.ints ? Value::of_int(std::clamp(static_cast<int64_t>(std::llround(x)), static_cast<int64_t>(d.lo),
                                                    static_cast<int64_t>(d.hi)))
                         : Value::of_real(x);
            } else {
              v = Value::of_real(d.lo + rng.uniform() * (d.hi - d.lo));
            }
            p.emplace_back(d.key, v);
          }
          axis.push_back(std::move(p));
        }
        block.axes.push_back(std::move(axis));
      }
    }
    return block;
  }

  void load_derived(const YamlNode& d, Experiment& e) {
    for (const auto& key : d.keys()) {
      const YamlNode v = d.at(key);
      if (const std::string bad = key_size_problem(key); !bad.empty()) v.fail(bad);
      if (!valid_key(key)) v.fail("'" + key + "' is not a dotted config key such as array.cols, nor precision or input_shape.NAME");
      if (std::find(e.param_keys.begin(), e.param_keys.end(), key) != e.param_keys.end()) {
        v.fail("'" + key + "' is both swept (" + key_location_[key] + ") and derived");
      }
      if (!v.is_scalar()) v.fail("expected a value or a ${...} template");
      Derived x;
      x.key = key;
      x.location = v.location();
      const std::string text = v.as_string();
      try {
        if (v.raw().Tag() != "!" && text.find("${") == std::string::npos) {
          // A constant: keep the YAML type (an int stays an int).
          x.value = Template::constant(value_from_yaml(v.raw()));
        } else {
          x.value = Template::parse(text);
        }
      } catch (const ExprError& err) {
        v.fail(err.what());
      }
      e.param_keys.push_back(key);
      key_location_[key] = x.location;
      e.derived.push_back(std::move(x));
    }
  }

  void load_metrics(Experiment& e) {
    const YamlNode list = root_.at("metrics");
    const auto items = list.elements();
    if (items.empty()) list.fail("expected at least one metric (a report.json path such as summary.latency_s)");
    for (const auto& item : items) {
      MetricSpec m;
      if (item.is_scalar()) {
        m.path = item.as_string();
        m.name = m.path;
      } else {
        item.expect_keys({"name", "path", "expr"});
        m.name = item.at("name").as_string();
        if (item.has("path") == item.has("expr")) item.fail("give exactly one of path or expr");
        if (auto p = item.get("path")) m.path = p->as_string();
        if (auto x = item.get("expr")) {
          try {
            m.expr = Expr::parse(x->as_string());
          } catch (const ExprError& err) {
            x->fail(err.what());
          }
        }
      }
      if (const std::string bad = key_size_problem(m.path); !m.path.empty() && !bad.empty()) item.fail(bad);
      if (!m.path.empty() && !valid_key(m.path)) item.fail("'" + m.path + "' is not a report.json path such as summary.latency_s");
      if (m.name.empty()) item.fail("metric name must not be empty");
      for (const auto& other : e.metrics) {
        if (other.name == m.name) item.fail("metric '" + m.name + "' is listed twice");
      }
      if (std::find(e.param_keys.begin(), e.param_keys.end(), m.name) != e.param_keys.end()) {
        item.fail("'" + m.name + "' is a parameter; give the metric another name");
      }
      static const char* kReserved[] = {"point", "index", "workload", "batch", "status", "error"};
      for (const char* r : kReserved) {
        if (m.name == r) item.fail("'" + m.name + "' is a results column; give the metric another name");
      }
      e.metrics.push_back(std::move(m));
    }
  }

  void load_pareto(const YamlNode& p, Experiment& e) {
    for (const auto& item : p.elements()) {
      ParetoAxis a;
      if (item.is_scalar()) {
        std::string text = item.as_string();
        const auto colon = text.rfind(':');
        if (colon != std::string::npos) {
          const std::string goal = text.substr(colon + 1);
          if (goal != "min" && goal != "max") item.fail("goal after ':' must be min or max, got '" + goal + "'");
          a.minimize = goal == "min";
          text = text.substr(0, colon);
        }
        a.name = text;
      } else {
        item.expect_keys({"metric", "goal"});
        a.name = item.at("metric").as_string();
        a.minimize = item.string_or("goal", "min") == "min";
        if (auto g = item.get("goal")) g->as_choice({"min", "max"});
      }
      const bool known = std::any_of(e.metrics.begin(), e.metrics.end(), [&](const auto& m) { return m.name == a.name; }) ||
                         std::find(e.param_keys.begin(), e.param_keys.end(), a.name) != e.param_keys.end();
      if (!known) item.fail("'" + a.name + "' is neither a metric nor a parameter of this experiment");
      e.pareto.push_back(a);
    }
    if (e.pareto.size() == 1) p.fail("a Pareto front needs at least two axes");
  }

  const YamlNode& root_;
  fs::path dir_;
  LoadOptions opts_;
  std::map<std::string, std::string> key_location_;
  std::vector<YamlNode> constraint_nodes_;
};

}  // namespace

Experiment parse_experiment(const YamlNode& root, const fs::path& dir, const LoadOptions& options) {
  return Loader(root, dir, options).load();
}

Experiment load_experiment(const fs::path& path, const LoadOptions& options) {
  const YamlNode root = YamlNode::load_file(path);
  fs::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  return parse_experiment(root, fs::absolute(dir), options);
}

}  // namespace tessera::sweep