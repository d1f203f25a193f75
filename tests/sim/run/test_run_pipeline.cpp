// The run pipeline in process: the same numbers as the CLI's goldens, outputs rendered as
// one set that is written only on request, and inputs an output must not overwrite.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/common/error.h"
#include "sim/run/pipeline.h"

using namespace tessera;
namespace fs = std::filesystem;

namespace {

const std::string kSrc = TESSERA_SOURCE_DIR;

run::CompileRequest mlp0() {
  run::CompileRequest r;
  r.arch = kSrc + "/configs/tpu-v1.yaml";
  r.workload = kSrc + "/workloads/tpu/mlp0.yaml";
  return r;
}

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::path(TESSERA_BINARY_DIR) / "test-out" / "run-pipeline" / name;
  fs::remove_all(dir);
  fs::create_directories(dir.parent_path());
  return dir;
}

nlohmann::json golden(const std::string& app) {
  std::ifstream in(kSrc + "/tests/golden/tpu-v1-" + app + ".json");
  return nlohmann::json::parse(in);
}

// The golden was written by `tessera run`; the library must give the same run.
TEST(RunPipeline, Mlp0GivesTheGoldensCyclesAndWritesOnlyOnRequest) {
  const fs::path out = scratch("mlp0");
  run::RunRequest request;
  request.inputs = mlp0();
  request.out_dir = out.string();
  // The trace's directory must exist already; the output directory is created.
  const fs::path trace = out.parent_path() / "mlp0-trace.json";
  fs::remove(trace);
  request.trace_file = trace.string();
  const run::RunResult r = run::run(request);
  const nlohmann::json want = golden("mlp0");
  EXPECT_EQ(r.stats.total_cycles, want["latency_cycles"].get<int64_t>());
  EXPECT_EQ(r.stats.total_cycles, 442488);  // the golden's figure, spelled out
  EXPECT_EQ(r.report["summary"]["latency_cycles"].get<int64_t>(), want["latency_cycles"].get<int64_t>());
  EXPECT_EQ(r.report["summary"]["cycles"]["weight_stall"].get<int64_t>(), want["cycles"]["weight_stall"].get<int64_t>());
  EXPECT_EQ(r.report["summary"]["instructions"].get<int64_t>(), want["instructions"].get<int64_t>());
  EXPECT_TRUE(r.functional_line.empty());

  // The trace first, then the three report files; nothing is on disk before write_outputs.
  ASSERT_EQ(r.outputs.size(), 4u);
  EXPECT_EQ(r.outputs[0].path, trace);
  EXPECT_EQ(r.outputs[1].path, out / "report.json");
  EXPECT_EQ(r.outputs[2].path, out / "layers.csv");
  EXPECT_EQ(r.outputs[3].path, out / "summary.md");
  for (const auto& f : r.outputs) EXPECT_FALSE(fs::exists(f.path)) << f.path;
  run::write_outputs(r);
  for (const auto& f : r.outputs) {
    std::ifstream in(f.path);
    std::stringstream got;
    got << in.rdbuf();
    EXPECT_EQ(got.str(), f.contents) << f.path;
  }
  EXPECT_NE(run::console_text(r, request).find("  report: " + out.string() + "/report.json\n"), std::string::npos);
}

TEST(RunPipeline, CompileGivesTheProgramOfTheWorkloadAtItsBatch) {
  const run::CompiledRun c = run::compile(mlp0());
  EXPECT_EQ(c.graph.name, "mlp0");
  EXPECT_EQ(c.arch.name, "tpu-v1");
  EXPECT_EQ(c.program.layers.size(), c.graph.layers.size());
  EXPECT_EQ(c.program.batch, 200);  // mlp0.yaml's batch
  run::CompileRequest at8 = mlp0();
  at8.batch = 8;
  EXPECT_EQ(run::compile(at8).program.batch, 8);
}

// A --trace given the config's path by mistake: refused with the input's flag named.
TEST(RunPipeline, AnOutputSetRefusesToOverwriteAnInput) {
  const run::CompileRequest inputs = mlp0();
  const std::vector<OutputFile> outputs{{scratch("ok") / "report.json", "{}"}, {inputs.arch, "{}", true}};
  try {
    run::refuse_overwriting_inputs(outputs, inputs);
    FAIL() << "overwriting the --arch input was not refused";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), inputs.arch + ": is the --arch input of this run; refusing to overwrite it with an output");
  }
  EXPECT_THROW(run::refuse_overwriting_inputs({{inputs.workload, ""}}, inputs), InputError);
  EXPECT_NO_THROW(run::refuse_overwriting_inputs({{scratch("ok") / "layers.csv", ""}}, inputs));
}

TEST(RunPipeline, InputShapesAreForOnnxModelsOnly) {
  const std::string yaml = kSrc + "/workloads/tpu/mlp0.yaml";
  try {
    run::load_workload(yaml, {"x=1,2"});
    FAIL() << "--input-shape on a YAML graph was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "--input-shape applies to ONNX models only; '" + yaml + "' is a YAML graph");
  }
  EXPECT_EQ(run::load_workload(yaml).name, "mlp0");
}

}  // namespace

// tessera sweep's fork server: a preloaded workload is not imported again (here its file is
// gone), and load_workload gives the same graph; another file still imports as usual.
TEST(RunPipeline, PreloadedWorkloadIsReturnedWithoutImportingAgain) {
  const fs::path dir = scratch("preload");
  fs::create_directories(dir);
  const fs::path copy = dir / "mlp0.yaml";
  fs::copy_file(kSrc + "/workloads/tpu/mlp0.yaml", copy);
  const graph::Graph direct = run::load_workload(copy.string(), run::WorkloadBindings{});
  run::preload_workload(copy.string(), run::WorkloadBindings{});
  fs::remove(copy);
  const graph::Graph cached = run::load_workload(copy.string(), run::WorkloadBindings{});
  ASSERT_EQ(cached.layers.size(), direct.layers.size());
  ASSERT_EQ(cached.layers.size(), 5u);  // MLP0: five fully connected layers (workloads/tpu/mlp0.yaml)
  for (size_t i = 0; i < direct.layers.size(); ++i) EXPECT_EQ(cached.layers[i].name, direct.layers[i].name);
  EXPECT_THROW(run::load_workload((dir / "other.yaml").string(), run::WorkloadBindings{}), InputError);
  EXPECT_THROW(run::preload_workload((dir / "other.yaml").string(), run::WorkloadBindings{}), InputError);
}
