#pragma once
// What serves an LLM iteration (issue 31): a replica of N chips of a simulated accelerator
// (cost table from the SystemC model; tensor/pipeline parallelism over chip links) or a GPU
// baseline (models/baseline). The scheduler sees only ServingTarget (serving_target.h).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "sim/serve/llm/serving_target.h"

namespace tessera::serve::llm {

struct TargetRequest {
  std::string arch;   // a chip config (configs/tpu-v6e.yaml) or a baseline (configs/baselines/h100-sxm.yaml)
  std::string model;  // an LLM spec (workloads/llm/llama-3-8b.yaml)
  int tp = 1;         // tensor-parallel degree (chips per pipeline stage)
  int pp = 1;         // pipeline stages
  std::string weight_dtype = "bf16";
  std::string kv_dtype = "bf16";
  int64_t block_tokens = 16;  // KV-cache page size in tokens
  std::string cache_dir;      // where the iteration cost table is memoized ("" = no disk cache)
};

// Bad input (unknown arch/model/dtype, weights that do not fit, TP not dividing the heads)
// throws tessera::InputError naming the file/key and what is allowed.
// The chip's layer pieces are simulated by `tessera run` children of this executable (or of
// $TESSERA_EXE when set); the overload names the executable and, for tests, a smaller grid
// than the default (CostGrid::standard to 8192 tokens, 256 decode sequences, the context).
std::unique_ptr<ServingTarget> make_serving_target(const TargetRequest&);
struct CostGrid;
std::unique_ptr<ServingTarget> make_serving_target(const TargetRequest&, const std::filesystem::path& runner_exe,
                                                   const CostGrid* grid = nullptr);

}  // namespace tessera::serve::llm
