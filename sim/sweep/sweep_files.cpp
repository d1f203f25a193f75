#include "sim/sweep/sweep_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <string_view>

#include "sim/common/error.h"
#include "sim/common/output_dir.h"

namespace fs = std::filesystem;

namespace tessera::sweep {
namespace {

std::string link_refused(const fs::path& p) {
  return p.string() + ": is a symbolic link; the sweep does not write through links in its output directory "
                      "(someone else may have placed it there): remove it or choose another --out";
}

int write_all(int fd, std::string_view contents) {
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

namespace {

// The checks of read_no_follow and LineReader: no link, a regular file, at most 16 GiB.
int open_regular_no_follow(const fs::path& path) {
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
  return fd;
}

// Appends up to `max` bytes read from `fd` to `out`; false at the end of the file.
bool read_some(int fd, const fs::path& path, std::string& out, size_t max) {
  const size_t at = out.size();
  out.resize(at + max);
  while (true) {
    const ssize_t n = ::read(fd, out.data() + at, max);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      out.resize(at);
      throw InputError(path.string() + ": cannot read: " + std::strerror(err));
    }
    out.resize(at + static_cast<size_t>(n));
    return n > 0;
  }
}

constexpr size_t kReadChunkBytes = 65536;
constexpr size_t kWriteBufferBytes = size_t{1} << 20;

}  // namespace

std::string read_no_follow(const fs::path& path) {
  const int fd = open_regular_no_follow(path);
  std::string out;
  try {
    while (read_some(fd, path, out, kReadChunkBytes)) {
    }
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return out;
}

LineReader::LineReader(const fs::path& path) : path_(path), fd_(open_regular_no_follow(path)) {}

LineReader::~LineReader() {
  if (fd_ >= 0) ::close(fd_);
}

bool LineReader::fill() {
  if (eof_) return false;
  // Drop what was consumed before reading more: the buffer holds about one chunk.
  buffer_.erase(0, start_);
  start_ = 0;
  if (!read_some(fd_, path_, buffer_, kReadChunkBytes)) eof_ = true;
  return !eof_;
}

bool LineReader::next(std::string& line, bool& complete) {
  size_t searched = start_;
  while (true) {
    const size_t nl = buffer_.find('\n', searched);
    if (nl != std::string::npos) {
      line.assign(buffer_, start_, nl - start_);
      start_ = nl + 1;
      complete = true;
      return true;
    }
    searched = buffer_.size() - start_;  // relative to start_ after fill() moves the rest to 0
    if (!fill()) break;
  }
  if (start_ >= buffer_.size()) return false;
  line.assign(buffer_, start_, std::string::npos);
  start_ = buffer_.size();
  complete = false;
  return true;
}

ReplacementFile::ReplacementFile(const fs::path& path) : path_(path) {
  // A name of our own next to the target (same file system, so the rename is atomic);
  // O_EXCL | O_NOFOLLOW: never an existing file, never through a link.
  static std::mt19937_64 rng(std::random_device{}() ^ static_cast<uint64_t>(::getpid()));
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    std::string suffix;
    for (int k = 0; k < 6; ++k) suffix += kChars[rng() % (sizeof kChars - 1)];
    tmp_ = path.string() + ".tmp." + suffix;
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ < 0) throw InputError(path.string() + ": cannot create output file: " + std::strerror(errno));
}

ReplacementFile::~ReplacementFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
}

void ReplacementFile::flush() {
  if (err_ == 0) err_ = write_all(fd_, buffer_);
  buffer_.clear();
}

void ReplacementFile::write(std::string_view text) {
  if (buffer_.empty() && text.size() >= kWriteBufferBytes) {
    if (err_ == 0) err_ = write_all(fd_, text);
    return;
  }
  buffer_.append(text);
  if (buffer_.size() >= kWriteBufferBytes) flush();
}

void ReplacementFile::commit() {
  flush();
  int err = err_;
  if (err == 0 && ::fsync(fd_) != 0) err = errno;
  if (::close(fd_) != 0 && err == 0) err = errno;
  fd_ = -1;
  if (err == 0 && std::rename(tmp_.c_str(), path_.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp_.c_str());
    throw InputError(path_.string() + ": cannot write output file: " + std::strerror(err));
  }
}

void replace_file(const fs::path& path, const std::string& contents) {
  ReplacementFile file(path);
  file.write(contents);
  file.commit();
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
