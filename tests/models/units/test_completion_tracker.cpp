// The completion tracker holds a window of instructions (issue 19): those that finished
// before a later dispatch leave it, their times summed per layer; queries of them answer a
// past cycle. Hand-written sequences against the sums and answers they must give.
#include <gtest/gtest.h>

#include <stdexcept>

#include "models/units/completion_tracker.h"

namespace tessera::models {
namespace {

TEST(CompletionTracker, FinishedInstructionsLeaveTheWindowInOrder) {
  CompletionTracker t;
  t.dispatched(0, 10, 0);
  t.dispatched(1, 12, 0);
  EXPECT_EQ(t.finish(0), CompletionTracker::kUnknown);
  EXPECT_EQ(t.finish(5), CompletionTracker::kUnknown);  // not dispatched yet
  EXPECT_EQ(t.dispatch(1), 12);
  EXPECT_EQ(t.dispatch(2), -1);
  t.finish_at(1, 20);
  t.finish_at(0, 40);  // finishes after the one behind it
  t.dispatched(2, 30, 1);
  // 0 has not finished by cycle 30, so neither it nor 1 behind it leaves.
  EXPECT_EQ(t.window_size(), 3u);
  EXPECT_EQ(t.finish(1), 20);
  t.finish_at(2, 45);
  t.dispatched(3, 41, 1);  // 0 and 1 leave (finished by 41); 2 stays (45)
  EXPECT_EQ(t.window_size(), 2u);
  EXPECT_LE(t.finish(0), 41);  // left: a cycle in the past
  EXPECT_LE(t.finish(1), 41);
  EXPECT_EQ(t.finish(2), 45);
  EXPECT_EQ(t.dispatch(3), 41);
  EXPECT_THROW(t.dispatch(0), std::logic_error);  // no longer held
  t.finish_at(3, 50);
  t.retire_all();
  EXPECT_EQ(t.window_size(), 0u);
  ASSERT_EQ(t.layer_times().size(), 2u);
  EXPECT_EQ(t.layer_times()[0].first_dispatch_cycle, 10);
  EXPECT_EQ(t.layer_times()[0].last_finish_cycle, 40);
  EXPECT_EQ(t.layer_times()[0].instructions, 2);
  EXPECT_EQ(t.layer_times()[1].first_dispatch_cycle, 30);
  EXPECT_EQ(t.layer_times()[1].last_finish_cycle, 50);
  EXPECT_EQ(t.layer_times()[1].instructions, 2);
  EXPECT_EQ(t.last_finish(), 50);
}

TEST(CompletionTracker, RefusesOutOfOrderDispatchAndUnknownInstructions) {
  CompletionTracker t;
  EXPECT_THROW(t.dispatched(1, 0, 0), std::logic_error);  // 0 comes first
  t.dispatched(0, 0, -1);                                 // no layer: counted in no layer
  EXPECT_THROW(t.finish_at(1, 5), std::logic_error);      // not dispatched
  t.finish_at(0, 5);
  t.retire_all();
  EXPECT_TRUE(t.layer_times().empty());
  EXPECT_EQ(t.last_finish(), 5);
}

TEST(CompletionTracker, AnInstructionThatNeverFinishesMakesTheEndUnknown) {
  CompletionTracker t;
  t.dispatched(0, 3, 0);
  t.retire_all();
  EXPECT_EQ(t.last_finish(), CompletionTracker::kUnknown);
}

}  // namespace
}  // namespace tessera::models
