#include "sim/serve/trace.h"

#include <cerrno>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "sim/common/error.h"

namespace tessera::serve {
namespace {

std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && (s[a] == ' ' || s[a] == '\t' || s[a] == '\r')) ++a;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '\r')) --b;
  return s.substr(a, b - a);
}

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : line) {
    if (ch == ',') {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += ch;
    }
  }
  out.push_back(trim(cur));
  return out;
}

std::string shown(const std::string& field) {
  std::string s = field.size() > 40 ? field.substr(0, 40) + "..." : field;
  for (char& ch : s) {
    if (static_cast<unsigned char>(ch) < 0x20 || static_cast<unsigned char>(ch) >= 0x7f) ch = '?';
  }
  return "'" + s + "'";
}

}  // namespace

Trace parse_trace_csv(const std::string& text, const std::string& origin) {
  Trace tr;
  tr.source = origin;
  std::istringstream in(text);
  std::string raw;
  size_t line_no = 0;
  int columns = 0;  // 1 or 2 once known
  bool header_allowed = true;
  auto fail = [&](const std::string& what) -> void {
    throw InputError(origin + ":" + std::to_string(line_no) + ": " + what);
  };
  while (std::getline(in, raw)) {
    ++line_no;
    const size_t hash = raw.find('#');
    const std::string line = trim(hash == std::string::npos ? raw : raw.substr(0, hash));
    if (line.empty()) continue;
    auto fields = split_fields(line);
    if (header_allowed) {
      header_allowed = false;
      const unsigned char first = fields[0].empty() ? 0 : static_cast<unsigned char>(fields[0][0]);
      if (std::isalpha(first) && fields[0] != "inf" && fields[0] != "nan") {  // a header line
        if (fields.size() == 1 && fields[0] == "arrival_s") {
          columns = 1;
        } else if (fields.size() == 2 && fields[0] == "arrival_s" && fields[1] == "size") {
          columns = 2;
        } else {
          fail("header: expected 'arrival_s' or 'arrival_s,size', got " + shown(line));
        }
        continue;
      }
    }
    if (fields.size() > 2) fail("expected 'arrival_s' or 'arrival_s,size', got " + std::to_string(fields.size()) + " columns");
    if (columns == 0) columns = static_cast<int>(fields.size());
    if (static_cast<int>(fields.size()) != columns) {
      fail("expected " + std::to_string(columns) + (columns == 1 ? " column (arrival_s)" : " columns (arrival_s,size)") +
           " as in the rows before, got " + std::to_string(fields.size()));
    }
    const std::string& a = fields[0];
    char* end = nullptr;
    errno = 0;
    const double t = a.empty() ? 0 : std::strtod(a.c_str(), &end);
    if (a.empty() || end != a.c_str() + a.size()) fail("arrival_s: " + shown(a) + " is not a number");
    if (!std::isfinite(t) || errno == ERANGE) fail("arrival_s: " + shown(a) + " is not a finite number");
    if (t < 0) fail("arrival_s: " + shown(a) + " is negative (seconds from the start of the trace)");
    if (!tr.arrival_s.empty() && t < tr.arrival_s.back()) {
      std::ostringstream msg;
      msg.precision(17);
      msg << "arrival_s: " << t << " is before the previous request's " << tr.arrival_s.back()
          << " (arrivals must not decrease)";
      fail(msg.str());
    }
    uint32_t size = 1;
    if (columns == 2) {
      const std::string& s = fields[1];
      errno = 0;
      const long long v = s.empty() ? 0 : std::strtoll(s.c_str(), &end, 10);
      if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE) fail("size: " + shown(s) + " is not an integer");
      if (v < 1 || v > static_cast<long long>(kMaxRequestSamples)) {
        fail("size: must be in [1, " + std::to_string(kMaxRequestSamples) + "] samples, got " + s);
      }
      size = static_cast<uint32_t>(v);
    }
    if (tr.arrival_s.size() >= kMaxTraceRequests) fail("more than 2^31 requests");
    tr.arrival_s.push_back(t);
    tr.size.push_back(size);
  }
  if (tr.arrival_s.empty()) throw InputError(origin + ": the trace has no requests (expected rows of arrival_s[,size])");
  return tr;
}

Trace load_trace_csv(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(path.string() + ": cannot open the trace: " + std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  return parse_trace_csv(ss.str(), path.string());
}

}  // namespace tessera::serve
