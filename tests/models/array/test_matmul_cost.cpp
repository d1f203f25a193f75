// The matmul stream cost shared by the matrix unit and the compiler (review D5: the two
// copies rounded differently, so at rate 0.7 a 21-cycle stream cost 31 in the compiler's
// estimate and 30 in the simulation).
#include <gtest/gtest.h>

#include "models/array/matmul_cost.h"

namespace tessera::array {
namespace {

TEST(MatmulCost, RateDividesTheStreamRoundingUp) {
  EXPECT_EQ(matmul_stream_cost(21, 0.7, 0, 1).mac_cycles, 30);  // 21 / 0.7 = 30.000000000000004 in doubles
  EXPECT_EQ(matmul_stream_cost(21, 1.0, 0, 1).mac_cycles, 21);
  EXPECT_EQ(matmul_stream_cost(21, 0.5, 0, 1).mac_cycles, 42);
  EXPECT_EQ(matmul_stream_cost(21, 0.25, 0, 1).mac_cycles, 84);
  EXPECT_EQ(matmul_stream_cost(5, 0.3, 0, 1).mac_cycles, 17);  // 16.67 rounds up
  EXPECT_EQ(matmul_stream_cost(7, 0.5, 0, 1).mac_cycles, 14);
}

TEST(MatmulCost, UnifiedBufferPortPacesASlowerStream) {
  // 21 rows x 4 B at 4 B/cycle: 21 cycles, under the 30 MAC cycles at rate 0.7.
  EXPECT_EQ(matmul_stream_cost(21, 0.7, 84, 4).ub_read_cycles, 21);
  EXPECT_EQ(matmul_stream_cycles(21, 0.7, 84, 4), 30);
  // 21 rows x 8 B at 4 B/cycle: 42 cycles, the port is the bottleneck.
  EXPECT_EQ(matmul_stream_cycles(21, 0.7, 168, 4), 42);
  // 85 B at 4 B/cycle: 22 cycles (rounded up).
  EXPECT_EQ(matmul_stream_cost(21, 1.0, 85, 4).ub_read_cycles, 22);
}

}  // namespace
}  // namespace tessera::array
