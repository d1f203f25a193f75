#pragma once
// A config file and the files it is composed from (`base:` chains, docs/configs.md), into a
// cache key: the memoized service times of `tessera serve` and the LLM cost tables of
// `tessera serve-llm` must miss when a config or any of its bases changes.
#include <filesystem>
#include <vector>

#include "sim/common/error.h"
#include "sim/common/fnv_hash.h"
#include "sim/common/yaml_reader.h"

namespace tessera {

// The config's bytes, then each base's in chain order; a config whose chain cannot be read
// adds a marker instead (the run itself reports what is wrong). A plain config adds only its
// own bytes, so keys made before `base:` existed stay as they were.
inline void add_config_files(Fnv1a64& f, const std::filesystem::path& config) {
  f.add_file(config);
  try {
    std::vector<std::filesystem::path> chain;
    YamlNode::load_composed(config, &chain);
    for (size_t i = 1; i < chain.size(); ++i) f.add_file(chain[i]);
  } catch (const InputError&) {
    f.add_line("<unreadable base chain>");
  }
}

}  // namespace tessera
