#include "sim/graph/onnx/text.h"

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace tessera::graph::onnx_import {

std::string utf8_safe(const std::string& s) {
  std::string out;
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) ok = (p[i + k] & 0xc0) == 0x80;
    if (ok && len > 1) {
      // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8 either.
      uint32_t cp = c & (0xff >> (len + 1));
      for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (p[i + k] & 0x3f);
      const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
      ok = cp >= min[len] && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
    }
    if (ok && c == 0) ok = false;  // NUL cuts C strings short
    if (!ok) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 0xf];
      ++i;
      continue;
    }
    out.append(s, i, len);
    i += len;
  }
  return out;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

std::string number_text(double d) {
  char buf[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  return buf;
}

}  // namespace tessera::graph::onnx_import
