#include "sim/common/data_path.h"

#include <system_error>

#ifndef TESSERA_SOURCE_DIR
#define TESSERA_SOURCE_DIR "."
#endif
#ifndef TESSERA_DATA_FROM_BIN
#define TESSERA_DATA_FROM_BIN "../share/tessera"
#endif

namespace tessera {

std::filesystem::path data_path(const std::string& sub) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(sub, ec)) return fs::absolute(sub, ec);
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = (exe.parent_path() / TESSERA_DATA_FROM_BIN / sub).lexically_normal();
    if (fs::is_directory(installed, ec)) return installed;
  }
  return fs::path(TESSERA_SOURCE_DIR) / sub;
}

}  // namespace tessera
