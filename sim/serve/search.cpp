#include "sim/serve/search.h"

#include <cmath>
#include <cstdio>

#include "sim/common/error.h"

namespace tessera::serve {

Requirement quantile_at_most(double bound_s) {
  return [bound_s](const SimResult& r) { return r.latency_at_target_s <= bound_s; };
}

RateFound highest_rate_meeting(double capacity_per_s, double rel_tolerance, const std::function<bool(double rate)>& meets) {
  RateFound out;
  auto run_at = [&](double rate) {
    ++out.evaluations;
    return meets(rate);
  };
  static const double kScan[] = {0.995, 0.98, 0.95, 0.9, 0.85, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05, 0.02, 0.01, 0.001};
  double hi = capacity_per_s, lo = 0;
  for (double f : kScan) {
    const double rate = f * capacity_per_s;
    if (run_at(rate)) {
      lo = rate;
      break;
    }
    hi = rate;
  }
  if (lo == 0) return out;  // not even at 0.1% of the capacity
  while ((hi - lo) > rel_tolerance * hi) {
    const double mid = 0.5 * (lo + hi);
    if (run_at(mid)) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  out.rate_per_s = lo;
  return out;
}

MaxRate max_rate(const SimConfig& base, const Requirement& ok, const RateSearch& search) {
  MaxRate out;
  out.capacity_per_s = capacity(base);
  if (!(out.capacity_per_s > 0) || !std::isfinite(out.capacity_per_s)) {
    throw InputError("serve: the configuration has no finite capacity to search below");
  }
  SimConfig c = base;
  SimResult best;
  const RateFound found = highest_rate_meeting(out.capacity_per_s, search.rel_tolerance, [&](double rate) {
    c.arrivals.rate_per_s = rate;
    if (search.requests_at) c.requests = search.requests_at(rate);
    SimResult r = simulate(c);
    if (!ok(r)) return false;
    best = std::move(r);
    return true;
  });
  out.evaluations = found.evaluations;
  if (found.rate_per_s == 0) return out;
  out.feasible = true;
  out.rate_per_s = found.rate_per_s;
  out.at_max = std::move(best);
  return out;
}

Calibration calibrate_host_scale(const SimConfig& base, double target_s) {
  Calibration cal;
  auto at = [&](double k) {
    SimConfig c = base;
    c.host = base.host.scaled(k);
    ++cal.evaluations;
    return simulate(c).latency_at_target_s;
  };
  cal.device_only_s = at(0);
  if (cal.device_only_s >= target_s) {
    // %g, not std::to_string: "p99", not "p99.000000"; a 1e-9 ms target is not "0.000000 ms".
    char msg[256];
    std::snprintf(msg, sizeof msg,
                  "serve: calibration: the p%.6g latency is already %.6g ms with no host time, above the target %.6g ms",
                  base.target_quantile * 100, cal.device_only_s * 1e3, target_s * 1e3);
    throw InputError(msg);
  }
  double lo = 0, hi = 1;
  double at_hi = at(hi);
  while (at_hi < target_s) {
    lo = hi;
    hi *= 2;
    if (hi > 1e9) throw InputError("serve: calibration: no host scale up to 1e9 reaches the target");
    at_hi = at(hi);
  }
  double achieved = at_hi;
  while (hi - lo > 1e-4 * hi) {
    const double mid = 0.5 * (lo + hi);
    const double v = at(mid);
    if (v < target_s) {
      lo = mid;
    } else {
      hi = mid;
      achieved = v;
    }
  }
  cal.scale = hi;
  cal.achieved_s = achieved;
  return cal;
}

std::vector<CurvePoint> latency_curve(const SimConfig& base, const std::vector<double>& fractions) {
  std::vector<CurvePoint> out;
  const double cap = capacity(base);
  SimConfig c = base;
  for (double f : fractions) {
    c.arrivals.rate_per_s = f * cap;
    out.push_back({c.arrivals.rate_per_s, simulate(c)});
  }
  return out;
}

std::vector<double> default_curve_fractions(int points) {
  std::vector<double> f;
  if (points < 2) return {0.5};
  for (int k = 1; k < points; ++k) f.push_back(0.95 * k / (points - 1));
  f.push_back(0.98);
  return f;
}

}  // namespace tessera::serve
