#pragma once
// A checked view of a YAML document: every accessor knows its file, line and key
// path, so errors read "configs/x.yaml:12:5: array.rows: must be >= 1, got 0".
// Unknown keys are errors (a typo must not pass silently).
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

class YamlNode {
 public:
  // Parses a file; a missing/unreadable file or a syntax error throws InputError.
  static YamlNode load_file(const std::filesystem::path& path);
  // Parses text (tests, generated experiments); `origin` stands in for the file name.
  static YamlNode load_string(const std::string& text, const std::string& origin);
  // Parses an architecture config that may start with `base: <path>` (relative to the file that
  // names it): the chain of bases is loaded first and each file's keys override it. Maps merge key
  // by key; scalars and sequences replace whole; a key set to null removes the inherited one;
  // `base` itself is dropped (docs/configs.md, "Composition"). Every node keeps the file that wrote
  // it, so errors name that file and its line. A missing base, a cycle or a chain of more than
  // kMaxBaseChain files is an InputError located at the `base:` line. Without `base:`, load_file.
  // `files`, if given, receives the chain: `path` first, then its base, its base's base, ...
  static YamlNode load_composed(const std::filesystem::path& path, std::vector<std::filesystem::path>* files = nullptr);
  static constexpr int kMaxBaseChain = 16;

  // The file that wrote this node (in a composed config, the one in the chain that set it).
  const std::string& file() const { return *file_; }
  const std::string& path() const { return path_; }  // dotted key path, "" at the root
  const YAML::Node& raw() const { return node_; }

  bool is_map() const { return node_.IsMap(); }
  bool is_sequence() const { return node_.IsSequence(); }
  bool is_scalar() const { return node_.IsScalar(); }

  // Map access. `at` fails naming the missing key; `get` returns nullopt.
  bool has(std::string_view key) const;
  YamlNode at(std::string_view key) const;
  std::optional<YamlNode> get(std::string_view key) const;
  // Fails if this is not a map or holds a key outside `allowed` (the message lists them).
  void expect_keys(std::initializer_list<std::string_view> allowed) const;
  void expect_keys(const std::vector<std::string>& allowed) const;
  std::vector<std::string> keys() const;

  // Sequence access; fails if this is not a sequence.
  std::vector<YamlNode> elements() const;

  // Scalars with range checks; a wrong type fails naming what was expected.
  int64_t as_int(int64_t min = INT64_MIN, int64_t max = INT64_MAX) const;
  double as_double(double min = -1e300, double max = 1e300) const;
  bool as_bool() const;
  std::string as_string() const;
  // One of `choices`; the message lists them.
  std::string as_choice(std::initializer_list<std::string_view> choices) const;
  // A byte size: an integer (bytes) or "<number> <unit>" with B, KiB, MiB, GiB, KB, MB, GB.
  uint64_t as_bytes(uint64_t min = 0, uint64_t max = UINT64_MAX) const;
  // An int or a list of ints (for kernel: 3 or kernel: [3, 3]).
  std::vector<int64_t> as_int_list(int64_t min = INT64_MIN, int64_t max = INT64_MAX) const;

  // Convenience: optional scalar with a default.
  int64_t int_or(std::string_view key, int64_t fallback, int64_t min = INT64_MIN, int64_t max = INT64_MAX) const;
  double double_or(std::string_view key, double fallback, double min = -1e300, double max = 1e300) const;
  bool bool_or(std::string_view key, bool fallback) const;
  std::string string_or(std::string_view key, std::string fallback) const;

  // "file:line:col: path: message" as an InputError.
  [[noreturn]] void fail(const std::string& message) const;
  std::string location() const;

 private:
  // Dotted key path -> the file of a composed chain that wrote the value there; a path not listed
  // takes its nearest listed parent's file. Shared by every node of one composed document.
  using Origins = std::map<std::string, std::shared_ptr<const std::string>>;
  friend class YamlComposer;

  YamlNode(YAML::Node node, std::shared_ptr<const std::string> file, std::string path,
           std::shared_ptr<const Origins> origins = nullptr);
  YamlNode child(const YAML::Node& node, const std::string& subpath) const;
  std::shared_ptr<const std::string> origin_of(const std::string& subpath) const;

  YAML::Node node_;
  std::shared_ptr<const std::string> file_;
  std::string path_;
  std::shared_ptr<const Origins> origins_;  // null: the whole document is file_
};

}  // namespace tessera
