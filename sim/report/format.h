#pragma once
// Number formatting shared by the report writers (report.cpp, baselines.cpp).
#include <cstdio>
#include <string>

namespace tessera::report::format {

inline double safe_div(double a, double b) { return b > 0 ? a / b : 0.0; }

inline std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// Seconds with engineering units for humans: 1.23 ms.
inline std::string human_seconds(double s) {
  if (s >= 1) return fmt("%.3f s", s);
  if (s >= 1e-3) return fmt("%.3f ms", s * 1e3);
  return fmt("%.3f us", s * 1e6);
}

// Joules with engineering units for humans: 1.234 mJ.
inline std::string human_joules(double j) {
  if (j >= 1) return fmt("%.3f J", j);
  if (j >= 1e-3) return fmt("%.3f mJ", j * 1e3);
  if (j >= 1e-6) return fmt("%.3f uJ", j * 1e6);
  return fmt("%.3f nJ", j * 1e9);
}

}  // namespace tessera::report::format
