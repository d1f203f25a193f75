// sim/compiler/config_keys.h lists the config keys the compiler reads; `tessera sweep` shares
// one program between points that differ only in the others (issue 35 item 3). This test
// keeps the list from going stale: for every key of every shipped config (configs/*.yaml)
// that the list does not cover, it changes the key to other valid values and requires the
// very same program (every instruction, every layer fact, the totals; and a compile that
// fails fails for both) for several workloads and precisions. A key the compiler reads and
// the list lacks fails here by name. (A key only a default sets, absent from every config,
// cannot be changed here: give new keys a value in a shipped config.)
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/compiler/compiler.h"
#include "sim/compiler/config_keys.h"
#include "sim/config/arch_config.h"
#include "sim/graph/graph.h"
#include "sim/precision/precision.h"

namespace fs = std::filesystem;
using namespace tessera;

namespace {

const std::string kSrc = TESSERA_SOURCE_DIR;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Scalar leaves of a YAML tree as dotted keys (list elements by index).
void leaves(const YAML::Node& n, const std::string& prefix, std::vector<std::string>& out) {
  if (n.IsMap()) {
    for (const auto& kv : n) leaves(kv.second, (prefix.empty() ? "" : prefix + ".") + kv.first.as<std::string>(), out);
  } else if (n.IsSequence()) {
    for (size_t i = 0; i < n.size(); ++i) leaves(n[i], prefix + "." + std::to_string(i), out);
  } else if (n.IsScalar()) {
    out.push_back(prefix);
  }
}

YAML::Node at_path(YAML::Node root, const std::string& key) {
  YAML::Node cur = root;
  std::stringstream parts(key);
  std::string part;
  while (std::getline(parts, part, '.')) {
    // reset, not =: assigning a yaml-cpp node handle overwrites the node it refers to.
    cur.reset(cur.IsSequence() ? cur[std::stoul(part)] : cur[part]);
  }
  return cur;
}

std::string emit(const YAML::Node& n) {
  YAML::Emitter e;
  e << n;
  return e.c_str();
}

// Other values for a scalar: numbers doubled, halved, one more or less (or 10 % either way); booleans flipped; a size
// ("24 MiB") doubled and halved; a word: the alternatives the loader's message lists.
std::vector<std::string> alternatives(const YAML::Node& root, const std::string& key, const std::string& value) {
  std::vector<std::string> out;
  if (value == "true" || value == "false") return {value == "true" ? "false" : "true"};
  char* end = nullptr;
  const double d = std::strtod(value.c_str(), &end);
  if (end != value.c_str()) {
    const std::string unit = end;
    auto text = [&](double x) {
      std::ostringstream s;
      s.precision(12);
      s << x << unit;
      return s.str();
    };
    const bool integer = unit.empty() && value.find_first_of(".eE") == std::string::npos;
    for (double x : {d * 2, integer ? std::floor(d / 2) : d / 2, d + 1, integer ? d - 1 : d * 1.1, d * 0.9}) {
      if (x != d && x > 0) out.push_back(text(x));
    }
    return out;
  }
  // A word: the loader names what it accepts ("... one of: ws, os, is").
  YAML::Node probe = YAML::Clone(root);
  at_path(probe, key) = "not-a-choice";
  try {
    parse_arch_config(YamlNode::load_string(emit(probe), "probe.yaml"));
  } catch (const InputError& e) {
    const std::string msg = e.what();
    const size_t at = msg.find("one of");
    if (at != std::string::npos) {
      std::string list = msg.substr(at + 6);
      if (!list.empty() && list[0] == ':') list.erase(0, 1);
      std::stringstream items(list);
      std::string item;
      while (std::getline(items, item, ',')) {
        while (!item.empty() && (item[0] == ' ')) item.erase(0, 1);
        while (!item.empty() && (item.back() == ' ' || item.back() == ')' || item.back() == '.')) item.pop_back();
        if (!item.empty() && item != value && item.find(' ') == std::string::npos) out.push_back(item);
      }
    }
  }
  return out;
}

// Everything of a compiled program the run and the report read.
std::string fingerprint(const graph::Graph& g, const ArchConfig& arch, int64_t batch) {
  compiler::Program p;
  try {
    p = compiler::compile(g, arch, {.batch = batch, .compact = true});
  } catch (const InputError&) {
    return "refused";  // its text names the arch: only whether it compiles must not change
  }
  std::ostringstream s;
  s << p.workload << '|' << p.arch << '|' << p.batch << '|' << p.sub_batch << '|' << p.ub_peak_bytes << '|'
    << p.host_input_bytes << '|' << p.host_output_bytes << '|' << p.weight_bytes_read << '|' << p.spill_bytes_out << '|'
    << p.spill_bytes_in << '\n';
  for (const auto& l : p.layers) {
    s << l.name << '|' << l.op << '|' << l.macs << '|' << l.weights << '|' << l.weight_bytes << '|' << dtype_name(l.a_dtype)
      << '|' << dtype_name(l.b_dtype) << '|' << l.output_shape << '|' << l.gemm_m << '|' << l.gemm_k << '|' << l.gemm_n << '|'
      << l.groups << '|' << l.mapping << '|' << l.spill_bytes_out << '|' << l.spill_bytes_in << '|' << l.row_tiles << '\n';
  }
  s << p.compact_listing();
  return s.str();
}

struct Case {
  std::string name;
  graph::Graph graph;
  int64_t batch;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const char* w : {"workloads/tpu/mlp0.yaml", "workloads/tpu/cnn0.yaml", "workloads/tpu/lstm0.yaml",
                        "workloads/bert_layer.yaml"}) {
    const graph::Graph g = graph::load_graph_yaml(kSrc + "/" + w);
    for (const char* policy : {"int8", "int16"}) {
      if (std::string(policy) == "int16" && std::string(w).find("cnn0") == std::string::npos) continue;
      const auto pol = precision::parse_policy(policy);
      graph::Graph q = g;
      precision::apply(q, precision::assign(q, pol), pol.defaults.activations);
      out.push_back({std::string(w) + " " + policy, q, 0});
    }
  }
  return out;
}

}  // namespace

TEST(CompilerConfigKeys, EntriesAreConfigKeys) {
  // A misspelt entry would cover nothing and leave the key it meant unlisted: each is a key
  // of a shipped config or one docs/configs.md names.
  const std::string doc = slurp(kSrc + "/docs/configs.md");
  std::set<std::string> keys;
  for (const auto& f : fs::directory_iterator(kSrc + "/configs")) {
    if (f.path().extension() != ".yaml") continue;
    std::vector<std::string> l;
    leaves(YAML::LoadFile(f.path().string()), "", l);
    keys.insert(l.begin(), l.end());
  }
  for (std::string_view entry : compiler::kCompilerConfigKeys) {
    const bool found = std::any_of(keys.begin(), keys.end(), [&](const std::string& k) {
      return k == entry || k.rfind(std::string(entry) + ".", 0) == 0;
    }) || doc.find("`" + std::string(entry) + "`") != std::string::npos;
    EXPECT_TRUE(found) << entry << " is in kCompilerConfigKeys but in no config under configs/ nor in docs/configs.md";
  }
  EXPECT_TRUE(compiler::compiler_reads_config_key("array.rows"));
  EXPECT_TRUE(compiler::compiler_reads_config_key("array.mac_modes.1.rate"));
  EXPECT_TRUE(compiler::compiler_reads_config_key("unified_buffer"));
  EXPECT_FALSE(compiler::compiler_reads_config_key("arrays"));
  EXPECT_FALSE(compiler::compiler_reads_config_key("clock_mhz"));
  EXPECT_FALSE(compiler::compiler_reads_config_key("weight_memory.bandwidth_gb_per_s"));
}

TEST(CompilerConfigKeys, EveryKeyNotListedLeavesTheProgramUnchanged) {
  const std::vector<Case> workloads = cases();
  size_t unchanged_keys = 0;
  std::vector<std::string> untested;
  for (const auto& f : fs::directory_iterator(kSrc + "/configs")) {
    if (f.path().extension() != ".yaml") continue;
    const std::string config = f.path().filename().string();
    // A config with `base:` is what its chain composes to.
    const YamlNode composed = YamlNode::load_composed(f.path());
    const YAML::Node root = YAML::Clone(composed.raw());
    const ArchConfig base = parse_arch_config(YamlNode::load_string(emit(root), config));
    std::vector<std::string> base_prints;
    for (const auto& c : workloads) base_prints.push_back(fingerprint(c.graph, base, c.batch));
    std::vector<std::string> keys;
    leaves(root, "", keys);
    for (const auto& key : keys) {
      if (compiler::compiler_reads_config_key(key)) continue;
      const std::string value = at_path(YAML::Clone(root), key).Scalar();
      int tried = 0;
      for (const auto& alt : alternatives(root, key, value)) {
        if (tried == 2) break;  // two other valid values a key
        YAML::Node changed = YAML::Clone(root);
        at_path(changed, key) = alt;
        ArchConfig arch;
        try {
          arch = parse_arch_config(YamlNode::load_string(emit(changed), config));
        } catch (const InputError&) {
          continue;  // not a valid config: says nothing about the compiler
        }
        ++tried;
        for (size_t w = 0; w < workloads.size(); ++w) {
          const std::string print = fingerprint(workloads[w].graph, arch, workloads[w].batch);
          EXPECT_EQ(print == base_prints[w], true)
              << "the compiler reads config key '" << key << "': on " << config << ", " << value << " -> " << alt
              << " changes the program of " << workloads[w].name
              << ". List it in kCompilerConfigKeys (sim/compiler/config_keys.h), or sweeps share a wrong program";
        }
      }
      if (tried) {
        ++unchanged_keys;
      } else {
        untested.push_back(config + ": " + key + " = " + value);
      }
    }
  }
  // The fingerprint tells programs apart: a listed key, changed, does change it.
  {
    const std::string text = slurp(kSrc + "/configs/tpu-v1.yaml");
    YAML::Node changed = YAML::Load(text);
    at_path(changed, "array.rows") = "128";
    const ArchConfig narrow = parse_arch_config(YamlNode::load_string(emit(changed), "tpu-v1.yaml"));
    const ArchConfig base = parse_arch_config(YamlNode::load_string(text, "tpu-v1.yaml"));
    EXPECT_NE(fingerprint(workloads[0].graph, narrow, 0), fingerprint(workloads[0].graph, base, 0));
  }
  // Most keys must have been exercised; those without another valid value are named.
  std::string names;
  for (const auto& u : untested) names += "\n  " + u;
  std::cout << "config keys changed: " << unchanged_keys << "; without another valid value:" << names << "\n";
  EXPECT_GT(unchanged_keys, 10 * untested.size()) << names;
}
