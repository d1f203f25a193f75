#include "sim/precision/precision.h"

#include <filesystem>
#include <map>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/graph/ops/registry.h"

namespace tessera::precision {
namespace {

// A dtype of a policy file: any operand dtype; int4 only for weights (docs/precision.md).
Dtype dtype_of(const YamlNode& node, bool weights) {
  const std::string s = node.as_string();
  const auto t = parse_operand_dtype(s);
  if (!t) node.fail("'" + s + "' is not a dtype; allowed: " + dtype_names_text(operand_dtypes(true)));
  if (!weights && dtype_weights_only(*t)) {
    node.fail("'" + s + "' is for weights only; activations may be " + dtype_names_text(operand_dtypes(false)));
  }
  return *t;
}

LayerPrecision pair_of(const YamlNode& node) {
  node.expect_keys({"activations", "weights"});
  return LayerPrecision{dtype_of(node.at("activations"), false), dtype_of(node.at("weights"), true)};
}

// The one-word policies: every dtype that activations may hold, as activations and weights.
std::string policy_names_text() { return dtype_names_text(operand_dtypes(false)) + ", first-last-int16"; }

LayerPrecision uniform(Dtype t) { return LayerPrecision{t, t}; }

int width(Dtype t) { return static_cast<int>(dtype_bits(t)); }

Dtype wider(Dtype a, Dtype b) { return width(b) > width(a) ? b : a; }

}  // namespace

bool glob_match(const std::string& pattern, const std::string& text) {
  // Iterative glob with backtracking on the last '*'.
  size_t p = 0, t = 0, star = std::string::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '[') {
      const size_t close = pattern.find(']', p + 1);
      if (close != std::string::npos) {
        const std::string set = pattern.substr(p + 1, close - p - 1);
        if (set.find(text[t]) != std::string::npos) {
          p = close + 1;
          ++t;
          continue;
        }
      }
    } else if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
      continue;
    }
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
      continue;
    }
    if (star != std::string::npos) {
      p = star + 1;
      t = ++mark;
      continue;
    }
    return false;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

PrecisionPolicy parse_policy(const std::string& spec) {
  PrecisionPolicy p;
  p.name = spec;
  for (Dtype t : operand_dtypes(false)) {
    if (spec == dtype_name(t)) {
      p.defaults = uniform(t);
      return p;
    }
  }
  if (const auto t = parse_operand_dtype(spec); t && dtype_weights_only(*t)) {
    throw InputError("--precision '" + spec + "': " + spec +
                     " is for weights only, and a one-word policy puts it on activations too; give a policy file with "
                     "weights: " + spec + " (docs/precision.md). One-word policies: " + policy_names_text());
  }
  if (spec == "first-last-int16") {
    p.first_last = uniform(Dtype::kInt16);
    return p;
  }
  std::error_code ec;
  if (!std::filesystem::exists(spec, ec)) {
    // A name the system cannot examine (longer than NAME_MAX, a loop of links) says why.
    throw InputError("--precision '" + spec +
                     "': not a policy name (" + policy_names_text() + ") nor an existing policy file" +
                     (ec && ec != std::errc::no_such_file_or_directory ? " (" + ec.message() + ")" : ""));
  }
  const YamlNode root = YamlNode::load_file(spec);
  root.expect_keys({"name", "default", "first_last", "layers", "sqnr_below_db", "sqnr_fallback"});
  p.name = root.string_or("name", std::filesystem::path(spec).stem().string());
  if (auto d = root.get("default")) p.defaults = pair_of(*d);
  if (auto fl = root.get("first_last")) p.first_last = pair_of(*fl);
  if (auto ls = root.get("layers")) {
    for (const auto& rule : ls->elements()) {
      rule.expect_keys({"match", "activations", "weights"});
      LayerRule r;
      r.match = rule.at("match").as_string();
      if (auto a = rule.get("activations")) r.activations = dtype_of(*a, false);
      if (auto w = rule.get("weights")) r.weights = dtype_of(*w, true);
      if (!r.activations && !r.weights) rule.fail("a layer rule needs activations, weights or both");
      p.layers.push_back(r);
    }
  }
  if (auto s = root.get("sqnr_below_db")) p.sqnr_below_db = s->as_double(0, 200);
  if (auto f = root.get("sqnr_fallback")) p.sqnr_fallback = pair_of(*f);
  return p;
}

std::vector<std::optional<LayerPrecision>> assign(const graph::Graph& g, const PrecisionPolicy& policy,
                                                  const std::vector<std::string>& low_sqnr_layers) {
  std::vector<std::optional<LayerPrecision>> out(g.layers.size());
  int first = -1, last = -1;
  for (size_t i = 0; i < g.layers.size(); ++i) {
    if (!graph::is_matrix_op(g.layers[i].op)) continue;
    if (first < 0) first = static_cast<int>(i);
    last = static_cast<int>(i);
  }
  std::vector<bool> rule_used(policy.layers.size(), false);
  const auto quantized = graph::model_quantization(g);
  for (size_t i = 0; i < g.layers.size(); ++i) {
    const graph::Layer& layer = g.layers[i];
    if (!graph::is_matrix_op(layer.op)) continue;
    LayerPrecision lp = policy.from_workload
                            ? LayerPrecision{g.tensors[static_cast<size_t>(layer.inputs.at(0))].dtype, layer.weight_dtype}
                            : policy.defaults;
    if (policy.first_last && (static_cast<int>(i) == first || static_cast<int>(i) == last)) lp = *policy.first_last;
    // A quantized model's own codes win over the defaults; explicit rules and the sqnr rule over them.
    if (const auto& a = quantized[static_cast<size_t>(layer.inputs.at(0))]) lp.activations = *a;
    if (layer.quantized_weights) lp.weights = *layer.quantized_weights;
    for (size_t r = 0; r < policy.layers.size(); ++r) {
      const LayerRule& rule = policy.layers[r];
      if (!glob_match(rule.match, layer.name)) continue;
      rule_used[r] = true;
      if (rule.activations) lp.activations = *rule.activations;
      if (rule.weights) lp.weights = *rule.weights;
    }
    for (const auto& name : low_sqnr_layers) {
      if (name == layer.name) lp = policy.sqnr_fallback.value_or(uniform(Dtype::kInt16));
    }
    out[i] = lp;
  }
  for (size_t r = 0; r < policy.layers.size(); ++r) {
    if (!rule_used[r]) {
      throw InputError("precision policy '" + policy.name + "': layer rule '" + policy.layers[r].match +
                       "' matches no matrix layer of workload '" + g.name + "'");
    }
  }
  return out;
}

void apply(graph::Graph& g, const std::vector<std::optional<LayerPrecision>>& assignment, Dtype default_activations) {
  // Required width of each tensor: the widest activation operand among its
  // matrix consumers, and (walking backwards) whatever its vector consumers'
  // outputs need. Tensors feeding nothing keep the default.
  // Needs are widths: whether 8-bit codes are unsigned is the model's to say (a tensor it
  // quantizes keeps its own type when no reader needs it wider).
  auto width_class = [](Dtype t) { return t == Dtype::kUint8 ? Dtype::kInt8 : t; };
  std::vector<std::optional<Dtype>> need(g.tensors.size());
  for (size_t i = g.layers.size(); i-- > 0;) {
    const graph::Layer& layer = g.layers[i];
    std::optional<Dtype> want;
    if (assignment[i]) {
      want = width_class(assignment[i]->activations);
    } else if (!graph::is_matrix_op(layer.op) && !graph::op_def(layer.op).quantizes) {
      // (A quantize layer's input is the model's values, not its codes: the policy's.)
      want = need[static_cast<size_t>(layer.output)];
    }
    if (!want) continue;
    for (int in : layer.inputs) {
      auto& n = need[static_cast<size_t>(in)];
      n = n ? wider(*n, *want) : *want;
    }
  }
  const auto quantized = graph::model_quantization(g);
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const Dtype plain = need[t].value_or(width_class(default_activations));
    g.tensors[t].dtype = quantized[t] ? wider(*quantized[t], plain) : need[t].value_or(default_activations);
  }
  for (size_t i = 0; i < g.layers.size(); ++i) {
    if (assignment[i]) g.layers[i].weight_dtype = assignment[i]->weights;
  }
}

namespace {

std::string mode_name(const LayerPrecision& lp) {
  return std::string(dtype_name(lp.activations)) + "x" + std::string(dtype_name(lp.weights));
}

// "int8xint8 on 5 matrix layers" or "int8xint8 (3), bf16xbf16 (2)".
std::string modes_text(const std::vector<std::optional<LayerPrecision>>& assignment) {
  std::map<std::string, int> count;
  std::vector<std::string> order;
  for (const auto& lp : assignment) {
    if (!lp) continue;
    if (count[mode_name(*lp)]++ == 0) order.push_back(mode_name(*lp));
  }
  if (order.size() == 1) return order[0] + " on " + std::to_string(count[order[0]]) + " matrix layer(s)";
  std::string out;
  for (const auto& m : order) out += (out.empty() ? "" : ", ") + m + " (" + std::to_string(count[m]) + ")";
  return out;
}

// Same width and kind: uint8 codes run in the int8 mode (sim/common/dtype.h).
bool same_precision(Dtype a, Dtype b) {
  return dtype_bytes(a) == dtype_bytes(b) && dtype_is_float(a) == dtype_is_float(b);
}

}  // namespace

std::string ChosenPolicy::label() const {
  switch (source) {
    case PolicySource::kOption: return name + " (--precision)";
    case PolicySource::kWorkload: return name + " (from the workload)";
    case PolicySource::kDefault: break;
  }
  return name + " (default: the workload declares no dtypes)";
}

ChosenPolicy choose_policy(const graph::Graph& g, const std::string& option) {
  ChosenPolicy c;
  if (!option.empty()) {
    c.policy = parse_policy(option);
    c.source = PolicySource::kOption;
    c.name = option;  // as reports have always named it (a policy file by its path)
    return c;
  }
  if (!g.declared_dtype) {
    c.name = c.policy.name;
    return c;
  }
  c.source = PolicySource::kWorkload;
  c.policy.from_workload = true;
  c.policy.defaults = uniform(*g.declared_dtype);
  // One dtype throughout is named by it (as --precision would be); anything else is mixed.
  std::optional<Dtype> only;
  bool mixed = false;
  for (const auto& lp : assign(g, c.policy)) {
    if (!lp) continue;
    for (Dtype t : {lp->activations, lp->weights}) {
      if (!only) only = t;
      mixed = mixed || *only != t;
    }
  }
  c.policy.name = mixed ? "mixed" : std::string(dtype_name(only.value_or(*g.declared_dtype)));
  c.name = c.policy.name;
  return c;
}

std::string override_note(const graph::Graph& g, const ChosenPolicy& chosen) {
  if (chosen.source != PolicySource::kOption) return "";
  const auto ran = assign(g, chosen.policy);
  std::string note;
  if (g.declared_dtype) {
    PrecisionPolicy declared;
    declared.from_workload = true;
    const auto own = assign(g, declared);
    int changed = 0;
    for (size_t i = 0; i < own.size(); ++i) {
      if (own[i] && ran[i] && mode_name(*own[i]) != mode_name(*ran[i])) ++changed;
    }
    if (changed > 0) {
      note = "note: --precision " + chosen.name + " overrides the dtypes workload '" + g.name + "' declares (" +
             modes_text(own) + "): " + std::to_string(changed) + " matrix layer(s) run at " + modes_text(ran) + " instead";
    }
  }
  // A quantized model's codes win over the policy's default (docs/precision.md): say which
  // layers the option did not change, where it would have.
  const auto quantized = graph::model_quantization(g);
  std::vector<std::optional<LayerPrecision>> kept(g.layers.size());
  int kept_count = 0;
  for (size_t i = 0; i < g.layers.size(); ++i) {
    const graph::Layer& l = g.layers[i];
    if (!ran[i] || (!quantized[static_cast<size_t>(l.inputs.at(0))] && !l.quantized_weights)) continue;
    if (!same_precision(ran[i]->activations, chosen.policy.defaults.activations) ||
        !same_precision(ran[i]->weights, chosen.policy.defaults.weights)) {
      kept[i] = ran[i];
      ++kept_count;
    }
  }
  if (kept_count > 0) {
    if (!note.empty()) note += "\n";
    note += "note: --precision " + chosen.name + ": " + std::to_string(kept_count) + " matrix layer(s) of '" + g.name +
            "' keep the model's own quantized types (" + modes_text(kept) +
            "); the policy sets the layers the model leaves in float (docs/precision.md)";
  }
  return note;
}

}  // namespace tessera::precision
