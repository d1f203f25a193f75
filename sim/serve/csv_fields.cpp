#include "sim/serve/csv_fields.h"

namespace tessera::serve {

std::string trim_blanks(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && (s[a] == ' ' || s[a] == '\t' || s[a] == '\r')) ++a;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '\r')) --b;
  return s.substr(a, b - a);
}

std::vector<std::string> split_trimmed(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : line) {
    if (ch == sep) {
      out.push_back(trim_blanks(cur));
      cur.clear();
    } else {
      cur += ch;
    }
  }
  out.push_back(trim_blanks(cur));
  return out;
}

std::string shown_field(const std::string& field) {
  std::string s = field.size() > 40 ? field.substr(0, 40) + "..." : field;
  for (char& ch : s) {
    if (static_cast<unsigned char>(ch) < 0x20 || static_cast<unsigned char>(ch) >= 0x7f) ch = '?';
  }
  return "'" + s + "'";
}

}  // namespace tessera::serve
