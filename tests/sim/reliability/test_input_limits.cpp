// D9, D14 and D22 of the reliability audit: inputs big or strange enough to exhaust the
// machine or break the JSON writer end with exit 2 and a message naming what to change,
// never std::bad_alloc or a JSON exception (exit 1).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "hostile.h"

using namespace hostile;

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;  // ASan reserves terabytes of shadow: address-space limits break it
#else
constexpr bool kAsan = false;
#endif

// `tessera <args>` under an address-space limit of `kib` KiB.
CliResult tessera_limited(long kib, const std::string& args, int timeout_s = 120) {
  return tessera_test::run_shell("ulimit -v " + std::to_string(kib) + " && timeout -s KILL " +
                                 std::to_string(timeout_s) + " " + exe() + " " + args);
}

}  // namespace

// ---------------------------------------------------------------- D14: memory exhaustion

// The audit's reproducer: --functional-batch 65536 on mlp0 under 3 GB ended in std::bad_alloc.
TEST(InputLimits, FunctionalBatchBeyondMemoryIsAnInputError) {
  if (kAsan) GTEST_SKIP() << "address-space limit and ASan do not mix";
  const fs::path dir = scratch("limits-functional");
  const CliResult r = tessera_limited(3000000, "run -q -a configs/tpu-v1.yaml -w workloads/tpu/mlp0.yaml --functional "
                                               "--functional-batch 65536 -o " + (dir / "out").string());
  HOSTILE_SKIP_ON_ASAN_FALSE_POSITIVE(r);
  expect_input_error(r, "use a smaller --functional-batch or --functional-calibration");
  EXPECT_TRUE(contains(r.output, "--functional-batch 65536")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "out" / "report.json"));
}

// The other knob: a small batch with many calibration batches.
TEST(InputLimits, FunctionalCalibrationBeyondMemoryIsAnInputError) {
  if (kAsan) GTEST_SKIP() << "address-space limit and ASan do not mix";
  const fs::path dir = scratch("limits-calibration");
  const CliResult r = tessera_limited(3000000, "run -q -a configs/tpu-v1.yaml -w workloads/tpu/mlp0.yaml --functional "
                                               "--functional-batch 16 --functional-calibration 65536 -o " +
                                                   (dir / "out").string());
  HOSTILE_SKIP_ON_ASAN_FALSE_POSITIVE(r);
  expect_input_error(r, "65536 calibration batches, more than this process may use");
}

// A program too long to simulate in minutes (more than 2^28 instructions) is refused from
// its tile count before lowering, through --batch and through a YAML graph's own batch (one
// whose instructions do not fold into repeats: the next test).
// A big program that folds (mlp0 at batch 16777216: 5,954,183 instructions, 485,462
// stored) is no longer refused: memory no longer grows with the instruction count (issue 19).
TEST(InputLimits, ProgramWithTooManyInstructionsIsAnInputError) {
  const fs::path dir = scratch("limits-instructions");
  const fs::path wide = write(dir / "wide.yaml",
                              "name: wide\nbatch: 1\ninputs: [{name: x, shape: [65536]}]\nlayers:\n"
                              "  - {name: fc, op: fc, units: 65536}\n");
  CliResult r = cli("compile -a configs/tpu-v1.yaml -w " + wide.string() + " --batch 16777216 -o " +
                    (dir / "l.txt").string(), 60);
  expect_input_error(r, "at batch 16777216 needs more than 268435456 instructions on 'tpu-v1' (256x256 array)");
  EXPECT_TRUE(contains(r.output, "reached at layer 'fc'")) << r.output;
  EXPECT_TRUE(contains(r.output, "use a smaller --batch")) << r.output;
  const fs::path g = write(dir / "big.yaml",
                           "name: big\nbatch: 16777216\ninputs: [{name: x, shape: [65536]}]\nlayers:\n"
                           "  - {name: fc, op: fc, units: 65536}\n");
  r = cli("run -q -a configs/tpu-v1.yaml -w " + g.string() + " -o " + (dir / "out").string(), 60);
  expect_input_error(r, "reached at layer 'fc'");
  EXPECT_FALSE(fs::exists(dir / "l.txt"));
  EXPECT_FALSE(fs::exists(dir / "out" / "report.json"));
}

// Issue 33 item 4: a batch whose passes would store more than 2^20 templates is refused
// after its first passes (sim/compiler/pass_templates.h), with the layer where the bound
// would be reached and the split that fits, instead of after lowering passes up to the
// bound: CNN1 at batch 100,000 on tpu-v1 (3,640 templates in the first pass of 55 samples,
// 3,644 in each after it: 3,640 + 287 x 3,644 >= 2^20 in pass 288; 287 passes fit, 15,785
// samples, so 7 runs) and BERT-base at batch 64 x 512 tokens on edge-npu-32 (one sample per
// pass: 17,860 then 17,859 per pass; 58 fit).
TEST(InputLimits, BatchOverTheStoredTemplateBoundIsRefusedAfterItsFirstPasses) {
  const fs::path dir = scratch("limits-templates");
  CliResult r = cli("run -q -a configs/tpu-v1.yaml -w workloads/tpu/cnn1.yaml --batch 100000 -o " +
                        (dir / "cnn1").string(), 60);
  expect_input_error(r, "workload 'cnn1' at batch 100000 (in passes of 55) on 'tpu-v1' would store about 6628432 "
                        "instruction templates");
  EXPECT_TRUE(contains(r.output, "projected from the first 2 of 1819 passes), more than the 1048576 one program may "
                                 "store")) << r.output;
  EXPECT_TRUE(contains(r.output, "it would reach them in pass 288, at layer 'b3_77d'; the largest batch that fits is "
                                 "15785 (287 passes): split the batch into 7 runs of at most 15785 samples"))
      << r.output;
  EXPECT_FALSE(fs::exists(dir / "cnn1" / "report.json"));
  const fs::path bert = fs::path(TESSERA_BINARY_DIR) / "workloads" / "onnx" / "bert_base.onnx";
  if (!fs::exists(bert)) GTEST_SKIP() << bert << " not generated (needs python3-onnx)";
  r = cli("run -q -a configs/edge-npu-32.yaml -w " + bert.string() + " --batch 64 --input-shape input_ids=64,512 -o " +
              (dir / "bert").string(), 60);
  expect_input_error(r, "workload 'bert_base' at batch 64 (in passes of 1) on 'edge-npu-32' would store about 1142973 "
                        "instruction templates");
  EXPECT_TRUE(contains(r.output, "about 17859 per pass of 1 sample, projected from the first 2 of 64 passes")) << r.output;
  EXPECT_TRUE(contains(r.output, "it would reach them in pass 59, at layer '/encoder/layer.8/attention/self/MatMul_1'; "
                                 "the largest batch that fits is 58 (58 passes): split the batch into 2 runs of at most "
                                 "58 samples"))
      << r.output;
  EXPECT_FALSE(fs::exists(dir / "bert" / "report.json"));
}

// ---------------------------------------------------------------- D9: text that is not UTF-8

TEST(InputLimits, NonUtf8ConfigNameIsAnInputError) {
  const fs::path dir = scratch("utf8-config");
  const fs::path arch = write(dir / "a.yaml", tpu_with("name: tpu-v1", "name: caf\xe9"));
  const CliResult r = cli("run -q -a " + arch.string() + " -w workloads/tpu/mlp1.yaml -o " + (dir / "out").string());
  expect_input_error(r, "name: not valid UTF-8 text (byte 0xE9 at offset 3)");
}

TEST(InputLimits, NonUtf8TechnologyAndLayerNamesAreInputErrors) {
  const fs::path dir = scratch("utf8-variants");
  const fs::path arch = write(dir / "a.yaml", tpu_with("technology: DDR3", "technology: DDR\xff"));
  CliResult r = cli("run -q -a " + arch.string() + " -w workloads/tpu/mlp1.yaml -o " + (dir / "out").string());
  expect_input_error(r, "weight_memory.technology: not valid UTF-8 text");
  // A YAML graph's layer name: a truncated two-byte sequence, then an overlong encoding.
  for (const std::string& bad : {std::string("r\xc3"), std::string("\xc0\xafx")}) {
    const fs::path g = write(dir / "g.yaml", "name: g\ninputs: [{name: x, shape: [16]}]\nlayers:\n  - {name: " + bad +
                                                 ", op: relu}\n");
    r = cli("run -q -a configs/tpu-v1.yaml -w " + g.string() + " -o " + (dir / "out").string());
    expect_input_error(r, "layers[0].name: not valid UTF-8 text");
  }
  EXPECT_FALSE(fs::exists(dir / "out" / "report.json"));
}

// A path is not a name: a config file whose name is not UTF-8 still runs; its report is
// valid JSON with the bad byte replaced (U+FFFD).
TEST(InputLimits, NonUtf8PathsStillGiveValidReports) {
  const fs::path dir = scratch("utf8-path");
  const fs::path arch = write(dir / "caf\xe9.yaml", tessera_test::slurp(kSrc / "configs/tpu-v1.yaml"));
  const CliResult r = cli("run -q -a '" + arch.string() + "' -w workloads/tpu/mlp1.yaml -o " + (dir / "out").string() +
                              " --trace " + (dir / "t.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto rep = nlohmann::json::parse(tessera_test::slurp(dir / "out" / "report.json"));
  EXPECT_TRUE(contains(rep["arch"]["source"].get<std::string>(), "caf\xef\xbf\xbd.yaml"));
  EXPECT_TRUE(nlohmann::json::accept(tessera_test::slurp(dir / "t.json")));
}

// ---------------------------------------------------------------- D22: messages (config and run side)

// Carriage returns alone as line breaks were read as one line ("empty document" or a
// syntax error); they are line breaks.
TEST(Messages, CarriageReturnLineBreaksAreLineBreaks) {
  const fs::path dir = scratch("msg-cr");
  std::string cfg = tessera_test::slurp(kSrc / "configs/tpu-v1.yaml");
  for (char& c : cfg) {
    if (c == '\n') c = '\r';
  }
  const fs::path arch = write(dir / "cr.yaml", cfg);
  CliResult r = cli("run -q -a " + arch.string() + " -w workloads/tpu/mlp1.yaml -o " + (dir / "out").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // A CR-only file with an error still points at the right line.
  write(arch, "# comment\rname: x\rclock_mhz: fast\r");
  r = cli("run -q -a " + arch.string() + " -w workloads/tpu/mlp1.yaml -o " + (dir / "o2").string());
  expect_input_error(r, "cr.yaml:3:");
}

// yaml-cpp's depth guard said "bad file".
TEST(Messages, DeepNestingIsNamed) {
  const fs::path dir = scratch("msg-deep");
  const fs::path a = write(dir / "deep.yaml", "name: " + std::string(3000, '[') + std::string(3000, ']') + "\n");
  expect_input_error(cli("run -q -a " + a.string() + " -w workloads/tpu/mlp1.yaml -o " + (dir / "o").string()),
                     "YAML nested too deeply");
  const fs::path g = write(dir / "g.yaml", "name: g\ninputs: " + std::string(3000, '{') + "\n");
  expect_input_error(cli("run -q -a configs/tpu-v1.yaml -w " + g.string() + " -o " + (dir / "o").string()),
                     "YAML nested too deeply");
}

// `run --help` named a baseline "haswell" that --baseline does not know.
TEST(Messages, RunHelpNamesOnlyKnownBaselines) {
  const CliResult help = cli("run --help");
  EXPECT_FALSE(contains(help.output, "(haswell,")) << help.output;
  EXPECT_TRUE(contains(help.output, "haswell-e5-2699v3")) << help.output;
}
