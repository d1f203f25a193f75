// Replays every input the fuzzers ever found a bug with (tests/fuzz/regressions/<target>/*)
// through the same entry point as the fuzz targets, in the normal build. An input may be
// accepted or rejected with InputError; any other exception, a crash or a sanitizer
// report (TESSERA_SANITIZE) fails, and so does an input that takes too long.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_entry.h"

namespace {

namespace fs = std::filesystem;

std::vector<fs::path> inputs(const std::string& target) {
  std::vector<fs::path> out;
  const fs::path dir = fs::path(TESSERA_SOURCE_DIR) / "tests/fuzz/regressions" / target;
  if (!fs::is_directory(dir)) return out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().filename().string()[0] != '.') out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class FuzzRegressions : public ::testing::TestWithParam<std::string> {};

TEST_P(FuzzRegressions, ReplayWithoutCrashOrForeignException) {
  const auto files = inputs(GetParam());
  if (files.empty()) GTEST_SKIP() << "no regression inputs for " << GetParam();
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    SCOPED_TRACE(file.string());
    const auto start = std::chrono::steady_clock::now();
    try {
      tessera::fuzz::run_input(GetParam(), reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    } catch (const std::exception& e) {
      ADD_FAILURE() << file << ": not an InputError: " << typeid(e).name() << ": " << e.what();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // The fuzzers flag > 5 s as a hang; allow for a sanitized, loaded CI machine.
    EXPECT_LT(seconds, 20.0) << file << " took " << seconds << " s";
  }
  tessera::fuzz::remove_scratch();
}

INSTANTIATE_TEST_SUITE_P(Loaders, FuzzRegressions, ::testing::ValuesIn(tessera::fuzz::targets()),
                         [](const auto& info) { return info.param; });

}  // namespace
