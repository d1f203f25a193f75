#pragma once
// A parameter or metric value in a sweep: what a YAML scalar or a report.json leaf can be.
// Integers stay integers (128 is emitted as 128, never 128.0), so the config loader's
// "integers must be written as integers" rule holds for generated configs.
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace tessera::sweep {

struct Value {
  enum class Kind { kNull, kInt, kReal, kBool, kString };
  Kind kind = Kind::kNull;
  int64_t i = 0;
  double d = 0;
  bool b = false;
  std::string s;

  static Value null() { return {}; }
  static Value of_int(int64_t v) { Value x; x.kind = Kind::kInt; x.i = v; return x; }
  static Value of_real(double v) { Value x; x.kind = Kind::kReal; x.d = v; return x; }
  static Value of_bool(bool v) { Value x; x.kind = Kind::kBool; x.b = v; return x; }
  static Value of_string(std::string v) { Value x; x.kind = Kind::kString; x.s = std::move(v); return x; }

  bool is_null() const { return kind == Kind::kNull; }
  bool is_int() const { return kind == Kind::kInt; }
  bool is_number() const { return kind == Kind::kInt || kind == Kind::kReal; }
  // The number this value stands for: ints, reals, and strings holding a number or a
  // byte size ("24 MiB" -> 25165824, as the config loader reads sizes). nullopt otherwise.
  std::optional<double> number() const;
  // As above but keeps integers exact ("24 MiB" -> int 25165824, "1.5" -> real).
  std::optional<Value> numeric() const;
  // Text for messages, ${} interpolation and CSV cells: 128, 34.5, true, ws; null -> "".
  std::string text() const;
  // JSON: ints as integers, reals as doubles (shortest round-trip), strings, bools, null.
  nlohmann::ordered_json json() const;
  // A kind name for messages: "an integer", "a string", ...
  std::string kind_name() const;

  bool operator==(const Value& o) const;
  bool operator!=(const Value& o) const { return !(*this == o); }
};

// A YAML scalar as a Value. Quoted scalars are strings; plain ones are integers (decimal),
// reals, true/false, null/~ or else strings. Fails (std::invalid_argument) on non-scalars.
Value value_from_yaml(const YAML::Node& node);
// A JSON scalar as a Value; nullopt for objects and arrays.
std::optional<Value> value_from_json(const nlohmann::ordered_json& j);
std::optional<Value> value_from_json(const nlohmann::json& j);
// A YAML node holding `v`; strings are marked so the emitter quotes them.
YAML::Node value_to_yaml(const Value& v);

// "" when `text` is valid UTF-8 (every name and value of a sweep ends up in JSON, which
// must be UTF-8), else what is wrong: "byte 0xe9 at offset 3 of 'caf\xe9'".
std::string utf8_problem(const std::string& text);

// Parses a byte size the way the config loader does: "4096", "64 KiB", "24MiB", "1.5 GB".
std::optional<double> parse_size(const std::string& text);

}  // namespace tessera::sweep
