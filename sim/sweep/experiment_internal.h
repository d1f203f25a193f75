#pragma once
// Private to the experiment files: experiment.cpp (read and check the file),
// experiment_expansion.cpp (points) and yaml_tree.cpp (dotted-key YAML editing).
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "sim/common/yaml_reader.h"
#include "sim/sweep/experiment.h"

namespace tessera::sweep::detail {

bool starts_with(const std::string& s, const std::string& prefix);
// The NAME of an input_shape.NAME key ("" for other keys).
std::string input_shape_name(const std::string& key);
// A --precision value that names a policy file rather than a built-in policy.
bool is_policy_path(const std::string& spec);
// `p` relative to `dir`, symbolic links resolved. A path the system cannot examine (a
// component longer than NAME_MAX, a loop of links) comes back unresolved, with the reason in
// `*problem` when asked for (never an exception: the caller names the key).
std::filesystem::path resolve(const std::filesystem::path& dir, const std::string& p, std::string* problem = nullptr);
// The node at a dotted key of `root`, if there is one (nothing is added to `root`).
std::optional<YAML::Node> find_path(const YAML::Node& root, const std::string& key);

// Fills e.points (and e.stats) from the loaded experiment; `key_location` and
// `constraint_nodes` say where the file set each key and constraint, for errors.
void expand_points(Experiment& e, const YamlNode& root, const LoadOptions& opts,
                   std::map<std::string, std::string>& key_location, const std::vector<YamlNode>& constraint_nodes);

}  // namespace tessera::sweep::detail
