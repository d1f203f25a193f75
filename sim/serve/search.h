#pragma once
// Searches over the serving simulation: the highest rate whose latency quantile stays
// under a bound (as Vidur-Search and MLPerf's Server scenario define it), the host scale
// that reproduces a published latency (calibration), and a latency-throughput curve.
#include <functional>
#include <string>
#include <vector>

#include "sim/serve/queue_sim.h"

namespace tessera::serve {

// Does a run at some rate meet the requirement?
using Requirement = std::function<bool(const SimResult&)>;

// latency_at_target_s (SimConfig::target_quantile) <= bound_s.
Requirement quantile_at_most(double bound_s);

struct RateSearch {
  double rel_tolerance = 0.002;  // stop when the bracket is this narrow (relative)
  // How many requests a run at `rate` simulates (MLPerf: enough for its minimum duration);
  // empty: SimConfig::requests.
  std::function<uint64_t(double rate)> requests_at;
};

struct MaxRate {
  bool feasible = false;  // some rate meets the requirement
  double rate_per_s = 0;  // the highest found
  SimResult at_max;       // the run at that rate
  double capacity_per_s = 0;
  int evaluations = 0;
};

// The search of max_rate over any simulation (the LLM serving one too): `meets(rate)` runs
// at `rate` and says whether the run meets the requirement. Returns the highest meeting
// rate found (0 when none down to 0.1% of the capacity) and the runs it took.
struct RateFound {
  double rate_per_s = 0;
  int evaluations = 0;
};
RateFound highest_rate_meeting(double capacity_per_s, double rel_tolerance, const std::function<bool(double rate)>& meets);

// The highest arrival rate in (0, capacity] whose run meets `ok`. With a fixed batch the
// latency falls and then rises with the rate (batches fill faster, then queues grow), so
// the feasible rates are an interval: the search walks down from the capacity to the first
// rate that meets `ok`, then bisects between it and the failing rate above. Every run uses
// the same seed, so runs at different rates see the same random draws, scaled.
MaxRate max_rate(const SimConfig& base, const Requirement& ok, const RateSearch& search = {});

struct Calibration {
  double scale = 1;        // multiplies every host CPU time of the base host model
  double achieved_s = 0;   // the latency quantile at that scale
  double device_only_s = 0;  // ... with no host time at all (scale 0)
  int evaluations = 0;
};

// The host scale k >= 0 at which the latency quantile (SimConfig::target_quantile) of
// `base` (host = base.host.scaled(k)) equals target_s, by bisection to 1e-4 relative.
// Throws InputError when no scale reaches it (already above with no host time).
Calibration calibrate_host_scale(const SimConfig& base, double target_s);

struct CurvePoint {
  double rate_per_s = 0;
  SimResult result;
};
// Runs at the given fractions of the capacity.
std::vector<CurvePoint> latency_curve(const SimConfig& base, const std::vector<double>& fractions);

// 0.05, 0.10, ..., 0.95, 0.98 (`points` evenly spaced below 0.95, then 0.98).
std::vector<double> default_curve_fractions(int points);

}  // namespace tessera::serve
