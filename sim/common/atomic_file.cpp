#include "sim/common/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sim/common/error.h"

namespace tessera {

namespace {

// Writes all of `contents` to `fd`; returns 0 or the errno of the failed write.
int write_all(int fd, const std::string& contents) {
  size_t written = 0;
  while (written < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    written += static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace

void write_file_atomically(const std::filesystem::path& path, const std::string& contents) {
  const std::string target = path.string();
  // A device or a pipe (/dev/stdout, /dev/null, /dev/full, a FIFO) cannot be replaced by
  // a rename (and must not be: renaming over /dev/full as root would replace the device
  // node): write to it directly.
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
    const int fd = ::open(target.c_str(), O_WRONLY | O_TRUNC);
    if (fd < 0) throw InputError(target + ": cannot open output file: " + std::strerror(errno));
    const int err = write_all(fd, contents);
    if (::close(fd) != 0 && err == 0) throw InputError(target + ": cannot write output file: " + std::strerror(errno));
    if (err != 0) throw InputError(target + ": cannot write output file: " + std::strerror(err));
    return;
  }
  std::string tmp = target + ".tmp.XXXXXX";
  const int fd = mkstemp(tmp.data());
  if (fd < 0) throw InputError(target + ": cannot create output file: " + std::strerror(errno));
  if (const int err = write_all(fd, contents); err != 0) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw InputError(target + ": cannot write output file: " + std::strerror(err));
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
