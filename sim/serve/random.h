#pragma once
// Deterministic random numbers for the serving simulation: the same seed gives the same
// draws on every run (xoshiro256** seeded through splitmix64; every transform written
// here, none from <random>, whose distributions differ between standard libraries).
#include <cmath>
#include <cstdint>

namespace tessera::serve {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { reseed(seed); }
  void reseed(uint64_t seed);

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // (0, 1]: safe under log().
  double uniform_open0() { return static_cast<double>((next() >> 11) + 1) * 0x1.0p-53; }
  double exponential(double mean) { return -mean * std::log(uniform_open0()); }
  double normal();              // standard normal (Marsaglia polar method)
  double gamma(double shape);   // Gamma(shape, scale 1), Marsaglia-Tsang

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
  bool has_spare_ = false;
  double spare_ = 0;
};

// Independent streams of one seed (arrivals, host times, device times): changing how many
// draws one consumer makes does not shift the draws of another, so a run at a higher rate
// sees the same host times (common random numbers make the rate search smooth).
// kPromptTokens and kOutputTokens: the LLM request lengths (sim/serve/llm/requests.h).
enum class Stream : uint64_t { kArrivals = 1, kRequestCpu = 2, kBatchCpu = 3, kDevice = 4, kPromptTokens = 5, kOutputTokens = 6 };
Rng stream(uint64_t seed, Stream which);

}  // namespace tessera::serve
