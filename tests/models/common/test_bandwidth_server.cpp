// BandwidthServer serves requests in arrival order: a request that arrives before an
// already reserved one takes the earliest idle gap that fits (backfill), and a
// reservation never moves once made.
#include <gtest/gtest.h>

#include "models/common/bandwidth_server.h"

namespace tessera::models {
namespace {

TEST(BandwidthServer, InOrderArrivalsQueueBackToBack) {
  BandwidthServer s;
  EXPECT_EQ(s.serve(0, 10), 10);   // [0, 10)
  EXPECT_EQ(s.serve(5, 10), 20);   // waits for the first: [10, 20)
  EXPECT_EQ(s.serve(30, 4), 34);   // idle from 20 to 30: [30, 34)
  EXPECT_EQ(s.busy_until(), 34);
  EXPECT_EQ(s.busy_cycles(), 24);
  ASSERT_EQ(s.log().intervals().size(), 3u);
  EXPECT_EQ(s.log().intervals()[1].begin, 10);
  EXPECT_EQ(s.log().intervals()[1].end, 20);
}

TEST(BandwidthServer, EarlierRequestBackfillsBeforeAFutureReservation) {
  // A unit reserves the port for a stream that starts at cycle 100; a request that
  // arrives at cycle 0 is then served at once, not after the reservation (call order
  // would have given [110, 130)).
  BandwidthServer s;
  EXPECT_EQ(s.serve(100, 10, /*layer=*/1, /*instruction=*/7), 110);  // [100, 110)
  EXPECT_EQ(s.serve(0, 20, 2, 8), 20);                               // [0, 20)
  EXPECT_EQ(s.busy_until(), 110);
  EXPECT_EQ(s.busy_cycles(), 30);
  const auto& log = s.log().intervals();  // call order
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[1].begin, 0);
  EXPECT_EQ(log[1].end, 20);
  EXPECT_EQ(log[1].layer, 2);
  EXPECT_EQ(log[1].instruction, 8);
}

TEST(BandwidthServer, GapTooShortPushesTheRequestPastTheReservation) {
  BandwidthServer s;
  EXPECT_EQ(s.serve(100, 10), 110);  // [100, 110)
  EXPECT_EQ(s.serve(0, 20), 20);     // [0, 20)
  EXPECT_EQ(s.serve(95, 10), 120);   // only 5 idle cycles before 100: [110, 120)
  EXPECT_EQ(s.serve(20, 80), 100);   // exactly fills [20, 100)
  EXPECT_EQ(s.serve(0, 1), 121);     // no gap left before 120
  EXPECT_EQ(s.busy_cycles(), 121);
}

TEST(BandwidthServer, TwoInitiatorsInterleaveByArrival) {
  // Initiator A streams 8-cycle bursts every 20 cycles, reserved ahead of time;
  // initiator B's requests, issued afterwards, land in A's idle gaps when they fit.
  BandwidthServer s;
  for (int64_t t = 0; t < 100; t += 20) EXPECT_EQ(s.serve(t, 8), t + 8);  // A: [0,8) [20,28) ... [80,88)
  EXPECT_EQ(s.serve(3, 12), 20);   // B arrives inside [0,8): the gap [8,20) fits 12 exactly
  EXPECT_EQ(s.serve(21, 12), 40);   // busy until 28, then [28,40) fits exactly
  EXPECT_EQ(s.serve(21, 13), 101);  // the 12-cycle gaps [48,60) and [68,80) are too short: [88,101)
  EXPECT_EQ(s.serve(50, 5), 55);    // [50,55) inside the gap [48,60)
  EXPECT_EQ(s.busy_until(), 101);
  EXPECT_EQ(s.busy_cycles(), 5 * 8 + 12 + 12 + 13 + 5);
}

}  // namespace
}  // namespace tessera::models
