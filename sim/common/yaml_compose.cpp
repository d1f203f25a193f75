// Config composition: `base: <path>` plus overrides (YamlNode::load_composed, docs/configs.md
// "Composition"). The merged tree is built from the files' own nodes, so every value keeps its
// line and column, and an Origins table keeps which file of the chain wrote it.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"

namespace tessera {

namespace fs = std::filesystem;

class YamlComposer {
 public:
  struct Composed {
    YAML::Node root;
    YamlNode::Origins origins;
  };

  // One file of the chain and everything below it. `chain` holds the files that named their way
  // here (top file first): (as written, canonical).
  static Composed compose(const fs::path& path, std::vector<std::pair<std::string, fs::path>>& chain,
                          std::vector<fs::path>* files) {
    const YamlNode own = YamlNode::load_file(path);
    if (files) files->push_back(path);
    Composed out{own.raw(), {{"", own.file_}}};
    if (!own.is_map() || !own.has("base")) return out;

    // A repeated `base:` would be dropped silently by the lookup (yaml-cpp sees the first).
    int bases = 0;
    for (auto kv : own.raw()) {
      if (kv.first.IsScalar() && kv.first.Scalar() == "base" && ++bases == 2) {
        YamlNode(kv.first, own.file_, "base").fail("duplicate key: a config names at most one base");
      }
    }
    const YamlNode base = own.at("base");
    const std::string text = base.as_string();
    if (text.empty()) base.fail("expected the path of a config file to start from");
    const fs::path base_path = fs::path(text).is_absolute() ? fs::path(text) : path.parent_path() / text;
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(base_path, ec);
    for (const auto& [shown, seen] : chain) {
      if (!ec && seen == canonical) base.fail("config bases form a cycle: " + listed(chain) + " -> " + base_path.string());
    }
    if (chain.size() >= static_cast<size_t>(YamlNode::kMaxBaseChain)) {
      base.fail("a chain of config bases may hold at most " + std::to_string(YamlNode::kMaxBaseChain) +
                " files: " + listed(chain) + " -> " + base_path.string());
    }
    if (!fs::exists(base_path, ec)) base.fail("no such config file '" + base_path.string() + "'");
    if (!fs::is_regular_file(base_path, ec)) base.fail("'" + base_path.string() + "' is not a file");

    chain.emplace_back(base_path.string(), canonical);
    Composed below = compose(base_path, chain, files);
    chain.pop_back();
    if (!below.root.IsMap()) {
      YamlNode(below.root, below.origins.at(""), "").fail("a base config must be a mapping of keys");
    }
    YamlNode::Origins origins;
    origins[""] = own.file_;
    out.root = merge(below.root, own.raw(), "", below.origins, own.file_, origins, true);
    out.origins = std::move(origins);
    return out;
  }

 private:
  static std::string listed(const std::vector<std::pair<std::string, fs::path>>& chain) {
    std::string out;
    for (const auto& [shown, canonical] : chain) out += (out.empty() ? "" : " -> ") + shown;
    return out;
  }

  static std::string key_path(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

  // A base entry kept as it is: its origins, at and under `path`, come along.
  static void keep(const YamlNode::Origins& from, const std::string& path, YamlNode::Origins& to) {
    std::string at = path;
    for (;;) {  // the nearest listed prefix names the file that wrote `path`
      if (const auto it = from.find(at); it != from.end()) {
        to[path] = it->second;
        break;
      }
      const size_t cut = at.find_last_of(".[");
      at.resize(cut == std::string::npos ? 0 : cut);
    }
    const std::string below = path + ".";
    for (auto it = from.lower_bound(below); it != from.end() && it->first.compare(0, below.size(), below) == 0; ++it) {
      to.insert(*it);
    }
  }

  // `derived` over `base`, both maps; returns `derived`, rebuilt in place so that it keeps its own
  // mark (errors about the map point at the file that wrote it last). Key order: the base's, then
  // keys new in `derived` (reports that list a map's entries keep their order). Repeated keys
  // stay repeated, so expect_keys still reports them.
  static YAML::Node merge(const YAML::Node& base, YAML::Node derived, const std::string& path,
                          const YamlNode::Origins& base_origins, const std::shared_ptr<const std::string>& file,
                          YamlNode::Origins& origins, bool top) {
    std::vector<std::pair<YAML::Node, YAML::Node>> own;
    for (auto kv : derived) own.emplace_back(kv.first, kv.second);
    std::vector<bool> used(own.size(), false);
    std::vector<std::pair<YAML::Node, YAML::Node>> entries;

    const auto take = [&](size_t i, const YAML::Node* below) {
      const auto& [key, value] = own[i];
      if (!key.IsScalar()) {  // not a plain name: kept for expect_keys to report
        entries.emplace_back(key, value);
        return;
      }
      if (top && key.Scalar() == "base") return;
      if (value.IsNull()) return;  // `key: ~` removes what the base set
      const std::string sub = key_path(path, key.Scalar());
      origins[sub] = file;
      if (below && below->IsMap() && value.IsMap()) {
        entries.emplace_back(key, merge(*below, value, sub, base_origins, file, origins, false));
      } else {
        entries.emplace_back(key, value);  // scalars and sequences replace whole
      }
    };

    for (auto kv : base) {
      size_t match = own.size();
      if (kv.first.IsScalar()) {
        for (size_t i = 0; i < own.size() && match == own.size(); ++i) {
          if (!used[i] && own[i].first.IsScalar() && own[i].first.Scalar() == kv.first.Scalar()) match = i;
        }
      }
      if (match == own.size()) {
        if (kv.first.IsScalar()) keep(base_origins, key_path(path, kv.first.Scalar()), origins);
        entries.emplace_back(kv.first, kv.second);
        continue;
      }
      used[match] = true;
      const YAML::Node below = kv.second;
      take(match, &below);
    }
    for (size_t i = 0; i < own.size(); ++i) {
      if (!used[i]) take(i, nullptr);
    }

    for (const auto& [key, value] : own) derived.remove(key);
    for (const auto& [key, value] : entries) derived.force_insert(key, value);
    return derived;
  }
};

YamlNode YamlNode::load_composed(const fs::path& path, std::vector<fs::path>* files) {
  std::error_code ec;
  std::vector<std::pair<std::string, fs::path>> chain{{path.string(), fs::weakly_canonical(path, ec)}};
  if (files) files->clear();
  YamlComposer::Composed c = YamlComposer::compose(path, chain, files);
  auto origins = std::make_shared<const Origins>(std::move(c.origins));
  return YamlNode(c.root, origins->at(""), "", origins);
}

}  // namespace tessera
