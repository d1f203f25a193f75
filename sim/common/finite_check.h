#pragma once
// The simulators check their own outputs (issue 34 item 1): a figure that is NaN or
// infinite is a bug, reported as an internal error (exit 1), never written as a result.
// nlohmann::json writes NaN and inf as `null` and printf as `nan`/`inf`, so both the JSON
// tree and rendered CSV text are checked before anything is written.
#include <cmath>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tessera {

// The key path of the first non-finite number in `j` ("rows[3].at_rate.latency_ms.p90"), or "".
template <class Json>
std::string first_non_finite(const Json& j, const std::string& path = "") {
  if (j.is_number_float()) {
    const double v = j.template get<double>();
    return std::isfinite(v) ? "" : (path.empty() ? "(root)" : path);
  }
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      std::string p = first_non_finite(it.value(), path.empty() ? it.key() : path + "." + it.key());
      if (!p.empty()) return p;
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) {
      std::string p = first_non_finite(j[i], path + "[" + std::to_string(i) + "]");
      if (!p.empty()) return p;
    }
  }
  return "";
}

// "line L, column C" of the first nan/inf field of comma-separated text, or "".
inline std::string first_non_finite_csv(std::string_view text) {
  size_t line = 1, column = 1, from = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    const bool end = i == text.size() || text[i] == ',' || text[i] == '\n';
    if (!end) continue;
    std::string_view f = text.substr(from, i - from);
    if (!f.empty() && (f[0] == '-' || f[0] == '+')) f.remove_prefix(1);
    if (f == "nan" || f == "inf" || f == "NaN" || f == "Inf" || f == "infinity") {
      return "line " + std::to_string(line) + ", column " + std::to_string(column);
    }
    if (i < text.size() && text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
    from = i + 1;
  }
  return "";
}

// Throws std::logic_error (exit 1, "internal error") naming what and where.
inline void require_finite(const std::string& what, const std::string& where) {
  if (where.empty()) return;
  throw std::logic_error(what + ": the simulation produced a non-finite figure at " + where +
                         "; nothing was written (a bug: please report it with the command line)");
}

}  // namespace tessera
