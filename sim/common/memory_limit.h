#pragma once
// How much memory this process may use: the smallest of physical memory and the
// address-space / data-segment limits (ulimit -v, -d). Stages that allocate in
// proportion to the input check their estimate against it first, so an input too big
// for the machine is an InputError naming the knob to turn, not a std::bad_alloc.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

namespace tessera {

inline double memory_limit_bytes() {
  double limit = 1e30;
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) limit = static_cast<double>(pages) * static_cast<double>(page);
  for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    struct rlimit rl {};
    if (::getrlimit(resource, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
      limit = std::min(limit, static_cast<double>(rl.rlim_cur));
    }
  }
  return limit;
}

// "3.2 GiB"
inline std::string gib_text(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

}  // namespace tessera
