// Hazard regions of reused unified-buffer bytes (docs/reliability.md, D6): a chain of
// vector layers must not carry the regions of every tensor that ever lived in the same
// bytes (the N-th layer carried N/2 of them: compile memory quadratic in the layer count),
// while a region that an instruction of another unit touched stays.
#include <gtest/gtest.h>

#include <string>

#include "models/units/region_conflicts.h"
#include "sim/common/yaml_reader.h"
#include "sim/compiler/compiler.h"
#include "sim/config/arch_config.h"
#include "tests/support/tiny_arch.h"

using namespace tessera;
using namespace tessera::compiler;
using tessera::test_support::TinyArch;

namespace {

// x [16] -> r0 -> r1 -> ... -> r{n-1}, all relu, batch 1.
graph::Graph relu_chain(int n) {
  std::string y = "name: chain\nbatch: 1\ninputs: [{name: x, shape: [16]}]\nlayers:\n";
  std::string prev = "x";
  for (int i = 0; i < n; ++i) {
    y += "  - {name: r" + std::to_string(i) + ", op: relu, input: " + prev + "}\n";
    prev = "r" + std::to_string(i);
  }
  y += "outputs: [" + prev + "]\n";
  return graph::parse_graph_yaml(YamlNode::load_string(y, "chain.yaml"));
}

// x [16] -> f0 -> f1 -> ... -> f{n-1}, each fc 16 -> 16 with relu, batch `batch`.
graph::Graph fc_chain(int n, int batch) {
  std::string y = "name: fc_chain\nbatch: " + std::to_string(batch) + "\ninputs: [{name: x, shape: [16]}]\nlayers:\n";
  std::string prev = "x";
  for (int i = 0; i < n; ++i) {
    y += "  - {name: f" + std::to_string(i) + ", op: fc, units: 16, activation: relu, input: " + prev + "}\n";
    prev = "f" + std::to_string(i);
  }
  y += "outputs: [" + prev + "]\n";
  return graph::parse_graph_yaml(YamlNode::load_string(y, "fc_chain.yaml"));
}

size_t ub_writes(const Instruction& in) {
  size_t n = 0;
  for (const Region& r : in.writes) n += r.space == Space::kUnifiedBuffer ? 1 : 0;
  return n;
}

}  // namespace

// x@0 and r0@16; x dies after r0, so r1 lands on x's bytes, r2 on r0's, r3 on x's (and
// r1's) again. x was written by read_host (the host DMA, another unit than the vector
// unit that writes every r): r1's writer carries x's region and so waits for that DMA;
// once it is dispatched the DMA has finished and only the vector unit touches those bytes
// again, so r3 and r5 do not carry it (x has settled). r0, r1, ... were only ever touched
// by the vector unit, which runs its instructions in order: their regions are never carried.
TEST(HazardRegions, OnlyRegionsTouchedByAnotherUnitAreCarried) {
  const graph::Graph g = relu_chain(6);
  const Program p = compile(g, TinyArch{}.build());
  const int x = 0;  // the input is tensor 0, r_i is tensor i + 1
  std::vector<const Instruction*> writer(6, nullptr);
  const std::vector<Instruction> all = p.instructions.expanded();  // decoded: pointers into it stay valid
  for (const Instruction& in : all) {
    if (in.op == Opcode::kVector) writer[static_cast<size_t>(in.layer)] = &in;
  }
  for (int i = 0; i < 6; ++i) {
    ASSERT_NE(writer[static_cast<size_t>(i)], nullptr) << "layer r" << i;
    const Instruction& in = *writer[static_cast<size_t>(i)];
    EXPECT_EQ(in.writes.front().buffer, i + 1) << "layer r" << i;
    // r1, the first over x's bytes, carries x's region; every other layer only its own.
    const size_t expected = i == 1 ? 2 : 1;
    ASSERT_EQ(ub_writes(in), expected) << "layer r" << i;
    if (expected == 2) {
      EXPECT_EQ(in.writes[1].buffer, x) << "layer r" << i;
    }
  }
}

// The compile of a long chain stays linear: every instruction carries at most two
// unified-buffer regions in its writes (its own and the input's), not one per earlier
// tensor in the same bytes.
TEST(HazardRegions, LongChainCarriesABoundedNumberOfRegionsPerInstruction) {
  const int n = 3000;
  const Program p = compile(relu_chain(n), TinyArch{}.build());
  size_t most = 0, total = 0;
  for (const Instruction& in : p.instructions) {
    most = std::max(most, ub_writes(in));
    total += in.reads.size() + in.writes.size();
  }
  EXPECT_LE(most, 2u);
  EXPECT_LE(total, static_cast<size_t>(4 * n + 8));
}

// A chain of matrix layers: every tensor is read by a matmul (another unit than the vector
// unit that writes the next one), so no region is inert from the start; each settles once
// the first vector-unit writer over its bytes has carried it (and waited for that matmul).
// Before, the N-th layer's activates carried about N/2 regions (590 MB for 5,000 layers).
TEST(HazardRegions, LongMatrixChainCarriesABoundedNumberOfRegionsPerInstruction) {
  const int n = 2000;
  const Program p = compile(fc_chain(n, 4), TinyArch{}.build());
  size_t most = 0, total = 0, activates = 0;
  for (const Instruction& in : p.instructions) {
    most = std::max(most, ub_writes(in));
    total += in.reads.size() + in.writes.size();
    activates += in.op == Opcode::kActivate ? 1 : 0;
  }
  EXPECT_GE(activates, static_cast<size_t>(n));
  EXPECT_LE(most, 3u);
  EXPECT_LE(total, 4 * p.instructions.size());
}


// A later pass lays the same tensors over other bytes: its accesses wait for the previous
// pass's accesses of the bytes they overwrite, and not for the previous pass's accesses of
// the same tensors elsewhere, nor for each other's over one dead tensor. Decode attention
// (q [2,1,4], kt [2,4,8], v [2,8,4], int8: 8, 64 and 64 bytes a sample) at batch 3 in a
// 320-byte buffer runs passes of 2 and 1. Pass 1 reads q to 0x0, kt to 0x10 and v to 0x90
// (instructions 0-2); its context layer's first weight read (28) reads v. Pass 2 (after
// write_host 48) reads q to 0x0 (49), kt to 0x8 (50: over pass 1's q and kt) and v to 0x48
// (51: over pass 1's kt), then reads kt as weights (52) and writes its first scores at 0x88
// (57: over pass 1's v). Before, pass 2's weight read of kt waited for its v read (the read
// of v carried pass 1's kt region, which named the tensor kt, not its bytes), and the
// activate waited for the v read too (both carried pass 1's regions).
TEST(HazardRegions, ALaterPassWaitsForTheBytesItOverwritesOnly) {
  const graph::Graph g = graph::parse_graph_yaml(YamlNode::load_string(R"(
name: attn
batch: 1
inputs:
  - {name: q, shape: [2, 1, 4]}
  - {name: kt, shape: [2, 4, 8]}
  - {name: v, shape: [2, 8, 4]}
layers:
  - {name: scores, op: matmul, inputs: [q, kt]}
  - {name: probs, op: softmax, axis: -1}
  - {name: context, op: matmul, inputs: [probs, v]}
outputs: [context]
)", "attn.yaml"));
  TinyArch t;
  t.ub_capacity = "320";
  const Program p = compile(g, t.build(), {.batch = 3});
  ASSERT_EQ(p.sub_batch, 2);
  const std::vector<Instruction> in = p.instructions.expanded();
  ASSERT_EQ(in.size(), 77u);
  auto at = [&](size_t i, Opcode op, uint64_t ub) {
    EXPECT_EQ(in[i].op, op) << i;
    if (op == Opcode::kReadHost || op == Opcode::kActivate) EXPECT_EQ(in[i].ub_address, ub) << i;
    return in[i];
  };
  const Instruction kt1 = at(1, Opcode::kReadHost, 0x10), v1_weights = at(28, Opcode::kReadWeights, 0);
  const Instruction kt1_weights = at(3, Opcode::kReadWeights, 0);
  at(48, Opcode::kWriteHost, 0);
  const Instruction kt2 = at(50, Opcode::kReadHost, 0x8), v2 = at(51, Opcode::kReadHost, 0x48);
  const Instruction kt2_weights = at(52, Opcode::kReadWeights, 0), scores2 = at(57, Opcode::kActivate, 0x88);
  models::RegionConflicts c;
  EXPECT_NE(c.spaces(kt2_weights, kt2), 0);      // reads what 50 wrote
  EXPECT_EQ(c.spaces(kt2_weights, v2), 0);       // other bytes: was a conflict
  EXPECT_NE(c.spaces(kt2, kt1_weights), 0);      // overwrites what pass 1 read as weights
  EXPECT_NE(c.spaces(v2, kt1_weights), 0);       // likewise
  EXPECT_EQ(c.spaces(v2, v1_weights), 0);        // pass 1's v lay at 0x90-0x110: other bytes
  EXPECT_NE(c.spaces(scores2, v1_weights), 0);   // overwrites pass 1's v, which 28 read
  EXPECT_EQ(c.spaces(scores2, v2), 0);           // 0x88 and 0x48-0x88: was a conflict
  EXPECT_NE(c.spaces(kt2, kt1), 0);              // writes over bytes 1 wrote
}
