#pragma once
// Where the shipped data directories (configs/baselines, configs/hosts) are, for options that
// take a name rather than a path (--baseline k80, --host haswell-tpu-server).
#include <filesystem>
#include <string>

namespace tessera {

// `sub` (a path relative to the repository root, "configs/baselines") resolved as: ./sub when
// it is a directory (run from a checkout's root; absolute), else the install prefix's copy next
// to the running executable (<prefix>/bin/tessera -> <prefix>/share/tessera/sub, written by
// `cmake --install`) when it exists, else the source tree the executable was built from.
std::filesystem::path data_path(const std::string& sub);

}  // namespace tessera
