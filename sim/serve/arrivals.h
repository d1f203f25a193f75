#pragma once
// The gaps between arrivals of an open request stream (model.h ArrivalSpec): Poisson,
// constant, gamma or hyper-exponential with a given coefficient of variation, or a trace
// time-scaled to the requested rate.
#include <cstdint>

#include "sim/serve/model.h"

namespace tessera::serve {

class ArrivalProcess {
 public:
  ArrivalProcess(const ArrivalSpec& spec, uint64_t seed);
  // The gap between request k - 1 and request k (k >= 1).
  double gap(uint64_t k);

 private:
  const ArrivalSpec* spec_;
  Rng rng_;
  double trace_scale_ = 1;
  double hyper_p1_ = 0.5;
};

}  // namespace tessera::serve
