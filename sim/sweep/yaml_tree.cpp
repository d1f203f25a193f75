// Editing and writing YAML trees by dotted keys ("array.rows", "mac_modes.0.rate"): how a
// design point's values go into a copy of the base config.
#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "sim/sweep/experiment.h"
#include "sim/sweep/experiment_internal.h"

namespace tessera::sweep {
namespace {

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

}  // namespace

namespace detail {

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

}  // namespace detail

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

}  // namespace tessera::sweep
