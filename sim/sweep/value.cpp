#include "sim/sweep/value.h"

#include <cstdio>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "sim/common/utf8.h"

namespace tessera::sweep {
namespace {

bool parse_int(const std::string& text, int64_t& out) {
  if (text.empty()) return false;
  size_t start = (text[0] == '-' || text[0] == '+') ? 1 : 0;
  if (start == text.size()) return false;
  for (size_t k = start; k < text.size(); ++k) {
    if (text[k] < '0' || text[k] > '9') return false;
  }
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno == ERANGE || *end != '\0') return false;
  out = v;
  return true;
}

bool parse_real(const std::string& text, double& out) {
  if (text.empty()) return false;
  // Only decimal notation: strtod would also take "inf", "nan" and hex floats.
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+')) return false;
  }
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || errno == ERANGE || !std::isfinite(v)) return false;
  out = v;
  return true;
}

}  // namespace

std::optional<double> parse_size(const std::string& text) {
  size_t k = 0;
  while (k < text.size() && text[k] == ' ') ++k;
  size_t num_end = k;
  while (num_end < text.size() &&
         ((text[num_end] >= '0' && text[num_end] <= '9') || text[num_end] == '.' || text[num_end] == 'e' ||
          text[num_end] == 'E' || text[num_end] == '-' || text[num_end] == '+')) {
    // An 'e' followed by a letter other than a digit/sign is not an exponent.
    if ((text[num_end] == 'e' || text[num_end] == 'E') &&
        (num_end + 1 >= text.size() || !(std::isdigit(static_cast<unsigned char>(text[num_end + 1])) ||
                                         text[num_end + 1] == '-' || text[num_end + 1] == '+'))) {
      break;
    }
    ++num_end;
  }
  double number = 0;
  if (!parse_real(text.substr(k, num_end - k), number)) return std::nullopt;
  std::string unit = text.substr(num_end);
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  while (!unit.empty() && unit.back() == ' ') unit.pop_back();
  static const std::pair<const char*, double> kUnits[] = {
      {"", 1},        {"B", 1},       {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
      {"TiB", 1099511627776.0}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}};
  for (const auto& [name, factor] : kUnits) {
    if (unit == name) return number * factor;
  }
  return std::nullopt;
}

std::optional<double> Value::number() const {
  auto v = numeric();
  if (!v) return std::nullopt;
  return v->is_int() ? static_cast<double>(v->i) : v->d;
}

std::optional<Value> Value::numeric() const {
  switch (kind) {
    case Kind::kInt:
    case Kind::kReal:
      return *this;
    case Kind::kString: {
      int64_t iv = 0;
      if (parse_int(s, iv)) return of_int(iv);
      auto bytes = parse_size(s);
      if (!bytes) return std::nullopt;
      if (*bytes == std::floor(*bytes) && std::fabs(*bytes) < 9.0e18) {
        // "1.5" stays real; "24 MiB" and "1.5 KiB" are whole byte counts.
        double plain = 0;
        if (parse_real(s, plain) && s.find_first_of(".eE") != std::string::npos) return of_real(plain);
        return of_int(static_cast<int64_t>(*bytes));
      }
      return of_real(*bytes);
    }
    default:
      return std::nullopt;
  }
}

std::string Value::text() const {
  switch (kind) {
    case Kind::kNull: return "";
    case Kind::kInt: return std::to_string(i);
    case Kind::kReal: return nlohmann::json(d).dump();
    case Kind::kBool: return b ? "true" : "false";
    case Kind::kString: return s;
  }
  return "";
}

nlohmann::ordered_json Value::json() const {
  switch (kind) {
    case Kind::kNull: return nullptr;
    case Kind::kInt: return i;
    case Kind::kReal: return d;
    case Kind::kBool: return b;
    case Kind::kString: return s;
  }
  return nullptr;
}

std::string Value::kind_name() const {
  switch (kind) {
    case Kind::kNull: return "null";
    case Kind::kInt: return "an integer";
    case Kind::kReal: return "a number";
    case Kind::kBool: return "a boolean";
    case Kind::kString: return "a string";
  }
  return "?";
}

bool Value::operator==(const Value& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case Kind::kNull: return true;
    case Kind::kInt: return i == o.i;
    case Kind::kReal: return d == o.d;
    case Kind::kBool: return b == o.b;
    case Kind::kString: return s == o.s;
  }
  return false;
}

Value value_from_yaml(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return Value::null();
  if (!node.IsScalar()) throw std::invalid_argument("expected a single value (a number, string or boolean)");
  const std::string& text = node.Scalar();
  // yaml-cpp tags quoted (non-plain) scalars "!" and plain ones "?".
  if (node.Tag() == "!") return Value::of_string(text);
  int64_t iv = 0;
  if (parse_int(text, iv)) return Value::of_int(iv);
  double dv = 0;
  if (parse_real(text, dv)) return Value::of_real(dv);
  if (text == "true") return Value::of_bool(true);
  if (text == "false") return Value::of_bool(false);
  if (text == "null" || text == "~") return Value::null();
  return Value::of_string(text);
}

namespace {
template <class J>
std::optional<Value> from_json_impl(const J& j) {
  if (j.is_null()) return Value::null();
  if (j.is_boolean()) return Value::of_bool(j.template get<bool>());
  if (j.is_number_integer()) return Value::of_int(j.template get<int64_t>());
  if (j.is_number_unsigned()) {
    const auto u = j.template get<uint64_t>();
    if (u <= static_cast<uint64_t>(INT64_MAX)) return Value::of_int(static_cast<int64_t>(u));
    return Value::of_real(static_cast<double>(u));
  }
  if (j.is_number_float()) return Value::of_real(j.template get<double>());
  if (j.is_string()) return Value::of_string(j.template get<std::string>());
  return std::nullopt;
}
}  // namespace

std::optional<Value> value_from_json(const nlohmann::ordered_json& j) { return from_json_impl(j); }
std::optional<Value> value_from_json(const nlohmann::json& j) { return from_json_impl(j); }

YAML::Node value_to_yaml(const Value& v) {
  YAML::Node n;
  switch (v.kind) {
    case Value::Kind::kNull:
      n = YAML::Node(YAML::NodeType::Null);
      break;
    case Value::Kind::kString:
      n = v.s;
      n.SetTag("!");
      break;
    default:
      n = v.text();
      break;
  }
  return n;
}

std::string utf8_problem(const std::string& text) {
  const size_t k = invalid_utf8_at(text);
  if (k == std::string::npos) return "";
  const auto* b = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  std::string shown;
  for (size_t j = 0; j < n && shown.size() < 80; ++j) {
    char buf[8];
    if (b[j] >= 0x20 && b[j] < 0x7F) {
      shown += static_cast<char>(b[j]);
    } else {
      std::snprintf(buf, sizeof buf, "\\x%02x", b[j]);
      shown += buf;
    }
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "byte 0x%02x at offset %zu", b[k], k);
  return std::string(buf) + " of '" + shown + "'";
}

}  // namespace tessera::sweep
