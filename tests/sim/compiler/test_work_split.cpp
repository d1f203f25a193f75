// The chip template's work split (docs/architecture.md "Work split"): a GEMM's output tiles
// over the matrix units of every core, syncs between serial and split work, and where graph
// inputs and outputs live. Expectations derived by hand on 4x4 arrays.
#include <gtest/gtest.h>

#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/compiler/compiler.h"
#include "tests/support/tiny_arch.h"

using namespace tessera;
using namespace tessera::compiler;
using tessera::test_support::TinyArch;

namespace {

graph::Graph parse(const std::string& text) { return graph::parse_graph_yaml(YamlNode::load_string(text, "g.yaml")); }

// fc of 3 rows: K = 4 (one K tile of the 4x4 array), N = 16 (four N tiles of 4).
const char* kWideFc = R"(
name: wide
batch: 3
inputs: [{name: x, shape: [4]}]
layers:
  - {name: fc1, op: fc, units: 16}
)";

ArchConfig two_by_two() {
  TinyArch t;
  t.cores = 2;
  t.matrix_units = 2;
  return t.build();
}

struct Step {
  Opcode op;
  int core;
  int unit;
};

std::vector<Step> steps(const Program& p) {
  std::vector<Step> out;
  for (const auto& in : p.instructions) out.push_back(Step{in.op, in.core, in.unit});
  return out;
}

}  // namespace

TEST(WorkSplit, FourNTilesGoOneToEachMatrixUnitOfTwoCores) {
  const ArchConfig arch = two_by_two();
  ASSERT_EQ(arch.active_matrix_units(), 4);
  const Program p = compile(parse(kWideFc), arch);
  using O = Opcode;
  // Slots are core-major: tile 0 -> core 0 unit 0, 1 -> core 0 unit 1, 2 -> core 1 unit 0,
  // 3 -> core 1 unit 1, all in one wave: each unit's weight read, then the wave's four
  // matmuls (K is one step), then its four activates. The input arrives on core 0 (serial
  // work); core 1's scratchpad is filled only by its own DMA from device memory, so core 0
  // writes x there (dma_write, 12 B), a sync on both cores follows, and core 1 reads its
  // operand panel (all 3 rows of x: the N split gives it columns, not rows) before its tiles;
  // the weight reads follow (with several units a read waits only for its own unit's matmul).
  // After the wave's activates core 1 writes its two result tiles to device memory, one block
  // (3 rows x columns [8, 16): 24 B, one strided DMA); after another sync core 0 reads it back
  // (its scratchpad then holds the whole output) and writes the output to the host; each core
  // halts.
  const std::vector<Step> expected = {
      {O::kReadHost, 0, 0},    {O::kDmaWrite, 0, 0},    {O::kSync, 0, 0},        {O::kSync, 1, 0},
      {O::kDmaRead, 1, 0},
      {O::kReadWeights, 0, 0}, {O::kReadWeights, 0, 1}, {O::kReadWeights, 1, 0}, {O::kReadWeights, 1, 1},
      {O::kMatmul, 0, 0},      {O::kMatmul, 0, 1},      {O::kMatmul, 1, 0},      {O::kMatmul, 1, 1},
      {O::kActivate, 0, 0},    {O::kActivate, 0, 0},    {O::kActivate, 1, 0},    {O::kActivate, 1, 0},
      {O::kDmaWrite, 1, 0},    {O::kSync, 0, 0},        {O::kSync, 1, 0},        {O::kDmaRead, 0, 0},
      {O::kWriteHost, 0, 0},   {O::kHalt, 0, 0},        {O::kHalt, 1, 0}};
  const auto got = steps(p);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].op, expected[i].op) << "instruction " << i;
    EXPECT_EQ(got[i].core, expected[i].core) << "instruction " << i;
    EXPECT_EQ(got[i].unit, expected[i].unit) << "instruction " << i;
  }
  // Each unit has its own pair of accumulator halves (slot x 2 + half): 0, 2, 4, 6.
  EXPECT_EQ(p.instructions[9].writes[0].buffer, 0);
  EXPECT_EQ(p.instructions[10].writes[0].buffer, 2);
  EXPECT_EQ(p.instructions[11].writes[0].buffer, 4);
  EXPECT_EQ(p.instructions[12].writes[0].buffer, 6);
  EXPECT_EQ(p.instructions[15].reads[0].buffer, 4);  // core 1's first activate drains its unit 0's half
  // Core 1's panel: x's 3 rows x 4 columns; its results: fc1's columns [8, 16).
  EXPECT_EQ(p.instructions[4].writes[0].row_end, 3);
  EXPECT_EQ(p.instructions[4].bytes, 12u);
  for (int i : {17, 20}) {
    const Region r = i == 17 ? p.instructions[i].reads[0] : p.instructions[i].writes[0];
    EXPECT_EQ(r.col_begin, 8) << i;
    EXPECT_EQ(r.col_end, 16) << i;
    EXPECT_EQ(r.row_end, 3) << i;
    EXPECT_EQ(p.instructions[i].bytes, 24u) << i;
  }
  EXPECT_EQ(p.core_copy_bytes_out, 12u + 24u);  // x by core 0, core 1's two tiles
  EXPECT_EQ(p.core_copy_bytes_in, 12u + 24u);   // core 1's panel, core 0's gather
  for (int i : {9, 10, 11, 12}) {
    EXPECT_EQ(p.instructions[i].tile.m, 3);
    EXPECT_EQ(p.instructions[i].tile.k, 4);
    EXPECT_EQ(p.instructions[i].tile.n, 4);
  }
  // N split: every weight byte is fetched once (4 x 16 = 4 x 4 x 4 int8).
  EXPECT_EQ(p.weight_bytes_read, 64u);
  EXPECT_EQ(p.host_input_bytes, 12u);   // 3 x 4
  EXPECT_EQ(p.host_output_bytes, 48u);  // 3 x 16
}

TEST(WorkSplit, OneNTileIsSplitAlongMSoEveryUnitHasWork) {
  // fc of 8 rows, K = 4, N = 4: one N tile for 4 units, so M splits into ceil(4 / 1) = 4
  // chunks of ceil(8 / 4) = 2 rows, one per unit; each unit fetches the same 4x4 weights.
  const char* kTallFc = R"(
name: tall
batch: 8
inputs: [{name: x, shape: [4]}]
layers:
  - {name: fc1, op: fc, units: 4}
)";
  const Program p = compile(parse(kTallFc), two_by_two());
  std::vector<std::pair<int, int>> slots;
  for (const auto& in : p.instructions) {
    if (in.op != Opcode::kMatmul) continue;
    EXPECT_EQ(in.tile.m, 2);
    EXPECT_EQ(in.tile.k, 4);
    EXPECT_EQ(in.tile.n, 4);
    slots.emplace_back(in.core, in.unit);
  }
  const std::vector<std::pair<int, int>> expected = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};
  EXPECT_EQ(slots, expected);
  EXPECT_EQ(p.weight_bytes_read, 64u);  // 16 weight bytes, fetched by each of the 4 units
  EXPECT_EQ(p.layers[0].macs, 8 * 4 * 4);
}

TEST(WorkSplit, OneCoreWithTwoUnitsNeedsNoSync) {
  TinyArch t;
  t.matrix_units = 2;
  const Program p = compile(parse(kWideFc), t.build());
  int syncs = 0, unit1 = 0;
  for (const auto& in : p.instructions) {
    syncs += in.op == Opcode::kSync;
    EXPECT_EQ(in.core, 0);
    unit1 += in.op == Opcode::kMatmul && in.unit == 1;
  }
  EXPECT_EQ(syncs, 0);  // one controller orders everything on one core
  EXPECT_EQ(unit1, 2);  // tiles 1 and 3
}

TEST(WorkSplit, WithoutMegacoreOnlyCoreZeroRuns) {
  TinyArch t;
  t.cores = 2;
  ArchConfig arch = t.build();
  arch.megacore = false;
  EXPECT_EQ(arch.active_cores(), 1);
  const Program p = compile(parse(kWideFc), arch);
  for (const auto& in : p.instructions) EXPECT_EQ(in.core, 0);
}

TEST(Residency, DeviceResidentTensorsMoveByDmaNotOverTheHostLink) {
  // The same fc, its input and output in device memory: dma_read of 3 x 4 and dma_write of
  // 3 x 16 bytes, nothing over PCIe; the weight reads are unchanged.
  TinyArch t;
  t.residency = "{inputs: device, outputs: device}";
  const Program device = compile(parse(kWideFc), t.build());
  const Program host = compile(parse(kWideFc), TinyArch{}.build());
  int dma_reads = 0, dma_writes = 0, host_io = 0;
  for (const auto& in : device.instructions) {
    dma_reads += in.op == Opcode::kDmaRead;
    dma_writes += in.op == Opcode::kDmaWrite;
    host_io += in.op == Opcode::kReadHost || in.op == Opcode::kWriteHost;
  }
  EXPECT_EQ(dma_reads, 1);
  EXPECT_EQ(dma_writes, 1);
  EXPECT_EQ(host_io, 0);
  EXPECT_EQ(device.device_input_bytes, 12u);
  EXPECT_EQ(device.device_output_bytes, 48u);
  EXPECT_EQ(device.host_input_bytes, 0u);
  EXPECT_EQ(device.host_output_bytes, 0u);
  EXPECT_EQ(host.host_input_bytes, 12u);
  EXPECT_EQ(host.host_output_bytes, 48u);
  EXPECT_EQ(host.device_input_bytes, 0u);
  EXPECT_EQ(device.weight_bytes_read, host.weight_bytes_read);
}

TEST(Residency, HostResidencyOnAChipWithoutAHostLinkIsAnError) {
  TinyArch t;
  t.host_link = false;
  t.residency = "{inputs: host}";
  try {
    t.build();
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("residency.inputs"), std::string::npos) << msg;
    EXPECT_NE(msg.find("no `pcie:` section"), std::string::npos) << msg;
  }
  // Without a host link the default is device memory.
  TinyArch d;
  d.host_link = false;
  const ArchConfig arch = d.build();
  EXPECT_FALSE(arch.has_host_link);
  EXPECT_EQ(arch.residency.inputs, Residency::kDevice);
  EXPECT_EQ(arch.residency.outputs, Residency::kDevice);
}

TEST(Residency, PerRunOverrideParsesClassesAndRefusesTypos) {
  ResidencyConfig r;
  apply_residency_override(r, "device");
  EXPECT_EQ(r.inputs, Residency::kDevice);
  EXPECT_EQ(r.outputs, Residency::kDevice);
  apply_residency_override(r, "outputs=host");
  EXPECT_EQ(r.inputs, Residency::kDevice);
  EXPECT_EQ(r.outputs, Residency::kHost);
  EXPECT_THROW(apply_residency_override(r, "hbm"), InputError);
  EXPECT_THROW(apply_residency_override(r, "input=device"), InputError);
  EXPECT_EQ(r.weights, Residency::kDevice);
  apply_residency_override(r, "weights=host");
  EXPECT_EQ(r.weights, Residency::kHost);
  EXPECT_EQ(r.inputs, Residency::kDevice);  // left as it was
  apply_residency_override(r, "host");      // no class: inputs and outputs only
  EXPECT_EQ(r.inputs, Residency::kHost);
  EXPECT_EQ(r.weights, Residency::kHost);
  apply_residency_override(r, "weights=device,inputs=device");
  EXPECT_EQ(r.weights, Residency::kDevice);
  EXPECT_EQ(r.inputs, Residency::kDevice);
  EXPECT_THROW(apply_residency_override(r, "weights=hbm"), InputError);
}

TEST(Residency, HostResidentWeightsAreReadOverTheHostLink) {
  // kWideFc: K = 4, N = 16: four 4x4 int8 weight tiles of 16 bytes. With weights in host
  // memory every read_weights is from=host: 4 x 16 = 64 bytes over PCIe, none from weight
  // memory. The input (3 x 4 = 12 B) and output (3 x 16 = 48 B) still cross the host link
  // (TinyArch's default residency); the program is the same but for the weights' source.
  TinyArch t;
  t.residency = "{weights: host}";
  const Program host = compile(parse(kWideFc), t.build());
  const Program device = compile(parse(kWideFc), TinyArch{}.build());
  int from_host = 0, from_memory = 0;
  for (const auto& in : host.instructions) {
    if (in.op != Opcode::kReadWeights) continue;
    from_host += in.weight_source == WeightSource::kHost;
    from_memory += in.weight_source == WeightSource::kWeightMemory;
    EXPECT_EQ(in.bytes, 16u);
  }
  EXPECT_EQ(from_host, 4);
  EXPECT_EQ(from_memory, 0);
  EXPECT_EQ(host.weight_bytes_read, 64u);
  EXPECT_EQ(host.host_weight_bytes, 64u);
  EXPECT_EQ(host.layers[0].weight_bytes, 64u);
  EXPECT_EQ(host.host_input_bytes, 12u);
  EXPECT_EQ(host.host_output_bytes, 48u);
  EXPECT_EQ(device.weight_bytes_read, 64u);
  EXPECT_EQ(device.host_weight_bytes, 0u);
  ASSERT_EQ(host.instructions.size(), device.instructions.size());
  for (size_t i = 0; i < host.instructions.size(); ++i) {
    EXPECT_EQ(host.instructions[i].op, device.instructions[i].op) << i;
  }
  EXPECT_NE(host.listing().find("read_weights from=host bytes=16 host=0x0"), std::string::npos) << host.listing();
}

TEST(Residency, HostResidentWeightsNeedNoRoomInDeviceMemory) {
  // 1024 x 1100 int8 weights = 1,126,400 bytes, more than TinyArch's 1 MiB (1,048,576 B)
  // weight memory: refused there, compiled when they live in host memory.
  const char* big = R"(
name: big
batch: 1
inputs: [{name: x, shape: [1024]}]
layers:
  - {name: fc1, op: fc, units: 1100}
)";
  EXPECT_THROW(compile(parse(big), TinyArch{}.build()), InputError);
  TinyArch t;
  t.residency = "{weights: host}";
  const Program p = compile(parse(big), t.build());
  EXPECT_EQ(p.host_weight_bytes, 1126400u);
}

TEST(Residency, HostResidentWeightsOnAChipWithoutAHostLinkIsAnError) {
  TinyArch t;
  t.host_link = false;
  t.residency = "{weights: host}";
  try {
    t.build();
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("tiny.yaml:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("residency.weights: 'host' needs a host link"), std::string::npos) << msg;
  }
}

// Each core has its own scratchpad of unified_buffer.capacity (docs/architecture.md "Work
// split"): the plan is one layout that every active core keeps at the same offsets, so it must
// fit one core's capacity, not the sum over the cores. 2 cores x 2 units of 4x4, 64 bytes each.
namespace {

ArchConfig two_by_two_of(const std::string& capacity) {
  TinyArch t;
  t.cores = 2;
  t.matrix_units = 2;
  t.ub_capacity = capacity;
  return t.build();
}

}  // namespace

TEST(PerCoreScratchpad, ABatchThatFittedBothCoresTogetherRunsInPassesOfWhatOneCoreHolds) {
  // kWideFc at batch 4: a sample is x (4 B) + fc1 (16 B) = 20 B; batch 4 needs 80 B, more than
  // one core's 64 B (it fitted the 128 B of the two together), so the batch runs in passes of
  // floor(64 / 20) = 3 samples, then 1. One core of 128 B holds all 4.
  const graph::Graph g = parse(kWideFc);
  CompileOptions o;
  o.batch = 4;
  const Program two = compile(g, two_by_two_of("64"), o);
  EXPECT_EQ(two.sub_batch, 3);
  EXPECT_EQ(two.scratchpads, 2);
  EXPECT_EQ(two.ub_peak_bytes, 60u);  // 3 x (4 + 16), in each core's scratchpad
  EXPECT_NE(two.listing().find("unified buffer peak 60 bytes per core (2 scratchpads, one layout)"), std::string::npos)
      << two.listing().substr(0, 300);
  EXPECT_EQ(two.host_input_bytes, 16u);   // 4 x 4: every sample still crosses once
  EXPECT_EQ(two.host_output_bytes, 64u);  // 4 x 16
  TinyArch one;
  one.ub_capacity = "128";
  const Program single = compile(g, one.build(), o);
  EXPECT_EQ(single.sub_batch, 4);
  EXPECT_EQ(single.scratchpads, 1);
  EXPECT_EQ(single.ub_peak_bytes, 80u);
  EXPECT_NE(single.listing().find("unified buffer peak 80 bytes, weight memory"), std::string::npos);
}

TEST(PerCoreScratchpad, ATensorLiveAcrossALayerThatOneCoreCannotHoldIsSpilled) {
  // One sample: x (20 B) is live until `y`; fc2 needs x + h1 (28) + h2 (20) = 68 B, more than
  // one core's 64 B (the 128 B of both held it all). Belady evicts x, the only tensor fc2 does
  // not read; as a graph input its host copy is still valid, so nothing is written out, and it
  // is read back (20 B, a spill) for y. h2 takes the 20 bytes x left at offset 0, so nothing
  // else moves.
  const char* kResidual = R"(
name: residual
batch: 1
inputs: [{name: x, shape: [20]}]
layers:
  - {name: fc1, op: fc, units: 28}
  - {name: fc2, op: fc, units: 20}
  - {name: fc3, op: fc, units: 20}
  - {name: y, op: add, inputs: [x, fc3]}
)";
  const Program p = compile(parse(kResidual), two_by_two_of("64"));
  EXPECT_EQ(p.sub_batch, 1);
  EXPECT_EQ(p.spill_bytes_out, 0u);
  EXPECT_EQ(p.spill_bytes_in, 20u);
  EXPECT_EQ(p.layers[3].spill_bytes_in, 20u);  // y reads x back
  EXPECT_EQ(p.host_input_bytes, 20u);          // x's first read
  EXPECT_EQ(p.ub_peak_bytes, 60u);             // y at [40, 60), beside h3 [20, 40) and x back at [0, 20)
  const Program joint = compile(parse(kResidual), two_by_two_of("128"));
  EXPECT_EQ(joint.spill_bytes_out + joint.spill_bytes_in, 0u);
}

TEST(PerCoreScratchpad, TheErrorNamesOneCoresCapacity) {
  // One sample of x (32 B) and fc1 (48 B): 80 B, more than one core's 64 B (not than 128 B),
  // and one row per sample cannot be tiled.
  const char* kTooWide = R"(
name: too_wide
batch: 1
inputs: [{name: x, shape: [32]}]
layers:
  - {name: fc1, op: fc, units: 48}
)";
  try {
    compile(parse(kTooWide), two_by_two_of("64"));
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("g.yaml: workload 'too_wide' does not fit the scratchpad of each core of 'tiny' (64 bytes per core, 2 cores)"),
              std::string::npos)
        << m;
  }
  EXPECT_NO_THROW(compile(parse(kTooWide), two_by_two_of("80")));
}

TEST(PerCoreScratchpad, OperandsInDeviceMemoryNeedNoCopyAndResultsAreWrittenWhereTheyWereMade) {
  // kWideFc with x and fc1 in device memory: core 1 reads its panel (x, 12 B) straight from
  // device memory, with no dma_write by core 0 and so no sync before the split work; its two
  // result tiles (24 B) are part of the output already, so they are not gathered: after the
  // sync core 0 writes only its own two tiles (columns [0, 8): 24 B, one block).
  TinyArch t;
  t.cores = 2;
  t.matrix_units = 2;
  t.residency = "{inputs: device, outputs: device}";
  const Program p = compile(parse(kWideFc), t.build());
  using O = Opcode;
  const std::vector<Step> expected = {
      {O::kDmaRead, 0, 0},     {O::kDmaRead, 1, 0},
      {O::kReadWeights, 0, 0}, {O::kReadWeights, 0, 1}, {O::kReadWeights, 1, 0}, {O::kReadWeights, 1, 1},
      {O::kMatmul, 0, 0},      {O::kMatmul, 0, 1},      {O::kMatmul, 1, 0},      {O::kMatmul, 1, 1},
      {O::kActivate, 0, 0},    {O::kActivate, 0, 0},    {O::kActivate, 1, 0},    {O::kActivate, 1, 0},
      {O::kDmaWrite, 1, 0},    {O::kSync, 0, 0},        {O::kSync, 1, 0},        {O::kDmaWrite, 0, 0},
      {O::kHalt, 0, 0},        {O::kHalt, 1, 0}};
  const auto got = steps(p);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].op, expected[i].op) << "instruction " << i;
    EXPECT_EQ(got[i].core, expected[i].core) << "instruction " << i;
  }
  EXPECT_EQ(p.instructions[17].reads[0].col_begin, 0);
  EXPECT_EQ(p.instructions[17].reads[0].col_end, 8);
  EXPECT_EQ(p.instructions[17].bytes, 24u);
  EXPECT_EQ(p.device_input_bytes, 12u);
  EXPECT_EQ(p.device_output_bytes, 48u);   // 24 B from each core
  EXPECT_EQ(p.core_copy_bytes_in, 12u);    // core 1's panel
  EXPECT_EQ(p.core_copy_bytes_out, 0u);
}
