#include "sim/common/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sim/common/error.h"

namespace tessera {

void write_file_atomically(const std::filesystem::path& path, const std::string& contents) {
  const std::string target = path.string();
  std::string tmp = target + ".tmp.XXXXXX";
  const int fd = mkstemp(tmp.data());
  if (fd < 0) throw InputError(target + ": cannot create output file: " + std::strerror(errno));
  size_t written = 0;
  while (written < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw InputError(target + ": cannot write output file: " + std::strerror(err));
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw InputError(target + ": cannot write output file: " + std::strerror(err));
  }
  ::chmod(tmp.c_str(), 0644);
  if (std::rename(tmp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw InputError(target + ": cannot write output file: " + std::strerror(err));
  }
}

}  // namespace tessera
