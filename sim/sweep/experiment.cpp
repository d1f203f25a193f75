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
#include "sim/common/yaml_reader.h"
#include "sim/config/arch_config.h"
#include "sim/graph/graph.h"
#include "sim/graph/onnx_importer.h"

namespace fs = std::filesystem;

namespace tessera::sweep {
namespace {

// Above this many candidate points an experiment is almost certainly a mistake (and would
// not fit in memory comfortably); split it or use random samples.
constexpr uint64_t kMaxCandidates = 5'000'000;
// Each kept point costs memory (its id, parameter keys and values: about 0.5 KB with three
// parameters, docs/reliability.md), in every MPI rank: a bound with a clear message instead of
// gigabytes. Pruned candidates cost nothing to keep.
// (LoadOptions::max_points, default kMaxDesignPoints in experiment.h.)

std::vector<std::string> split_dotted(const std::string& key) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : key) {
    if (c == '.') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// The NAME of an input_shape.NAME key ("" for other keys).
std::string input_shape_name(const std::string& key) {
  return starts_with(key, kInputShapePrefix) ? key.substr(std::string(kInputShapePrefix).size()) : "";
}

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

// A --precision value that names a policy file rather than a built-in policy.
bool is_policy_path(const std::string& spec) {
  const std::string ext = fs::path(spec).extension().string();
  return spec.find('/') != std::string::npos || ext == ".yaml" || ext == ".yml";
}

std::string read_file(const fs::path& path, const YamlNode& at) {
  std::ifstream in(path, std::ios::binary);
  if (!in) at.fail("cannot read '" + path.string() + "'");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path resolve(const fs::path& dir, const std::string& p) {
  fs::path path(p);
  if (path.is_relative()) path = dir / path;
  return fs::weakly_canonical(path);
}

constexpr const char* kBuildVar = "${build}";

// A path of the experiment file: relative to its directory, or under `${build}`.
fs::path resolve_path(const fs::path& dir, const LoadOptions& opts, const YamlNode& at) {
  const std::string text = at.as_string();
  if (starts_with(text, kBuildVar)) {
    if (opts.build_dir.empty()) at.fail("${build} (the build directory) is not known here");
    std::string rest = text.substr(std::string(kBuildVar).size());
    while (!rest.empty() && rest.front() == '/') rest.erase(0, 1);
    return fs::weakly_canonical(opts.build_dir / rest);
  }
  if (text.find("${") != std::string::npos) {
    at.fail("'" + text + "': the only variable in paths is ${build} (the build directory), at the start");
  }
  return resolve(dir, text);
}

void emit_node(YAML::Emitter& out, const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map:
      out << YAML::BeginMap;
      for (const auto& kv : n) {
        out << YAML::Key;
        emit_node(out, kv.first);
        out << YAML::Value;
        emit_node(out, kv.second);
      }
      out << YAML::EndMap;
      break;
    case YAML::NodeType::Sequence:
      out << YAML::BeginSeq;
      for (const auto& e : n) emit_node(out, e);
      out << YAML::EndSeq;
      break;
    case YAML::NodeType::Scalar:
      if (n.Tag() == "!") {
        out << YAML::DoubleQuoted << n.Scalar();
      } else {
        out << n.Scalar();
      }
      break;
    default:
      out << YAML::Null;
      break;
  }
}

void set_path(YAML::Node node, const std::vector<std::string>& comps, size_t k, const YAML::Node& value,
              const std::string& key) {
  const std::string& c = comps[k];
  const bool last = k + 1 == comps.size();
  std::string so_far;
  for (size_t i = 0; i <= k; ++i) so_far += (i ? "." : "") + comps[i];
  if (node.IsSequence()) {
    if (!all_digits(c) || std::stoul(c) >= node.size()) {
      throw std::invalid_argument(so_far + ": the base config has a list of " + std::to_string(node.size()) +
                                  " entries here; use an index 0.." + std::to_string(node.size() - 1));
    }
    const size_t idx = std::stoul(c);
    if (last) {
      node[idx] = value;
    } else {
      set_path(node[idx], comps, k + 1, value, key);
    }
    return;
  }
  if (node.IsDefined() && !node.IsNull() && !node.IsMap()) {
    throw std::invalid_argument(so_far.substr(0, so_far.rfind('.')) + " is a single value in the base config, not a mapping");
  }
  if (last) {
    node[c] = value;
    return;
  }
  YAML::Node child = node[c];
  if (!child.IsDefined() || child.IsNull()) node[c] = YAML::Node(YAML::NodeType::Map);
  set_path(node[c], comps, k + 1, value, key);
}

std::optional<YAML::Node> find_path(const YAML::Node& root, const std::string& key) {
  // Walk through const references: a non-const operator[] would add the missing keys.
  YAML::Node cur;
  cur.reset(root);
  for (const auto& c : split_dotted(key)) {
    const YAML::Node& n = cur;
    if (!n.IsMap() && !(n.IsSequence() && all_digits(c) && std::stoul(c) < n.size())) return std::nullopt;
    const YAML::Node child = n.IsMap() ? n[c] : n[std::stoul(c)];
    if (!child.IsDefined()) return std::nullopt;  // (reset() would throw on a missing node)
    cur.reset(child);
  }
  return cur;
}

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
    e.keep_reports = root_.bool_or("keep_reports", true);
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
    expand(e);
    return e;
  }

 private:
  void load_base(Experiment& e) {
    const YamlNode base = root_.at("base");
    e.base_config = resolve_path(dir_, opts_, base);
    if (!fs::is_regular_file(e.base_config)) base.fail("no such config file '" + e.base_config.string() + "'");
    e.base_text = read_file(e.base_config, base);
    // The base must itself be a valid config: its errors are the user's to fix first.
    const YamlNode cfg = YamlNode::load_file(e.base_config);
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
        item.expect_keys({"path", "name", "batch", "input_shape", "input_shapes"});
        path_text = item.at("path").as_string();
        w.path = resolve_path(dir_, opts_, item.at("path"));
        if (auto n = item.get("name")) w.name = n->as_string();
        batch = item.get("batch");
      }
      w.onnx = graph::is_onnx_path(w.path);
      if (!fs::is_regular_file(w.path)) {
        std::string hint;
        if (w.onnx && (starts_with(path_text, kBuildVar) || w.path.parent_path().filename() == "onnx")) {
          // The ONNX workload library is generated by the build, not checked in (docs/workloads.md).
          hint = "; the ONNX workloads are generated by the build: run `cmake --build <build dir>` (target "
                 "onnx_workloads, needs python3-onnx) first";
        }
        item.fail("no such workload file '" + w.path.string() + "'" + hint);
      }
      if (!item.is_scalar()) load_input_shapes(item, w);
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
      const fs::path dir = fs::weakly_canonical(e.dir);
      const fs::path file = resolve(e.dir, text);  // symbolic links resolved
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
    p.params = std::move(params);
    e.points.push_back(std::move(p));
  }

  const YamlNode& root_;
  fs::path dir_;
  LoadOptions opts_;
  std::map<std::string, std::string> key_location_;
  std::vector<YamlNode> constraint_nodes_;
  std::set<std::string> checked_;
  std::unordered_set<std::string> checked_values_;
};

}  // namespace

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
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64
  for (unsigned char c : canonical_point_text(workload, batch, params)) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string hash_text(uint64_t hash) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(hash));
  return buf;
}

std::string point_id(const std::string& workload, int64_t batch, const Params& params) {
  return hash_text(point_hash(workload, batch, params));
}

void set_dotted(YAML::Node& root, const std::string& key, const Value& v) {
  set_path(root, split_dotted(key), 0, value_to_yaml(v), key);
}

std::string emit_yaml(const YAML::Node& root, const std::string& header_comment) {
  YAML::Emitter out;
  out.SetIndent(2);
  emit_node(out, root);
  std::string text;
  if (!header_comment.empty()) {
    std::istringstream lines(header_comment);
    for (std::string line; std::getline(lines, line);) text += "# " + line + "\n";
  }
  return text + out.c_str() + "\n";
}

bool is_run_option_key(const std::string& key) { return key == kPrecisionKey || starts_with(key, kInputShapePrefix); }

std::optional<Value> Experiment::base_value(const std::string& key) const {
  if (key == kPrecisionKey) return Value::of_string(kDefaultPrecision);
  if (is_run_option_key(key)) return std::nullopt;  // input shapes: the workload's own bindings
  auto n = find_path(base_tree, key);
  if (!n || !(n->IsScalar() || n->IsNull())) return std::nullopt;
  return value_from_yaml(*n);
}

std::string Experiment::config_yaml(const Point& p) const {
  YAML::Node tree = YAML::Clone(base_tree);
  Params config_params;
  for (const auto& [k, v] : p.params) {
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
  for (const auto& [k, v] : p.params) {
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
  return args;
}

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
