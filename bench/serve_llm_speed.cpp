// Speed of the LLM serving scheduler (sim/serve/llm, plain C++): docs/serving.md, "LLM
// serving", "Speed". 10,000 requests of the shipped conversation trace on a stand-in target
// whose iteration time is a fixed function (a bench device only: the shipped targets come
// from make_serving_target), so the figure is the scheduler's own time. Prints one line per
// case: requests, iterations, wall seconds (median of 5), peak memory.
//   build/bench/bench_serve_llm [requests]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "sim/serve/llm/llm_study.h"

using namespace tessera::serve::llm;

namespace {

// Roughly a Llama-3-8B replica's shape: 8 ms a step, 40 us per prefill token, 60 us per
// decode sequence, 2 ns per attended KV token; 200,000 tokens of KV cache. Not a device model.
class StandIn : public ServingTarget {
 public:
  std::string name() const override { return "bench stand-in"; }
  IterationCost iteration(const IterationMix& m) const override {
    double prefill = 0, context = 0;
    for (const auto& c : m.prefill) {
      prefill += static_cast<double>(c.tokens);
      context += static_cast<double>(c.tokens) * static_cast<double>(c.context_tokens);
    }
    const double s = 0.008 + 40e-6 * prefill + 60e-6 * static_cast<double>(m.decode_sequences) +
                     2e-9 * (static_cast<double>(m.decode_kv_tokens) + context);
    return {s, 300 * s};
  }
  int64_t kv_capacity_tokens() const override { return 200000; }
  int64_t kv_bytes_per_token() const override { return 131072; }
  int64_t max_context_tokens() const override { return 8192; }
  double swap_s(int64_t tokens) const override { return static_cast<double>(tokens) * 131072 / 32e9; }
  int chips() const override { return 1; }
  double idle_power_w() const override { return 100; }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10000;
  StandIn target;
  auto trace = std::make_shared<LlmTrace>(load_llm_trace_csv(std::string(TESSERA_SOURCE_DIR) + "/workloads/llm/traces/conversation-1k.csv"));
  // 10,000 requests: the trace's 1,000 rows ten times over, one after the other in time.
  auto big = std::make_shared<LlmTrace>();
  for (uint64_t k = 0; big->requests.size() < n; ++k) {
    for (const auto& r : trace->requests) {
      if (big->requests.size() == n) break;
      LlmRequest q = r;
      q.arrival_s += static_cast<double>(k) * (trace->requests.back().arrival_s + 1);
      big->requests.push_back(q);
    }
  }
  struct Case {
    const char* name;
    LlmMode mode;
    double rate;
  };
  const Case cases[] = {{"at 10 requests/s", LlmMode::kAtRate, 10},
                        {"all at once (offline)", LlmMode::kMlperfOffline, 0},
                        {"max rate, TTFT p99 <= 2 s, TPOT p99 <= 100 ms", LlmMode::kMaxRate, 0}};
  for (const Case& c : cases) {
    LlmStudySpec spec;
    spec.mode = c.mode;
    spec.requests.trace = big;
    spec.requests.arrivals.kind = tessera::serve::ArrivalKind::kTrace;
    spec.requests.arrivals.rate_per_s = c.rate;
    spec.requests.requests = n;
    spec.sim.slo_ttft_s = 2.0;
    spec.sim.slo_tpot_s = 0.1;
    std::vector<double> wall;
    LlmStudyResult r;
    for (int i = 0; i < 5; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      r = run_llm_study(spec, target);
      wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    std::printf("%-48s %8llu requests simulated, %9llu iterations (headline), %7.3f s wall (median of 5), peak RSS %.0f MB\n",
                c.name, static_cast<unsigned long long>(r.simulated_requests), static_cast<unsigned long long>(r.headline.iterations),
                median(wall), static_cast<double>(u.ru_maxrss) / 1024);
  }
  return 0;
}
