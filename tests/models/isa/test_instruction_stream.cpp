// The compact program (issue 19): repeats with counts and strides, folded as instructions
// are appended, against hand-written expansions and structures.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "models/isa/program.h"

namespace tessera::isa {
namespace {

Instruction read_weights(uint64_t dram, uint64_t bytes = 1024) {
  Instruction in;
  in.op = Opcode::kReadWeights;
  in.layer = 0;
  in.bytes = bytes;
  in.weight_address = dram;
  return in;
}

Instruction activate(int acc, uint64_t ub, int64_t row0) {
  Instruction in;
  in.op = Opcode::kActivate;
  in.layer = 0;
  in.rows = 32;
  in.cols = 32;
  in.ub_address = ub;
  in.reads.push_back(Region{Space::kAccumulators, acc, 0, 32, 0, 32});
  in.writes.push_back(Region{Space::kUnifiedBuffer, 7, row0, row0 + 32, 0, 32});
  return in;
}

// Every field the units or the listing read.
void expect_same(const Instruction& a, const Instruction& b, size_t i) {
  EXPECT_EQ(a.text(), b.text()) << i;
  EXPECT_EQ(a.layer, b.layer) << i;
  EXPECT_EQ(a.weight_tiles, b.weight_tiles) << i;
  EXPECT_EQ(a.bytes, b.bytes) << i;
  EXPECT_EQ(a.ub_address, b.ub_address) << i;
  EXPECT_EQ(a.weight_address, b.weight_address) << i;
  EXPECT_EQ(a.tile.m, b.tile.m) << i;
  EXPECT_EQ(a.tile.k, b.tile.k) << i;
  EXPECT_EQ(a.tile.n, b.tile.n) << i;
  EXPECT_EQ(a.ub_read_bytes, b.ub_read_bytes) << i;
  EXPECT_EQ(a.ub_write_bytes, b.ub_write_bytes) << i;
  EXPECT_EQ(a.rows, b.rows) << i;
  EXPECT_EQ(a.cols, b.cols) << i;
  EXPECT_EQ(a.elements, b.elements) << i;
  EXPECT_EQ(a.element_bytes, b.element_bytes) << i;
  EXPECT_EQ(a.spill, b.spill) << i;
  EXPECT_EQ(a.accumulate, b.accumulate) << i;
  EXPECT_EQ(std::vector<Region>(a.reads.begin(), a.reads.end()), std::vector<Region>(b.reads.begin(), b.reads.end())) << i;
  EXPECT_EQ(std::vector<Region>(a.writes.begin(), a.writes.end()), std::vector<Region>(b.writes.begin(), b.writes.end()))
      << i;
}

// The stream reads back exactly `want`: by the cursor, by index and through expanded().
void expect_expands_to(const InstructionStream& s, const std::vector<Instruction>& want) {
  ASSERT_EQ(s.size(), want.size());
  size_t i = 0;
  for (auto it = s.begin(); it != s.end(); ++it, ++i) {
    ASSERT_LT(i, want.size());
    EXPECT_EQ(it.index(), i);
    expect_same(*it, want[i], i);
  }
  EXPECT_EQ(i, want.size());
  for (i = 0; i < want.size(); ++i) expect_same(s[i], want[i], i);
  const std::vector<Instruction> e = s.expanded();
  ASSERT_EQ(e.size(), want.size());
  for (i = 0; i < want.size(); ++i) expect_same(e[i], want[i], i);
}

TEST(InstructionStream, OneRepeatWithAStride) {
  std::vector<Instruction> want;
  for (uint64_t i = 0; i < 64; ++i) want.push_back(read_weights(0x80000 + i * 0x20000));
  InstructionStream s;
  for (const auto& in : want) s.push_back(in);
  ASSERT_EQ(s.items().size(), 1u);
  const auto& rep = s.items()[0];
  ASSERT_NE(rep.loop, nullptr);
  EXPECT_EQ(rep.loop->count, 64u);
  EXPECT_EQ(rep.size, 64u);
  ASSERT_EQ(rep.loop->body.size(), 1u);
  ASSERT_EQ(rep.loop->stride.size(), 1u);
  Stride want_stride;
  want_stride.d[4] = 0x20000;  // weight_address
  EXPECT_EQ(rep.loop->stride[0], want_stride);
  EXPECT_EQ(Stride::field_name(4), "dram");
  EXPECT_EQ(s.templates(), 1u);
  EXPECT_EQ(s.repeats(), 1u);
  expect_expands_to(s, want);
}

TEST(InstructionStream, NestedRepeatsAndRegionStrides) {
  // 3 output rows x (4 weight tiles, one activate): the inner reads step 0x100, the rows
  // 0x10000; each activate alternates the accumulator half and moves 32 rows down.
  std::vector<Instruction> want;
  for (int r = 0; r < 6; ++r) {
    for (int c = 0; c < 4; ++c) want.push_back(read_weights(0x10000 * static_cast<uint64_t>(r) + 0x100 * static_cast<uint64_t>(c)));
    want.push_back(activate(r % 2, 0x40 * static_cast<uint64_t>(r), 32 * r));
  }
  InstructionStream s;
  for (const auto& in : want) s.push_back(in);
  expect_expands_to(s, want);
  // repeat 3 { repeat 2 { repeat 4 { read_weights }, activate } }: the accumulator half
  // alternates, so two rows are the inner body and the pairs repeat.
  ASSERT_EQ(s.items().size(), 1u);
  const auto& outer = *s.items()[0].loop;
  EXPECT_EQ(outer.count, 3u);
  ASSERT_EQ(outer.body.size(), 1u);
  const auto& pair = *outer.body[0].loop;
  EXPECT_EQ(pair.count, 2u);
  ASSERT_EQ(pair.body.size(), 2u);
  EXPECT_EQ(pair.body[0].loop->count, 4u);
  EXPECT_EQ(pair.body[0].loop->stride[0].d[4], 0x100);  // dram per tile
  EXPECT_EQ(pair.stride[0].d[4], 0x10000);               // dram per row
  EXPECT_EQ(pair.stride[1].d[3], 0x40);                  // activate: ub per row
  const int acc_buffer = Stride::kScalars;                // read0.buffer
  EXPECT_EQ(pair.stride[1].d[acc_buffer], 1);
  const int write_row_begin = Stride::kScalars + Stride::kStridedRegions * Stride::kRegionFields + 1;
  EXPECT_EQ(Stride::field_name(write_row_begin), "write0.row_begin");
  EXPECT_EQ(pair.stride[1].d[write_row_begin], 32);
  EXPECT_EQ(outer.stride[0].d[4], 0x20000);  // two rows
  EXPECT_EQ(outer.stride[1].d[acc_buffer], 0);
  EXPECT_EQ(outer.stride[1].d[write_row_begin], 64);
  EXPECT_EQ(s.templates(), 2u);
  EXPECT_EQ(s.repeats(), 3u);
}

TEST(InstructionStream, WhatAStrideCannotExpressIsNotFolded) {
  InstructionStream s;
  // Non-constant step: 0, 1, 3 -> a repeat of two, then one instruction.
  for (uint64_t a : {0u, 1u, 3u}) s.push_back(read_weights(a));
  ASSERT_EQ(s.items().size(), 2u);
  EXPECT_EQ(s.items()[0].loop->count, 2u);
  EXPECT_EQ(s.item_start(1), 2u);
  // A flag, the opcode, a region's space or the shared tail differ: never one repeat.
  InstructionStream t;
  Instruction mm;
  mm.op = Opcode::kMatmul;
  mm.writes.push_back(Region{Space::kAccumulators, 0, 0, 8, 0, 8});
  t.push_back(mm);
  mm.accumulate = true;
  t.push_back(mm);
  EXPECT_EQ(t.items().size(), 2u);
  const std::vector<Region> table = {Region{Space::kUnifiedBuffer, 3, 0, 1, 0, 1}};
  const isa::SharedRegionList tail_a{&table, {0}};
  const isa::SharedRegionList tail_b = tail_a;  // equal contents, stored twice: not the same tail
  InstructionStream u;
  Instruction x = activate(0, 0, 0), y = activate(0, 0, 0);
  x.writes.set_shared_tail(&tail_a);
  y.writes.set_shared_tail(&tail_b);
  u.push_back(x);
  u.push_back(y);
  EXPECT_EQ(u.items().size(), 2u);
  Instruction z = activate(0, 0, 0);
  z.writes.set_shared_tail(&tail_a);
  u.push_back(z);  // the same tail as x's is a repeat of y? no: y's tail differs
  EXPECT_EQ(u.items().size(), 3u);
  Instruction w = activate(0, 0, 0);
  w.writes.set_shared_tail(&tail_a);
  u.push_back(w);  // z and w: the same tail, a repeat of two
  EXPECT_EQ(u.items().size(), 3u);
  EXPECT_EQ(u.items()[2].loop->count, 2u);
  expect_expands_to(u, {x, y, z, w});
}

TEST(InstructionStream, ExpandedModeStoresEveryInstruction) {
  InstructionStream s;
  s.set_compact(false);
  std::vector<Instruction> want;
  for (uint64_t i = 0; i < 10; ++i) want.push_back(read_weights(i * 64));
  for (const auto& in : want) s.push_back(in);
  EXPECT_EQ(s.items().size(), 10u);
  EXPECT_EQ(s.repeats(), 0u);
  expect_expands_to(s, want);
}

TEST(InstructionStream, CopiesAreDeep) {
  InstructionStream s;
  for (uint64_t i = 0; i < 5; ++i) s.push_back(read_weights(i * 64));
  InstructionStream c = s;
  c.push_back(read_weights(5 * 64));  // extends c's repeat only
  EXPECT_EQ(s.size(), 5u);
  EXPECT_EQ(s.items()[0].loop->count, 5u);
  EXPECT_EQ(c.items()[0].loop->count, 6u);
}

// Random programs made of affine patterns (nested loops over a few templates with random
// strides) and random noise: the stream always reads back exactly what was pushed.
TEST(InstructionStream, RandomPatternsReadBackExactly) {
  std::mt19937_64 rng(19);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<Instruction> want;
    const int pieces = 1 + static_cast<int>(rng() % 6);
    for (int p = 0; p < pieces; ++p) {
      const int outer = 1 + static_cast<int>(rng() % 5), inner = 1 + static_cast<int>(rng() % 6);
      const int64_t so = static_cast<int64_t>(rng() % 7) - 3, si = static_cast<int64_t>(rng() % 5) - 2;
      const bool noise = rng() % 4 == 0;
      for (int o = 0; o < outer; ++o) {
        for (int i = 0; i < inner; ++i) want.push_back(read_weights(static_cast<uint64_t>(1000 + so * o * 64 + si * i)));
        want.push_back(activate(o % 2, static_cast<uint64_t>(o) * 32, (o % 3) * 32));
        if (noise) want.push_back(read_weights(rng() % 5, 7));
      }
    }
    InstructionStream s;
    for (const auto& in : want) s.push_back(in);
    SCOPED_TRACE(trial);
    expect_expands_to(s, want);
    EXPECT_LE(s.items().size(), want.size());
  }
}

}  // namespace
}  // namespace tessera::isa
