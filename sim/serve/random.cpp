#include "sim/serve/random.h"

namespace tessera::serve {
namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace

void Rng::reseed(uint64_t seed) {
  uint64_t x = seed;
  for (auto& s : s_) s = splitmix64(x);
  has_spare_ = false;
}

double Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  double u, v, s;
  do {
    u = 2 * uniform() - 1;
    v = 2 * uniform() - 1;
    s = u * u + v * v;
  } while (s >= 1 || s == 0);
  const double m = std::sqrt(-2 * std::log(s) / s);
  spare_ = v * m;
  has_spare_ = true;
  return u * m;
}

double Rng::gamma(double shape) {
  // Marsaglia & Tsang, "A simple method for generating gamma variables", ACM TOMS 26(3), 2000;
  // shape < 1 through Gamma(shape + 1) * U^(1/shape).
  if (shape < 1) return gamma(shape + 1) * std::pow(uniform_open0(), 1 / shape);
  const double d = shape - 1.0 / 3, c = 1 / std::sqrt(9 * d);
  for (;;) {
    double x, v;
    do {
      x = normal();
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = uniform_open0();
    if (u < 1 - 0.0331 * x * x * x * x) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1 - v + std::log(v))) return d * v;
  }
}

Rng stream(uint64_t seed, Stream which) {
  uint64_t x = seed ^ (static_cast<uint64_t>(which) * 0xD1B54A32D192ED03ULL);
  return Rng(splitmix64(x));
}

}  // namespace tessera::serve
