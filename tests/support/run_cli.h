#pragma once
// Running the built `tessera` executable from tests (tests/sim/cli, tests/sim/sweep):
// the command runs through /bin/sh in the source tree, so relative paths such as
// configs/tpu-v1.yaml work, and stdout and stderr come back together.
// Needs TESSERA_SOURCE_DIR and TESSERA_BINARY_DIR (tessera_add_test defines both).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tessera_test {

struct CliResult {
  int exit_code = -1;  // -1 if the process did not exit normally (a signal)
  std::string output;  // stdout + stderr
};

inline std::string tessera_path() { return std::string(TESSERA_BINARY_DIR) + "/tessera"; }

// `cd <source dir> && <cmd> 2>&1`.
inline CliResult run_shell(const std::string& cmd) {
  CliResult r;
  FILE* pipe = popen(("cd " + std::string(TESSERA_SOURCE_DIR) + " && " + cmd + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) r.output.append(buf, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// `tessera <args>` (the build tree's executable).
inline CliResult run_tessera(const std::string& args) { return run_shell(tessera_path() + " " + args); }

#ifdef TESSERA_MPIRUN
// `mpirun -n RANKS` for a real MPI sweep on one machine. The ranks run without LeakSanitizer:
// OpenMPI's dlopen'ed plugins leave allocations no suppression can name (docs/reliability.md);
// in a normal build the variable is inert.
inline std::string mpi_launcher(int ranks) {
  std::string launcher = std::string(TESSERA_MPIRUN) + " -n " + std::to_string(ranks) +
                         " --oversubscribe -x LSAN_OPTIONS=detect_leaks=0";
  if (::getuid() == 0) launcher += " --allow-run-as-root";
  return launcher;
}
#endif

// ASan + Debian's SystemC coroutines: an exception thrown after the simulation has run trips
// a known false positive in ASan's stack handling (docs/reliability.md). True only when ASan
// printed its own warning about it, so a real failure in a normal build is never hidden.
inline bool systemc_asan_false_positive(const CliResult& r) {
  return r.output.find("ASan is ignoring requested __asan_handle_no_return") != std::string::npos;
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The lines of `text` (without their newlines).
inline std::vector<std::string> text_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// An empty folder <build>/test-out/<group>/<name> for one test's files.
inline std::filesystem::path scratch_dir(const std::string& group, const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(TESSERA_BINARY_DIR) / "test-out" / group / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace tessera_test
