// libFuzzer entry point; TESSERA_FUZZ_TARGET names the loader (tests/fuzz/CMakeLists.txt
// builds one executable per loader: fuzz_arch_config, fuzz_graph_yaml, ...).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <typeinfo>

#include "tests/fuzz/fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    tessera::fuzz::run_input(TESSERA_FUZZ_TARGET, data, size);
  } catch (const std::exception& e) {
    // Not an InputError: a bug. Abort so that libFuzzer saves the input as a crash.
    std::fprintf(stderr, "\n*** %s: uncaught %s: %s\n", TESSERA_FUZZ_TARGET, typeid(e).name(), e.what());
    std::abort();
  }
  return 0;
}
