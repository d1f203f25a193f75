#include "sim/common/yaml_reader.h"

#include <algorithm>
#include <cerrno>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <yaml-cpp/depthguard.h>

#include "sim/common/error.h"
#include "sim/common/text_file.h"
#include "sim/common/utf8.h"

namespace tessera {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += items[i];
  }
  return out;
}

}  // namespace

YamlNode::YamlNode(YAML::Node node, std::shared_ptr<const std::string> file, std::string path,
                   std::shared_ptr<const Origins> origins)
    : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)), origins_(std::move(origins)) {}

std::shared_ptr<const std::string> YamlNode::origin_of(const std::string& subpath) const {
  if (!origins_) return file_;
  // The nearest listed prefix: "energy.mac.pj.int8xint8", "energy.mac.pj", ..., "".
  std::string at = subpath;
  for (;;) {
    if (const auto it = origins_->find(at); it != origins_->end()) return it->second;
    if (at.empty()) return file_;
    const size_t cut = at.find_last_of(".[");
    at.resize(cut == std::string::npos ? 0 : cut);
  }
}

YamlNode YamlNode::load_file(const std::filesystem::path& path) {
  // Bounded (kYamlLimits): /dev/zero or an endless pipe is an error naming the bound.
  return load_string(read_text_file(path, kYamlLimits), path.string());
}

namespace {
std::string cr_to_lf(std::string text) {
  for (char& c : text) {
    if (c == '\r') c = '\n';
  }
  return text;
}
}  // namespace

YamlNode YamlNode::load_string(const std::string& text, const std::string& origin) {
  auto file = std::make_shared<const std::string>(origin);
  try {
    // Line breaks that are carriage returns only (classic Mac OS) are line breaks to YAML,
    // not to yaml-cpp, which read such a file as one line ("empty document", audit D22).
    YAML::Node root = text.find('\n') == std::string::npos && text.find('\r') != std::string::npos
                          ? YAML::Load(cr_to_lf(text))
                          : YAML::Load(text);
    if (!root || root.IsNull()) {
      throw InputError(origin + ": empty document (expected a YAML mapping)");
    }
    return YamlNode(root, file, "");
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's depth guard says "bad file"; name what is wrong (audit D22).
    throw InputError(origin + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                     ": YAML nested too deeply (more than " + std::to_string(e.depth()) + " levels)");
  } catch (const YAML::ParserException& e) {
    throw InputError(origin + ":" + std::to_string(e.mark.line + 1) + ":" +
                     std::to_string(e.mark.column + 1) + ": YAML syntax error: " + e.msg);
  }
}

std::string YamlNode::location() const {
  std::string out = *file_;
  const YAML::Mark mark = node_.Mark();
  if (mark.line >= 0) {
    out += ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
  }
  return out;
}

void YamlNode::fail(const std::string& message) const {
  std::string text = location() + ": ";
  if (!path_.empty()) text += path_ + ": ";
  throw InputError(text + message);
}

YamlNode YamlNode::child(const YAML::Node& node, const std::string& subpath) const {
  return YamlNode(node, origin_of(subpath), subpath, origins_);
}

bool YamlNode::has(std::string_view key) const {
  return node_.IsMap() && node_[std::string(key)].IsDefined();
}

std::optional<YamlNode> YamlNode::get(std::string_view key) const {
  if (!node_.IsMap()) fail("expected a mapping");
  YAML::Node value = node_[std::string(key)];
  if (!value.IsDefined()) return std::nullopt;
  const std::string sub = path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  return child(value, sub);
}

YamlNode YamlNode::at(std::string_view key) const {
  auto value = get(key);
  if (!value) fail("missing required key '" + std::string(key) + "'");
  return *value;
}

std::vector<std::string> YamlNode::keys() const {
  if (!node_.IsMap()) fail("expected a mapping");
  std::vector<std::string> out;
  for (const auto& kv : node_) out.push_back(kv.first.as<std::string>());
  return out;
}

void YamlNode::expect_keys(const std::vector<std::string>& allowed) const {
  if (!node_.IsMap()) fail("expected a mapping with keys: " + join(allowed));
  std::vector<std::string> seen;
  for (const auto& kv : node_) {
    if (!kv.first.IsScalar()) {
      YamlNode(kv.first, file_, path_, origins_).fail("a key must be a plain name; allowed here: " + join(allowed));
    }
    const std::string key = kv.first.Scalar();
    const std::string sub = path_.empty() ? key : path_ + "." + key;
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      child(kv.first, sub).fail("unknown key; allowed here: " + join(allowed));
    }
    // yaml-cpp keeps both copies of a repeated key and lookups see the first: a silent typo.
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      child(kv.first, sub).fail("duplicate key");
    }
    seen.push_back(key);
  }
}

void YamlNode::expect_keys(std::initializer_list<std::string_view> allowed) const {
  std::vector<std::string> list;
  for (auto k : allowed) list.emplace_back(k);
  expect_keys(list);
}

std::vector<YamlNode> YamlNode::elements() const {
  if (!node_.IsSequence()) fail("expected a list");
  std::vector<YamlNode> out;
  for (size_t i = 0; i < node_.size(); ++i) {
    out.push_back(child(node_[i], path_ + "[" + std::to_string(i) + "]"));
  }
  return out;
}

std::string YamlNode::as_string() const {
  if (!node_.IsScalar()) fail("expected a string");
  // Names end up in JSON reports, traces and sweep records, which are UTF-8 (audit D9).
  const std::string& text = node_.Scalar();
  if (const size_t at = invalid_utf8_at(text); at != std::string::npos) {
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned>(static_cast<unsigned char>(text[at])));
    fail("not valid UTF-8 text (byte " + std::string(byte) + " at offset " + std::to_string(at) +
         "); save the file as UTF-8");
  }
  return text;
}

int64_t YamlNode::as_int(int64_t min, int64_t max) const {
  if (!node_.IsScalar()) fail("expected an integer");
  const std::string& text = node_.Scalar();
  size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used, 10);
  } catch (const std::exception&) {
    fail("expected an integer, got '" + text + "'");
  }
  if (used != text.size()) fail("expected an integer, got '" + text + "'");
  if (value < min || value > max) {
    std::string range = min == INT64_MIN ? "<= " + std::to_string(max)
                        : max == INT64_MAX ? ">= " + std::to_string(min)
                                           : "in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
    fail("must be " + range + ", got " + text);
  }
  return value;
}

double YamlNode::as_double(double min, double max) const {
  if (!node_.IsScalar()) fail("expected a number");
  const std::string& text = node_.Scalar();
  // strtod, not stod: a subnormal such as 1e-320 sets ERANGE but is a valid number (issue 34
  // item 7); a literal beyond the double range is "at most", not "expected a number".
  char* end = nullptr;
  errno = 0;
  const double value = text.empty() ? 0 : std::strtod(text.c_str(), &end);
  const bool parsed = !text.empty() && end == text.c_str() + text.size() &&
                      !std::isspace(static_cast<unsigned char>(text[0]));
  if (!parsed || std::isnan(value)) fail("expected a number, got '" + text + "'");
  if (std::isinf(value)) {
    const bool literal_inf = text.find_first_of("iI") != std::string::npos;
    if (literal_inf) fail("expected a number, got '" + text + "'");
    std::ostringstream bound;
    bound << (value > 0 ? "at most " : "at least ") << (value > 0 ? max : min);
    fail("must be " + bound.str() + ", got " + text);
  }
  if (value < min || value > max) {
    std::ostringstream range;
    range << "in [" << min << ", " << max << "]";
    // Open-ended: a tiny positive min stands for "> 0"; otherwise the bound is inclusive.
    if (max >= 1e300) {
      range.str("");
      if (value > max) range << "at most " << max;  // not ">= min": the value is above the range
      else if (min > 0) range << "> 0";
      else range << ">= " << min;
    }
    fail("must be " + range.str() + ", got " + text);
  }
  return value;
}

bool YamlNode::as_bool() const {
  if (!node_.IsScalar()) fail("expected true or false");
  const std::string& text = node_.Scalar();
  if (text == "true") return true;
  if (text == "false") return false;
  fail("expected true or false, got '" + text + "'");
}

std::string YamlNode::as_choice(std::initializer_list<std::string_view> choices) const {
  const std::string value = as_string();
  std::vector<std::string> list;
  for (auto c : choices) {
    if (c == value) return value;
    list.emplace_back(c);
  }
  fail("'" + value + "' is not one of: " + join(list));
}

uint64_t YamlNode::as_bytes(uint64_t min, uint64_t max) const {
  if (!node_.IsScalar()) fail("expected a size such as 4096, \"64 KiB\" or \"24 MiB\"");
  const std::string& text = node_.Scalar();
  size_t used = 0;
  double number = 0;
  try {
    number = std::stod(text, &used);
  } catch (const std::exception&) {
    fail("expected a size such as 4096, \"64 KiB\" or \"24 MiB\", got '" + text + "'");
  }
  std::string unit = text.substr(used);
  unit.erase(0, unit.find_first_not_of(' '));
  static const std::pair<const char*, double> kUnits[] = {
      {"", 1},           {"B", 1},          {"KiB", 1024.0},     {"MiB", 1048576.0},
      {"GiB", 1073741824.0}, {"KB", 1e3},   {"MB", 1e6},         {"GB", 1e9}};
  double scale = -1;
  for (const auto& [name, factor] : kUnits) {
    if (unit == name) scale = factor;
  }
  if (scale < 0) fail("unknown size unit '" + unit + "' (use B, KiB, MiB, GiB, KB, MB or GB)");
  const double bytes = number * scale;
  if (!(bytes >= 0) || bytes != std::floor(bytes) || bytes > 1.8e19) {
    fail("size must be a whole, non-negative number of bytes, got '" + text + "'");
  }
  const auto value = static_cast<uint64_t>(bytes);
  if (value < min || value > max) {
    fail("size must be in [" + std::to_string(min) + ", " + std::to_string(max) + "] bytes, got '" + text + "'");
  }
  return value;
}

std::vector<int64_t> YamlNode::as_int_list(int64_t min, int64_t max) const {
  std::vector<int64_t> out;
  if (node_.IsSequence()) {
    for (const auto& e : elements()) out.push_back(e.as_int(min, max));
  } else {
    out.push_back(as_int(min, max));
  }
  return out;
}

int64_t YamlNode::int_or(std::string_view key, int64_t fallback, int64_t min, int64_t max) const {
  auto v = get(key);
  return v ? v->as_int(min, max) : fallback;
}
double YamlNode::double_or(std::string_view key, double fallback, double min, double max) const {
  auto v = get(key);
  return v ? v->as_double(min, max) : fallback;
}
bool YamlNode::bool_or(std::string_view key, bool fallback) const {
  auto v = get(key);
  return v ? v->as_bool() : fallback;
}
std::string YamlNode::string_or(std::string_view key, std::string fallback) const {
  auto v = get(key);
  return v ? v->as_string() : fallback;
}

}  // namespace tessera
