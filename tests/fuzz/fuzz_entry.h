#pragma once
// One entry point per loader for the fuzz targets (libFuzzer, TESSERA_FUZZ=ON) and for
// the regression replay test that runs in every build (test_fuzz_regressions).
// docs/reliability.md describes both.
//
// run_input() feeds `data` to the loader named by `target`. It returns normally when
// the loader accepts the input or rejects it with tessera::InputError (the contract
// for bad input: exit code 2 with a message). Anything else escapes: another
// exception type, a crash, a sanitizer report or a hang is a bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::fuzz {

// "arch_config", "graph_yaml", "experiment", "onnx".
const std::vector<std::string>& targets();

// Returns true if the loader accepted the input, false if it threw InputError.
bool run_input(std::string_view target, const uint8_t* data, size_t size);

// Removes this process's scratch directory (the ONNX target's model file), if any.
void remove_scratch();

}  // namespace tessera::fuzz
