#pragma once
// FNV-1a 64 (Fowler, Noll and Vo), streamed: the keys of sweep points and of memoized
// service-time and cost-table runs, which must be the same from build to build and machine
// to machine (std::hash need not be).
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace tessera {

struct Fnv1a64 {
  uint64_t value = 0xcbf29ce484222325ULL;

  void add(const char* p, size_t n) {
    for (size_t k = 0; k < n; ++k) {
      value ^= static_cast<unsigned char>(p[k]);
      value *= 0x100000001b3ULL;
    }
  }
  // `s` and a newline, so that ("ab", "c") and ("a", "bc") differ.
  void add_line(const std::string& s) {
    add(s.data(), s.size());
    add("\n", 1);
  }
  // The bytes of a regular file and a newline; a marker naming it when it is not one or cannot
  // be read (the run that uses it reports what is wrong; /dev/zero or a FIFO would never end).
  void add_file(const std::filesystem::path& p) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(p, ec)) {
      add_line("<not a regular file " + p.string() + ">");
      return;
    }
    std::ifstream in(p, std::ios::binary);
    if (!in) {
      add_line("<missing " + p.string() + ">");
      return;
    }
    char buf[1 << 16];
    while (in) {
      in.read(buf, sizeof buf);
      add(buf, static_cast<size_t>(in.gcount()));
    }
    add("\n", 1);
  }
  std::string hex() const { return hex16(value); }

  static std::string hex16(uint64_t v) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
    return buf;
  }
};

}  // namespace tessera
