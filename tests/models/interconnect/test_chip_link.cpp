// Collectives on the chip-link model (models/interconnect/chip_link.h), each time derived by
// hand from the algorithm the model plays: a step's transfer holds its link for
// stripe bytes / bandwidth and arrives one latency per hop later; the next step waits for it.
// Every case uses 100 GB/s per port per direction (1e11 B/s) and 1 us latency, so a byte count
// of 1e6 on one link serializes in 10 us.
#include <gtest/gtest.h>

#include <stdexcept>

#include "models/interconnect/chip_link.h"
#include "sim/common/error.h"

using tessera::models::ChipLinkParams;
using tessera::models::all_gather_s;
using tessera::models::all_reduce_s;
using tessera::models::reduce_scatter_s;

namespace {

ChipLinkParams ring(int ports, bool wraparound = true) {
  ChipLinkParams p;
  p.bandwidth_gb_per_s = 100;
  p.latency_ns = 1000;
  p.ports = ports;
  p.topology = ChipLinkParams::Topology::kRing;
  p.wraparound = wraparound;
  return p;
}

ChipLinkParams torus(int ports, int x = 0, int y = 0) {
  ChipLinkParams p = ring(ports);
  p.topology = ChipLinkParams::Topology::kTorus2d;
  p.torus_x = x;
  p.torus_y = y;
  return p;
}

constexpr double kUs = 1e-6;

}  // namespace

TEST(ChipLink, AllReduceOnATwoChipRing) {
  // 1e6 bytes, 2 ports (one link to each neighbour). Half the data goes each way round
  // (5e5 bytes per direction); a 2-chip ring is 1 reduce-scatter + 1 all-gather step of
  // 5e5 / 2 = 2.5e5 bytes: 2.5 us on the link + 1 us latency = 3.5 us; the all-gather step
  // waits for the reduce-scatter chunk: 2 x 3.5 = 7 us
  // (= 2(N-1) (latency + bytes / (N ports bandwidth)) = 2 (1 + 1e6 / (2 x 2 x 1e11) s)).
  EXPECT_NEAR(all_reduce_s(ring(2), 2, 1'000'000), 7 * kUs, 1e-15);
}

TEST(ChipLink, AllReduceOnAFourChipRingStripesOverParallelLinks) {
  // 8e6 bytes, 4 ports: 2 links to each neighbour. 4e6 bytes per direction; 6 steps
  // (3 reduce-scatter + 3 all-gather) of 4e6 / 4 = 1e6 bytes, striped 5e5 per link: 5 us
  // + 1 us latency each: 6 x 6 = 36 us.
  EXPECT_NEAR(all_reduce_s(ring(4), 4, 8'000'000), 36 * kUs, 1e-15);
}

TEST(ChipLink, AllReduceOnATwoByTwoTorus) {
  // 8e6 bytes, 4 ports (one per neighbour: +x, -x, +y, -y). Four streams of 2e6 bytes:
  // +x then +y, -x then -y, +y then +x, -y then -x, each on its own links at every step.
  // A stream: reduce-scatter along its first ring (2 chips): 1e6 bytes, 10 us; along the
  // second on the remaining 1e6: 5e5 bytes, 5 us; all-gather back: 5 us, then 10 us.
  // 4 steps of latency: 10 + 5 + 5 + 10 + 4 x 1 = 34 us.
  EXPECT_NEAR(all_reduce_s(torus(4), 4, 8'000'000), 34 * kUs, 1e-15);
  EXPECT_NEAR(all_reduce_s(torus(4, 2, 2), 4, 8'000'000), 34 * kUs, 1e-15);  // the same shape, given
}

TEST(ChipLink, StreamsThatMeetOnALinkQueue) {
  // Two chips on a torus_2d form a 1 x 2 torus: the x-first streams have no x ring and go
  // straight to y, where the y-first streams are: two 2e6-byte streams share each directed
  // +y (and -y) link. Step 1: the first holds it 0-10 us (arrives at 11), the second 10-20
  // (arrives at 21). Step 2: the first is ready at 11 but the link is busy until 20: 20-30,
  // the second ready at 21 goes 30-40 and arrives at 41 us: the link's 4 x 10 us of bytes +
  // one latency. Contention, not a formula: half the ports are idle.
  EXPECT_NEAR(all_reduce_s(torus(4), 2, 8'000'000), 41 * kUs, 1e-15);
}

TEST(ChipLink, AMeshAxisSharesItsLinksBetweenTheTwoDirections) {
  // 2 chips, 2 ports, no wraparound link: one link pair joins them instead of two. 4e6
  // bytes, 2e6 per direction, chunks of 1e6 (10 us). Each directed link carries one stream's
  // forward hop and the other's closing hop: step 1 at 0-10 and 10-20 (arrive 11, 21);
  // step 2 at 20-30 and 30-40 (the link is busy until 30): 41 us. With wraparound, 2 x 11 = 22.
  EXPECT_NEAR(all_reduce_s(ring(2, false), 2, 4'000'000), 41 * kUs, 1e-15);
  EXPECT_NEAR(all_reduce_s(ring(2, true), 2, 4'000'000), 22 * kUs, 1e-15);
}

TEST(ChipLink, AMeshRingsClosingHopRoutesBackOverThreeLinks) {
  // 4 chips in a line (0-1-2-3), 2 ports, 8e6 bytes: streams A (+) and B (-) of 4e6, 6 steps
  // of 1e6 bytes (10 us). A's closing hop 3 -> 0 runs over links 3->2, 2->1, 1->0 at once
  // (3 hops, 3 latencies), B's 0 -> 3 over 0->1, 1->2, 2->3: every directed link carries
  // one A and one B transfer per step. Step k: A holds the links [20k, 20k + 10] us (A is
  // created first), B [20k + 10, 20k + 20]; both are ready again (at +11 or +13) before the
  // links free, so the links pace it: B's last closing hop ends at 120 and arrives 3 x 1 us
  // later, 123 us. With wraparound links: 6 x 11 = 66 us.
  EXPECT_NEAR(all_reduce_s(ring(2, false), 4, 8'000'000), 123 * kUs, 1e-15);
  EXPECT_NEAR(all_reduce_s(ring(2, true), 4, 8'000'000), 66 * kUs, 1e-15);
}

TEST(ChipLink, AllGatherOnAFourChipRing) {
  // Shards of 1e6 bytes, 2 ports: half of each shard goes each way, 3 steps of 5e5 bytes
  // (5 us + 1 us): 18 us, each chip ends with 4e6 bytes.
  EXPECT_NEAR(all_gather_s(ring(2), 4, 1'000'000), 18 * kUs, 1e-15);
}

TEST(ChipLink, ReduceScatterIsTheFirstHalfOfAnAllReduce) {
  // 8e6 bytes, 2 ports, 4 chips: 4e6 per direction, 3 steps of 1e6 bytes (10 us + 1 us) = 33 us.
  EXPECT_NEAR(reduce_scatter_s(ring(2), 4, 8'000'000), 33 * kUs, 1e-15);
}

TEST(ChipLink, OneChipOrNoBytesTakeNoTime) {
  EXPECT_EQ(all_reduce_s(ring(2), 1, 1'000'000), 0.0);
  EXPECT_EQ(all_gather_s(torus(4), 4, 0), 0.0);
}

TEST(ChipLink, SameCallSameResult) {
  const double a = all_reduce_s(torus(4), 8, 12'345'679), b = all_reduce_s(torus(4), 8, 12'345'679);
  EXPECT_EQ(a, b);
  EXPECT_GT(a, 0.0);
}

TEST(ChipLink, ATorusShapeThatDoesNotMatchTheChipsIsAnInputError) {
  try {
    all_reduce_s(torus(4, 4, 4), 8, 1000);
    FAIL() << "no error";
  } catch (const tessera::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("4 x 4"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("8 chips"), std::string::npos) << e.what();
  }
  EXPECT_THROW(all_reduce_s(ring(2), 0, 1000), std::invalid_argument);
  EXPECT_THROW(all_reduce_s(ring(2), 2, -1), std::invalid_argument);
  EXPECT_THROW(all_reduce_s(ChipLinkParams{}, 2, 1000), std::invalid_argument);  // no links
}
