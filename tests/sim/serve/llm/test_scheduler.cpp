// The iteration-level scheduler against timelines derived by hand on TinyTarget:
// iteration = 10 ms + 1 ms per prefill token + 1 ms per decode sequence.
#include <gtest/gtest.h>

#include <vector>

#include "sim/common/error.h"
#include "sim/serve/llm/scheduler.h"
#include "tests/sim/serve/llm/tiny_target.h"

namespace {

using namespace tessera::serve::llm;
using tessera_test::TinyTarget;

LlmSimConfig config(int64_t budget = 100, int64_t block_tokens = 4) {
  LlmSimConfig c;
  c.scheduler.max_batch_tokens = budget;
  c.scheduler.block_tokens = block_tokens;
  c.keep_timeline = true;
  c.keep_token_times = true;
  return c;
}

void expect_times(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << "token " << i + 1;
}

// A (t 0, prompt 4, output 3), B (t 5 ms, 2, 2), C (t 30 ms, 3, 1):
//   0 ms: prefill A (4)               10 + 4     = 14 ms -> A1 at 14
//  14 ms: decode A, prefill B (2)     10 + 2 + 1 = 13 ms -> A2, B1 at 27
//  27 ms: decode A, B (C not yet)     10 + 2     = 12 ms -> A3, B2 at 39 (both done)
//  39 ms: prefill C (3)               10 + 3     = 13 ms -> C1 at 52 (done)
TEST(LlmScheduler, ThreeRequestsTokenByToken) {
  TinyTarget t;
  const std::vector<LlmRequest> reqs = {{0, 4, 3}, {0.005, 2, 2}, {0.030, 3, 1}};
  const LlmResult r = simulate_llm(reqs, t, config());
  expect_times(r.per_request[0].token_s, {0.014, 0.027, 0.039});
  expect_times(r.per_request[1].token_s, {0.027, 0.039});
  expect_times(r.per_request[2].token_s, {0.052});
  EXPECT_NEAR(r.per_request[0].ttft_s(), 0.014, 1e-12);
  EXPECT_NEAR(r.per_request[1].ttft_s(), 0.022, 1e-12);
  EXPECT_NEAR(r.per_request[2].ttft_s(), 0.022, 1e-12);
  EXPECT_NEAR(r.per_request[0].tpot_s(), 0.0125, 1e-12);  // (39 - 14) / 2
  EXPECT_NEAR(r.per_request[1].tpot_s(), 0.012, 1e-12);
  EXPECT_NEAR(r.per_request[0].e2e_s(), 0.039, 1e-12);
  ASSERT_EQ(r.iterations, 4u);
  ASSERT_EQ(t.mixes.size(), 4u);
  // The second iteration: A decodes over its 4 prompt tokens and itself; B's prompt whole.
  EXPECT_EQ(t.mixes[1].decode_sequences, 1);
  EXPECT_EQ(t.mixes[1].decode_kv_tokens, 5);
  ASSERT_EQ(t.mixes[1].prefill.size(), 1u);
  EXPECT_EQ(t.mixes[1].prefill[0].tokens, 2);
  EXPECT_EQ(t.mixes[1].prefill[0].context_tokens, 0);
  EXPECT_EQ(t.mixes[2].decode_kv_tokens, 6 + 3);  // A: 4 + 1 + 1, B: 2 + 1
  EXPECT_EQ(t.mixes[2].decode_kv_lengths, (std::vector<int64_t>{6, 3}));  // each its own, in admission order
  EXPECT_EQ(t.mixes[1].decode_kv_lengths, (std::vector<int64_t>{5}));
  // Span 52 ms; 6 output tokens; energy 100 W x 52 ms busy, no idle time.
  EXPECT_NEAR(r.span_s, 0.052, 1e-12);
  EXPECT_EQ(r.output_tokens, 6u);
  EXPECT_NEAR(r.output_tokens_per_s, 6 / 0.052, 1e-9);
  EXPECT_NEAR(r.energy_j, 5.2, 1e-9);
  EXPECT_EQ(r.preemptions, 0u);
  // Inter-token gaps: A 13, 12; B 12 ms.
  EXPECT_NEAR(r.itl_s.max, 0.013, 1e-12);
  EXPECT_NEAR(r.itl_s.mean, 0.037 / 3, 1e-12);
  // The timeline: the fourth iteration starts at 39 ms with C alone.
  ASSERT_EQ(r.timeline.size(), 4u);
  EXPECT_NEAR(r.timeline[3].start_s, 0.039, 1e-12);
  EXPECT_EQ(r.timeline[3].prefill_tokens, 3);
  EXPECT_EQ(r.timeline[1].running, 2);
}

// Goodput under SLOs: TTFT <= 20 ms meets A only (B and C wait 22 ms).
TEST(LlmScheduler, GoodputCountsRequestsWithinBothSlos) {
  TinyTarget t;
  LlmSimConfig c = config();
  c.slo_ttft_s = 0.020;
  const LlmResult r = simulate_llm({{0, 4, 3}, {0.005, 2, 2}, {0.030, 3, 1}}, t, c);
  EXPECT_EQ(r.slo_met, 1u);
  EXPECT_NEAR(r.goodput_per_s, 1 / 0.052, 1e-9);
  c.slo_ttft_s = 0;
  c.slo_tpot_s = 0.0121;  // B's 12 ms and C (one token) meet it, A's 12.5 ms does not
  EXPECT_EQ(simulate_llm({{0, 4, 3}, {0.005, 2, 2}, {0.030, 3, 1}}, t, c).slo_met, 2u);
}

// A cache of 4 pages of 2 tokens; A and B (prompt 3, output 4) both at t = 0.
//   0: prefill A, B (2 pages each, cache full)     10 + 6 = 16 -> A1 B1 at 16
//  16: decode A, B (kv 4: no new page)             10 + 2 = 12 -> A2 B2 at 28
//  28: A needs a 3rd page: B (last admitted) is preempted (recompute), A decodes;
//      B needs 3 pages for prompt + 2 tokens, 1 free: waits          11 -> A3 at 39
//  39: decode A                                    11      -> A4 at 50, done, 4 pages free
//  50: B prefills 5 tokens (3 pages)               15      -> B3 at 65
//  65: decode B                                    11      -> B4 at 76
TEST(LlmScheduler, KvCacheFullPreemptsByRecompute) {
  TinyTarget t;
  t.capacity_tokens = 8;
  LlmSimConfig c = config(100, 2);
  const LlmResult r = simulate_llm({{0, 3, 4}, {0, 3, 4}}, t, c);
  expect_times(r.per_request[0].token_s, {0.016, 0.028, 0.039, 0.050});
  expect_times(r.per_request[1].token_s, {0.016, 0.028, 0.065, 0.076});
  EXPECT_EQ(r.preemptions, 1u);
  EXPECT_EQ(r.per_request[1].preemptions, 1);
  EXPECT_NEAR(r.per_request[1].max_gap_s, 0.037, 1e-12);
  EXPECT_EQ(r.timeline[0].kv_used_tokens, 8);
  EXPECT_DOUBLE_EQ(r.kv_occupancy_max, 1.0);
  EXPECT_EQ(r.timeline[2].preempted, 1);
  EXPECT_EQ(r.timeline[2].waiting, 1);
  ASSERT_EQ(t.mixes[4].prefill.size(), 1u);
  EXPECT_EQ(t.mixes[4].prefill[0].tokens, 5);  // the prompt and the 2 tokens B had generated
}

// The same with swap (1 ms per token each way): B's 4 cached tokens go out in the 28 ms
// iteration (11 + 4 = 15 -> A3 at 43) and come back when A is done (50 + ... ):
//  43: decode A 11 -> A4 at 54; 54: swap B in (4 ms) and decode 11 -> B3 at 69; B4 at 80.
TEST(LlmScheduler, KvCacheFullPreemptsBySwap) {
  TinyTarget t;
  t.capacity_tokens = 8;
  LlmSimConfig c = config(100, 2);
  c.scheduler.preemption = Preemption::kSwap;
  const LlmResult r = simulate_llm({{0, 3, 4}, {0, 3, 4}}, t, c);
  expect_times(r.per_request[0].token_s, {0.016, 0.028, 0.043, 0.054});
  expect_times(r.per_request[1].token_s, {0.016, 0.028, 0.069, 0.080});
  EXPECT_EQ(r.preemptions, 1u);
  EXPECT_NEAR(r.timeline[2].swap_s, 0.004, 1e-12);
  EXPECT_NEAR(r.timeline[4].swap_s, 0.004, 1e-12);
  // Idle power during the 8 ms of swaps: 100 W x 72 ms of model steps + 50 W x 8 ms.
  EXPECT_NEAR(r.energy_j, 100 * 0.072 + 50 * 0.008, 1e-9);
}

// A token budget of 4 with chunked prefill: A (prompt 10, output 1), B (prompt 2, output 2) at 0.
//   0: A's first chunk 4                      14 ms
//  14: A's second chunk 4 (over 4 cached)     14 ms
//  28: A's last 2 (over 8), B's prompt 2      14 ms -> A1 (done), B1 at 42
//  42: decode B                               11 ms -> B2 at 53
TEST(LlmScheduler, ChunkedPrefillKeepsToTheTokenBudget) {
  TinyTarget t;
  const LlmResult r = simulate_llm({{0, 10, 1}, {0, 2, 2}}, t, config(4));
  expect_times(r.per_request[0].token_s, {0.042});
  expect_times(r.per_request[1].token_s, {0.042, 0.053});
  ASSERT_EQ(t.mixes.size(), 4u);
  ASSERT_EQ(t.mixes[1].prefill.size(), 1u);
  EXPECT_EQ(t.mixes[1].prefill[0].context_tokens, 4);
  ASSERT_EQ(t.mixes[2].prefill.size(), 2u);
  EXPECT_EQ(t.mixes[2].prefill[0].tokens, 2);
  EXPECT_EQ(t.mixes[2].prefill[0].context_tokens, 8);
  EXPECT_EQ(t.mixes[2].prefill[1].tokens, 2);
  for (const auto& m : t.mixes) {
    int64_t tokens = m.decode_sequences;
    for (const auto& p : m.prefill) tokens += p.tokens;
    EXPECT_LE(tokens, 4);
  }
}

// Without chunked prefill a prompt is prefilled whole: B (prompt 3) waits behind A's 4.
TEST(LlmScheduler, WholePromptsWithoutChunking) {
  TinyTarget t;
  LlmSimConfig c = config(5);
  c.scheduler.chunked_prefill = false;
  const LlmResult r = simulate_llm({{0, 4, 2}, {0, 3, 1}}, t, c);
  // 0: A (4) 14 ms; 14: decode A + B (3) = 4 tokens, 10 + 3 + 1 = 14 -> A2, B1 at 28.
  expect_times(r.per_request[0].token_s, {0.014, 0.028});
  expect_times(r.per_request[1].token_s, {0.028});
}

TEST(LlmScheduler, MaxRunningBoundsAdmission) {
  TinyTarget t;
  LlmSimConfig c = config();
  c.scheduler.max_running = 1;
  const LlmResult r = simulate_llm({{0, 2, 2}, {0, 2, 1}}, t, c);
  // 0: A (2) 12; 12: decode A 11 -> done at 23; 23: B (2) 12 -> 35.
  expect_times(r.per_request[0].token_s, {0.012, 0.023});
  expect_times(r.per_request[1].token_s, {0.035});
}

// Two replicas, round robin: each serves one request; shortest-queue sends the third to
// the replica that finished first.
TEST(LlmScheduler, ReplicasBehindOneDispatcher) {
  TinyTarget t;
  LlmSimConfig c = config();
  c.replicas = 2;
  const LlmResult r = simulate_llm({{0, 4, 1}, {0, 2, 1}, {0.013, 2, 1}}, t, c);
  EXPECT_EQ(r.per_request[0].replica, 0);
  EXPECT_EQ(r.per_request[1].replica, 1);
  EXPECT_EQ(r.per_request[2].replica, 0);
  expect_times(r.per_request[0].token_s, {0.014});
  expect_times(r.per_request[1].token_s, {0.012});
  expect_times(r.per_request[2].token_s, {0.026});  // replica 0 is busy until 14: 14 + 12
  c.dispatch = tessera::serve::Dispatch::kShortestQueue;
  const LlmResult s = simulate_llm({{0, 4, 1}, {0, 2, 1}, {0.013, 2, 1}}, t, c);
  EXPECT_EQ(s.per_request[2].replica, 1);  // replica 1 finished at 12
  expect_times(s.per_request[2].token_s, {0.025});
}

TEST(LlmScheduler, RefusesRequestsThatCannotFit) {
  TinyTarget t;
  t.capacity_tokens = 8;
  LlmSimConfig c = config(100, 2);
  auto message = [&](const std::vector<LlmRequest>& reqs) {
    try {
      check_requests_fit(reqs, t, c, "--trace t.csv");
    } catch (const tessera::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message({{0, 3, 4}}), "no error");
  EXPECT_EQ(message({{0, 3, 4}, {0, 7, 2}}),
            "--trace t.csv: request 2 (prompt 7 + output 2 tokens) does not fit the KV cache of tiny (8 tokens in 4 pages); "
            "use more chips or shorter requests");
  t.capacity_tokens = 1000;
  EXPECT_NE(message({{0, 95, 10}}).find("request 1 (prompt 95 + output 10 tokens) is longer than the model's context window of 100"),
            std::string::npos);
  EXPECT_NE(message({{0, 5, 0}}).find("the output length must be at least 1 token"), std::string::npos);
  c.scheduler.chunked_prefill = false;
  c.scheduler.max_batch_tokens = 8;
  EXPECT_NE(message({{0, 6, 4}}).find("without --chunked-prefill a prefill of 9 tokens must fit one iteration"), std::string::npos);
}

}  // namespace
