#include "sim/common/output_dir.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "sim/common/error.h"

namespace tessera {

namespace fs = std::filesystem;

namespace {

std::string named(const std::string& flag, const fs::path& p) { return (flag.empty() ? "" : flag + " ") + p.string(); }

}  // namespace

void prepare_output_directory(const fs::path& dir, const std::string& flag, MakeDirectory make) {
  const std::string where = named(flag, dir);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    if (err != ENOENT || make == MakeDirectory::kMustExist) {
      throw InputError(where + ": cannot create output directory: " + std::strerror(err));
    }
    std::error_code ec;
    fs::create_directories(dir, ec);  // the error_code form: never throws (a read-only mount is EROFS here)
    if (ec) throw InputError(where + ": cannot create output directory: " + ec.message());
    if (::stat(dir.c_str(), &st) != 0) {
      throw InputError(where + ": cannot create output directory: " + std::strerror(errno));
    }
  }
  if (!S_ISDIR(st.st_mode)) throw InputError(where + ": cannot create output directory: it exists and is not a directory");
}

void prepare_output_file_directory(const fs::path& file, const std::string& flag) {
  std::error_code ec;
  fs::path parent = fs::absolute(file, ec).parent_path();
  if (ec) parent = file.parent_path();
  if (parent.empty()) parent = ".";
  // Created as --out's directory is (issue 33 item 6: --trace DIR/trace.json with no DIR yet).
  fs::create_directories(parent, ec);
  struct stat st {};
  if (::stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw InputError(named(flag, file) + ": cannot create directory " + parent.string() + (ec ? ": " + ec.message() : ""));
  }
}

}  // namespace tessera
