// The analytic baseline model on hand-computed layers: a compute-bound and a
// memory-bound GEMM on a CPU and on a GPU, a vector layer, the efficiency curve
// (tile padding, waves, k amortisation, variant choice), residency and the host link.
#include <gtest/gtest.h>

#include "models/baseline/model.h"
#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"

using namespace tessera;
using namespace tessera::baseline;

namespace {

// CPU: 1 TFLOPS fp32, 100 GB/s at 50% sustained = 50 GB/s, 64 KiB on chip (32 KiB for
// activations) at 1000 GB/s, 4 cores with 16x16 blocks at 0.8, k_half 64, 1 us per layer.
BaselineSpec cpu() {
  return parse_baseline_spec(YamlNode::load_string(R"(name: cpu
kind: cpu
precision: fp32
peak_tops: {fp32: 1.0}
memory: {capacity: 1 GiB, bandwidth_gb_per_s: 100, efficiency: 0.5}
on_chip: {capacity: 64 KiB, bandwidth_gb_per_s: 1000}
efficiency: {parallel_units: 4, k_half: 64, tiles: [{m: 16, n: 16, max: 0.8}]}
overheads: {launch_us: 1}
)", "cpu.yaml"), "cpu");
}

// GPU: 100 TOPS fp16 (10 fp32), 1000 GB/s fully sustained, 1 MiB L2 at 5000 GB/s,
// 10 SMs with 128x128 tiles at 0.8 or 32x32 tiles at 0.4, no k amortisation,
// 5 us per kernel, host link 10 GB/s + 2 us per transfer.
BaselineSpec gpu() {
  return parse_baseline_spec(YamlNode::load_string(R"(name: gpu
kind: gpu
precision: fp16
peak_tops: {fp32: 10, fp16: 100}
memory: {capacity: 16 GiB, bandwidth_gb_per_s: 1000}
on_chip: {capacity: 1 MiB, bandwidth_gb_per_s: 5000}
efficiency: {parallel_units: 10, k_half: 0, tiles: [{m: 128, n: 128, max: 0.8}, {m: 32, n: 32, max: 0.4}]}
overheads: {launch_us: 5}
host_link: {bandwidth_gb_per_s: 10, latency_us: 2}
)", "gpu.yaml"), "gpu");
}

// One FC layer reading a graph input and writing a graph output.
Workload one_fc(int64_t m, int64_t k, int64_t n) {
  Workload w;
  w.name = "fc";
  w.batch = m;
  LayerWork l;
  l.name = "fc";
  l.op = "fc";
  l.matrix = true;
  l.m = m, l.k = k, l.n = n;
  l.macs = m * k * n;
  l.weights = k * n;
  l.inputs = {{m * k, true}};
  l.output = {m * n, true};
  w.layers.push_back(l);
  w.host_input_elements = m * k;
  w.host_output_elements = m * n;
  return w;
}

constexpr double kTol = 1e-15;

}  // namespace

TEST(EfficiencyCurve, PaddingWavesAndReduction) {
  const EfficiencyCurve c = cpu().efficiency;
  const GemmTileShape& t = c.tiles[0];
  // 64 x 64 output = 16 blocks of 16x16 = 4 full waves over 4 cores: no loss.
  EXPECT_DOUBLE_EQ(c.spatial(t, 64, 64), 1.0);
  // 17 x 16: 2 blocks (one almost empty) in one wave of 4 slots: 272 / (4 * 256).
  EXPECT_DOUBLE_EQ(c.spatial(t, 17, 16), 272.0 / 1024.0);
  // 80 x 16: 5 blocks, 2 waves: 1280 / (2 * 4 * 256).
  EXPECT_DOUBLE_EQ(c.spatial(t, 80, 16), 1280.0 / 2048.0);
  EXPECT_DOUBLE_EQ(c.reduction(64), 0.5);
  EXPECT_DOUBLE_EQ(c.reduction(192), 0.75);
  EXPECT_DOUBLE_EQ(c.at(64, 192, 64), 0.8 * 1.0 * 0.75);
  EXPECT_DOUBLE_EQ(c.at(0, 192, 64), 0.0);
}

TEST(EfficiencyCurve, PicksTheBestKernelVariant) {
  const EfficiencyCurve c = gpu().efficiency;
  // 1024 x 1280 fills 80 128x128 tiles = 8 waves of 10: 0.8 beats the 32x32 variant's 0.4.
  EXPECT_EQ(c.best(1024, 4096, 1280), 0u);
  EXPECT_DOUBLE_EQ(c.at(1024, 4096, 1280), 0.8);
  // 32 x 320: the big tile runs 3 mostly empty blocks on 10 SMs (10240 / (10 * 16384) * 0.8 = 0.05);
  // the small tile fills 10 blocks on 10 SMs exactly (0.4).
  EXPECT_EQ(c.best(32, 1024, 320), 1u);
  EXPECT_DOUBLE_EQ(c.at(32, 1024, 320), 0.4);
}

TEST(BaselineModel, CpuComputeBoundLayer) {
  // fc 64 x 256 x 64 in fp32. Efficiency 0.8 * spatial 1 * 256/(256+64) = 0.64.
  //  compute  2 * 1,048,576 ops / (1e12 * 0.64)                    = 3.2768 us
  //  DRAM     weights 256*64*4 = 65,536 B (> 32 KiB: not resident) + input 64*256*4 = 65,536 B (graph input)
  //           + output 64*64*4 = 16,384 B (graph output) = 147,456 B at 50 GB/s = 2.94912 us
  //  latency  max(3.2768, 2.94912) + 1 us launch                   = 4.2768 us, compute-bound
  const Estimate e = estimate(cpu(), one_fc(64, 256, 64));
  ASSERT_EQ(e.layers.size(), 1u);
  const LayerEstimate& l = e.layers[0];
  EXPECT_FALSE(e.weights_on_chip);
  EXPECT_DOUBLE_EQ(l.efficiency, 0.64);
  EXPECT_NEAR(l.compute_s, 3.2768e-6, kTol);
  EXPECT_DOUBLE_EQ(l.dram_bytes, 147456);
  EXPECT_DOUBLE_EQ(l.on_chip_bytes, 0);
  EXPECT_NEAR(l.dram_s, 2.94912e-6, kTol);
  EXPECT_NEAR(l.overhead_s, 1e-6, kTol);
  EXPECT_NEAR(l.latency_s, 4.2768e-6, kTol);
  EXPECT_EQ(l.bound, "compute");
  EXPECT_NEAR(e.latency_s, 4.2768e-6, kTol);  // a CPU has no host link
  EXPECT_DOUBLE_EQ(e.host_link.total_s(), 0);
  EXPECT_DOUBLE_EQ(e.weight_bytes, 65536);
}

TEST(BaselineModel, CpuMemoryBoundLayer) {
  // fc 1 x 1024 x 1024 (batch 1) in fp32.
  //  efficiency 0.8 * (1*1024 / (16 waves * 4 * 256)) * 1024/1088 = 0.8 * 0.0625 * 0.94118
  //  compute   2 * 1,048,576 / (1e12 * eff)                                        = 44.56 us
  //  DRAM      weights 4 MiB + input 4 KiB + output 4 KiB = 4,202,496 B at 50 GB/s = 84.04992 us
  const Estimate e = estimate(cpu(), one_fc(1, 1024, 1024));
  const LayerEstimate& l = e.layers[0];
  const double eff = 0.8 * 0.0625 * (1024.0 / 1088.0);
  EXPECT_NEAR(l.efficiency, eff, 1e-15);
  EXPECT_NEAR(l.compute_s, 2.0 * 1048576 / (1e12 * eff), kTol);
  EXPECT_DOUBLE_EQ(l.dram_bytes, 4202496);
  EXPECT_NEAR(l.dram_s, 84.04992e-6, kTol);
  EXPECT_NEAR(l.latency_s, 84.04992e-6 + 1e-6, kTol);
  EXPECT_EQ(l.bound, "memory");
}

TEST(BaselineModel, GpuComputeBoundLayerWithHostLink) {
  // fc 1024 x 4096 x 1280 in fp16 (2 B): efficiency 0.8 (128x128 tiles, 8 full waves, k_half 0).
  //  compute   2 * 5,368,709,120 / (100e12 * 0.8)                         = 134.217728 us
  //  DRAM      weights 10,485,760 + input 8,388,608 + output 2,621,440 B = 21,495,808 B at 1000 GB/s = 21.495808 us
  //  layer     134.217728 + 5 us launch                                    = 139.217728 us
  //  host link input 8,388,608 B / 10 GB/s + 2 us = 840.8608 us; output 2,621,440 B -> 264.144 us
  const Estimate e = estimate(gpu(), one_fc(1024, 4096, 1280));
  const LayerEstimate& l = e.layers[0];
  EXPECT_EQ(l.tile, 0);
  EXPECT_DOUBLE_EQ(l.efficiency, 0.8);
  EXPECT_NEAR(l.compute_s, 134.217728e-6, 1e-14);
  EXPECT_DOUBLE_EQ(l.dram_bytes, 21495808);
  EXPECT_NEAR(l.dram_s, 21.495808e-6, kTol);
  EXPECT_NEAR(l.latency_s, 139.217728e-6, 1e-14);
  EXPECT_EQ(l.bound, "compute");
  EXPECT_DOUBLE_EQ(e.host_link.to_device_bytes, 8388608);
  EXPECT_DOUBLE_EQ(e.host_link.to_host_bytes, 2621440);
  EXPECT_NEAR(e.host_link.to_device_s, 840.8608e-6, 1e-14);
  EXPECT_NEAR(e.host_link.to_host_s, 264.144e-6, 1e-14);
  EXPECT_NEAR(e.latency_s, 139.217728e-6 + 840.8608e-6 + 264.144e-6, 1e-13);
}

TEST(BaselineModel, GpuMemoryBoundLayer) {
  // fc 8 x 8192 x 8192 in fp16: a batch-8 matrix-vector-like product.
  //  32x32 tiles: 256 blocks, 26 waves: spatial 65,536 / (26 * 10 * 1024) -> efficiency 0.4 * 0.246 = 0.0985
  //  (the 128x128 tiles reach only 0.8 * 65,536 / (7 * 10 * 16384) = 0.046)
  //  compute   2 * 536,870,912 / (100e12 * 0.0985)                   = 109.05 us
  //  DRAM      weights 134,217,728 + input 131,072 + output 131,072 B at 1000 GB/s = 134.479872 us
  const Estimate e = estimate(gpu(), one_fc(8, 8192, 8192));
  const LayerEstimate& l = e.layers[0];
  const double eff = 0.4 * 65536.0 / (26.0 * 10 * 1024);
  EXPECT_EQ(l.tile, 1);
  EXPECT_NEAR(l.efficiency, eff, 1e-15);
  EXPECT_NEAR(l.compute_s, 2.0 * 536870912 / (100e12 * eff), 1e-14);
  EXPECT_DOUBLE_EQ(l.dram_bytes, 134217728.0 + 131072 + 131072);
  EXPECT_NEAR(l.dram_s, 134.479872e-6, 1e-14);
  EXPECT_NEAR(l.latency_s, 134.479872e-6 + 5e-6, 1e-14);
  EXPECT_EQ(l.bound, "memory");
}

TEST(BaselineModel, PrecisionOverrideChangesPeakAndBytes) {
  // The same layer in fp32 on the GPU: 10 TOPS and 4-byte elements.
  const Estimate e = estimate(gpu(), one_fc(1024, 4096, 1280), Precision::kFp32);
  EXPECT_EQ(e.precision, Precision::kFp32);
  EXPECT_NEAR(e.layers[0].compute_s, 2.0 * 5368709120.0 / (10e12 * 0.8), 1e-13);
  EXPECT_DOUBLE_EQ(e.layers[0].dram_bytes, 2 * 21495808.0);
  EXPECT_THROW(estimate(cpu(), one_fc(1, 1, 1), Precision::kInt8), InputError);
}

TEST(BaselineModel, VectorLayersAreBandwidthBoundAndActivationsStayOnChip) {
  // fc (graph input -> 16 x 64 activation) then add(activation, activation) -> output.
  // The 16x64 fp32 activation is 4 KiB <= 32 KiB: it stays on chip for the add.
  //  add: on-chip bytes = 2 inputs x 4096 + output 4096 (graph output -> DRAM)
  Workload w = one_fc(16, 64, 64);
  w.layers[0].output.host = false;
  LayerWork add;
  add.name = "add";
  add.op = "add";
  add.inputs = {{16 * 64, false}, {16 * 64, false}};
  add.output = {16 * 64, true};
  w.layers.push_back(add);
  LayerWork flat;
  flat.name = "flat";
  flat.op = "flatten";
  flat.layout_only = true;
  w.layers.push_back(flat);
  const Estimate e = estimate(cpu(), w);
  ASSERT_EQ(e.layers.size(), 3u);
  // fc: weights 16 KiB fit in half of 64 KiB (and are all the weights): resident on chip.
  EXPECT_TRUE(e.weights_on_chip);
  EXPECT_DOUBLE_EQ(e.layers[0].on_chip_bytes, 64 * 64 * 4 + 16 * 64 * 4);  // weights + its output
  EXPECT_DOUBLE_EQ(e.layers[0].dram_bytes, 16 * 64 * 4);                   // the graph input
  const LayerEstimate& v = e.layers[1];
  EXPECT_DOUBLE_EQ(v.compute_s, 0);
  EXPECT_DOUBLE_EQ(v.on_chip_bytes, 2 * 4096);
  EXPECT_DOUBLE_EQ(v.dram_bytes, 4096);
  EXPECT_NEAR(v.on_chip_s, 8192 / 1e12, kTol);
  EXPECT_NEAR(v.dram_s, 4096 / 50e9, kTol);
  EXPECT_NEAR(v.latency_s, 4096 / 50e9 + 1e-6, kTol);
  EXPECT_EQ(v.bound, "overhead");  // 82 ns of memory traffic vs 1 us of dispatch
  EXPECT_EQ(e.layers[2].bound, "none");
  EXPECT_DOUBLE_EQ(e.layers[2].latency_s, 0);
  EXPECT_NEAR(e.latency_s, e.layers[0].latency_s + v.latency_s, kTol);
}
