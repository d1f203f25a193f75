#include "sim/serve/arrivals.h"

#include <cmath>

namespace tessera::serve {

ArrivalProcess::ArrivalProcess(const ArrivalSpec& spec, uint64_t seed) : spec_(&spec), rng_(stream(seed, Stream::kArrivals)) {
  if (spec.kind == ArrivalKind::kTrace && spec.trace) {
    const double natural = spec.trace->natural_rate_per_s();
    trace_scale_ = (spec.rate_per_s > 0 && natural > 0) ? natural / spec.rate_per_s : 1;
  }
  if (spec.kind == ArrivalKind::kHyperExponential) {
    // Two exponential phases with balanced means (each carries half the mean gap):
    // p1 = (1 + sqrt((cv^2 - 1) / (cv^2 + 1))) / 2, phase rates 2 p1 rate and 2 (1 - p1) rate.
    const double cv2 = spec.cv * spec.cv;
    hyper_p1_ = 0.5 * (1 + std::sqrt((cv2 - 1) / (cv2 + 1)));
  }
}

double ArrivalProcess::gap(uint64_t k) {
  const double rate = spec_->rate_per_s;
  switch (spec_->kind) {
    case ArrivalKind::kPoisson: return rng_.exponential(1 / rate);
    case ArrivalKind::kConstant: return 1 / rate;
    case ArrivalKind::kGamma: {
      const double shape = 1 / (spec_->cv * spec_->cv);
      return rng_.gamma(shape) / (shape * rate);
    }
    case ArrivalKind::kHyperExponential: {
      const bool first = rng_.uniform() < hyper_p1_;
      const double phase_rate = 2 * rate * (first ? hyper_p1_ : 1 - hyper_p1_);
      return rng_.exponential(1 / phase_rate);
    }
    case ArrivalKind::kTrace: {
      const auto& ts = spec_->trace->arrival_s;
      return (ts[k] - ts[k - 1]) * trace_scale_;
    }
    case ArrivalKind::kAllAtOnce:
    case ArrivalKind::kClosedLoop: return 0;
  }
  return 0;
}

}  // namespace tessera::serve
