#include "sim/sweep/sweep_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "sim/common/error.h"
#include "sim/common/output_dir.h"

namespace fs = std::filesystem;

namespace tessera::sweep {
namespace {

std::string link_refused(const fs::path& p) {
  return p.string() + ": is a symbolic link; the sweep does not write through links in its output directory "
                      "(someone else may have placed it there): remove it or choose another --out";
}

int write_all(int fd, const std::string& contents) {
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    done += static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace

bool is_temporary_name(const std::string& name) {
  const size_t at = name.rfind(".tmp.");
  return at != std::string::npos && at > 0 && name.size() - at - 5 == 6;
}

void make_output_dir(const fs::path& dir) {
  std::error_code ec;
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    prepare_output_directory(dir, "");  // the one routine of every command (sim/common/output_dir.h)
    if (::lstat(dir.c_str(), &st) != 0) {
      throw InputError(dir.string() + ": cannot create output directory: " + std::strerror(errno));
    }
  }
  if (S_ISLNK(st.st_mode)) {
    if (st.st_uid != ::geteuid()) throw UnsafeOutputPath(link_refused(dir) + " (the link belongs to another user)");
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      throw InputError(dir.string() + ": is a symbolic link to something that is not a directory");
    }
    return;
  }
  if (!S_ISDIR(st.st_mode)) throw InputError(dir.string() + ": is not a directory");
}

void make_real_dir(const fs::path& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    throw InputError(dir.string() + ": cannot create directory: " + std::strerror(errno));
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) throw InputError(dir.string() + ": cannot create directory: " + std::strerror(errno));
  if (S_ISLNK(st.st_mode)) throw UnsafeOutputPath(link_refused(dir));
  if (!S_ISDIR(st.st_mode)) throw InputError(dir.string() + ": is not a directory");
}

int open_no_follow(const fs::path& path, int flags, const char* what) {
  const int fd = ::open(path.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd >= 0) return fd;
  const int err = errno;
  struct stat st {};
  if (err == ELOOP || (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode))) throw UnsafeOutputPath(link_refused(path));
  throw InputError(path.string() + ": " + what + ": " + std::strerror(err));
}

std::string read_no_follow(const fs::path& path) {
  const int fd = open_no_follow(path, O_RDONLY | O_NONBLOCK, "cannot open");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw UnsafeOutputPath(path.string() + ": is not a regular file");
  }
  // A bound like every text reader's (sim/common/text_file.h): 1 M points of results or a
  // report are far below it; a planted giant file is refused, not read into memory.
  constexpr uint64_t kMaxBytes = uint64_t{16} << 30;
  if (static_cast<uint64_t>(st.st_size) > kMaxBytes) {
    ::close(fd);
    throw InputError(path.string() + ": is " + std::to_string(st.st_size) + " bytes, more than the 16 GiB a sweep or "
                     "serve file may have");
  }
  std::string out;
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw InputError(path.string() + ": cannot read: " + std::strerror(err));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

void replace_file(const fs::path& path, const std::string& contents) {
  // A name of our own next to the target (same file system, so the rename is atomic);
  // O_EXCL | O_NOFOLLOW: never an existing file, never through a link.
  static std::mt19937_64 rng(std::random_device{}() ^ static_cast<uint64_t>(::getpid()));
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    std::string suffix;
    for (int k = 0; k < 6; ++k) suffix += kChars[rng() % (sizeof kChars - 1)];
    tmp = path.string() + ".tmp." + suffix;
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) throw InputError(path.string() + ": cannot create output file: " + std::strerror(errno));
  int err = write_all(fd, contents);
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && std::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    throw InputError(path.string() + ": cannot write output file: " + std::strerror(err));
  }
}

size_t remove_stale_temporaries(const fs::path& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return 0;
  size_t removed = 0;
  while (const dirent* ent = ::readdir(d)) {
    const std::string name = ent->d_name;
    if (!is_temporary_name(name)) continue;
    struct stat st {};
    const fs::path p = dir / name;
    // Files and links only (unlink never follows a link); a directory of that name is not ours.
    if (::lstat(p.c_str(), &st) == 0 && !S_ISDIR(st.st_mode) && ::unlink(p.c_str()) == 0) ++removed;
  }
  ::closedir(d);
  return removed;
}

}  // namespace tessera::sweep
