#include "sim/common/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <thread>

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

[[noreturn]] void fail(const std::string& target, const std::string& what, int err) {
  throw InputError(target + ": " + what + ": " + std::strerror(err));
}

// This host's name as it appears in temporary names: letters, digits and '-' only.
const std::string& host_tag() {
  static const std::string tag = [] {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0) return std::string("host");
    std::string out;
    for (const char* p = buf; *p && out.size() < 32; ++p) {
      const char c = *p;
      out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-') ? c : '-';
    }
    return out.empty() ? std::string("host") : out;
  }();
  return tag;
}

// NAME.tmp.PID@HOST. (mkstemp appends XXXXXX).
std::string temp_prefix(const std::string& target) {
  return target + ".tmp." + std::to_string(::getpid()) + "@" + host_tag() + ".";
}

// Removes the temporaries of `name` in `dir` that a process killed while writing left
// behind: ours (this host) whose process is gone, and old-style NAME.tmp.XXXXXX ones
// (no owner recorded) untouched for an hour. A live writer's temporary is kept.
void remove_stale_temporaries(const std::filesystem::path& dir, const std::string& name) {
  DIR* d = ::opendir(dir.empty() ? "." : dir.c_str());
  if (!d) return;
  const std::string prefix = name + ".tmp.";
  const std::string host = "@" + host_tag() + ".";
  const time_t now = std::time(nullptr);
  while (const dirent* e = ::readdir(d)) {
    const std::string entry = e->d_name;
    if (entry.size() <= prefix.size() || entry.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string rest = entry.substr(prefix.size());
    const std::filesystem::path path = dir / entry;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    bool stale = false;
    const size_t at = rest.find('@');
    if (at != std::string::npos && at > 0 && rest.find_first_not_of("0123456789") == at) {
      if (rest.compare(at, host.size(), host) != 0 || rest.size() != at + host.size() + 6) continue;
      const long pid = std::strtol(rest.substr(0, at).c_str(), nullptr, 10);
      stale = pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
    } else if (rest.size() == 6 && rest.find_first_of("@.") == std::string::npos) {
      stale = now - st.st_mtime > 3600;
    }
    if (stale) ::unlink(path.c_str());
  }
  ::closedir(d);
}

// What a target is before anything is written.
enum class Target { kMissing, kReplace, kDevice };

Target check_target(const OutputFile& f) {
  const std::string target = f.path.string();
  struct stat lst {};
  if (::lstat(target.c_str(), &lst) != 0) {
    if (errno == ENOENT) return Target::kMissing;
    fail(target, "cannot access output file", errno);
  }
  struct stat st = lst;
  if (S_ISLNK(lst.st_mode) && ::stat(target.c_str(), &st) != 0) return Target::kReplace;  // dangling: replaced
  if (S_ISREG(st.st_mode)) return Target::kReplace;
  if (S_ISCHR(st.st_mode) && f.allow_device) return Target::kDevice;
  const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                     : S_ISFIFO(st.st_mode) ? "a FIFO (named pipe)"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                     : S_ISBLK(st.st_mode)  ? "a block device"
                                            : "a device";
  throw InputError(target + ": cannot write output file: it is " + std::string(kind) +
                   (S_ISLNK(lst.st_mode) ? " (through a symlink)" : "") +
                   "; an output file must be a regular file or a new name" +
                   (f.allow_device ? " (or a character device such as /dev/null)" : ""));
}

void write_device(const std::string& target, const std::string& contents) {
  // O_NONBLOCK: if the device was swapped for a FIFO since the check, fail instead of
  // blocking; blocking writes again once open.
  const int fd = ::open(target.c_str(), O_WRONLY | O_TRUNC | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail(target, "cannot open output file", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISCHR(st.st_mode)) {
    ::close(fd);
    throw InputError(target + ": cannot write output file: it is no longer a character device");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  const int err = write_all(fd, contents);
  if (::close(fd) != 0 && err == 0) fail(target, "cannot write output file", errno);
  if (err != 0) fail(target, "cannot write output file", err);
}

struct Staged {
  std::string target;
  std::string tmp;     // the new contents, until renamed
  std::string backup;  // a hard link to the previous file, for rollback ("" if none)
  bool renamed = false;
};

// Undoes a partly applied set: previous files back, new ones and temporaries gone.
void roll_back(std::vector<Staged>& staged) {
  for (Staged& s : staged) {
    if (s.renamed) {
      if (!s.backup.empty()) {
        ::rename(s.backup.c_str(), s.target.c_str());
        s.backup.clear();
      } else {
        ::unlink(s.target.c_str());
      }
    }
    if (!s.tmp.empty() && !s.renamed) ::unlink(s.tmp.c_str());
    if (!s.backup.empty()) ::unlink(s.backup.c_str());
  }
}

std::string role_of(const OutputFile& f) { return f.role.empty() ? f.path.string() : f.role; }

// The path a target will have: symlinks of the existing part resolved, never throwing.
std::string resolved(const std::filesystem::path& p) {
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(p, ec);
  if (ec) return p.lexically_normal().string();
  // A symlink at the target itself is replaced, not followed: resolve only its directory.
  std::filesystem::path dir = std::filesystem::weakly_canonical(abs.parent_path(), ec);
  if (ec) dir = abs.parent_path().lexically_normal();
  return (dir / abs.filename()).lexically_normal().string();
}

// Exclusive flocks on the target directories, in path order (no deadlock between two
// writers of overlapping sets), released when the publish ends.
class DirectoryLocks {
 public:
  explicit DirectoryLocks(const std::vector<OutputFile>& files) {
    std::map<std::string, std::string> dirs;  // resolved -> as given
    for (const OutputFile& f : files) {
      std::filesystem::path dir = f.path.parent_path();
      if (dir.empty()) dir = ".";
      dirs.emplace(resolved(dir / "x"), dir.string());
    }
    for (const auto& [key, dir] : dirs) {
      const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd < 0) continue;  // the write itself reports a missing or unreadable directory
      fds_.push_back(fd);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) break;  // no locks on this filesystem: publish unlocked
        if (std::chrono::steady_clock::now() > deadline) {
          throw InputError(dir + ": another process has been writing its outputs into this directory for 60 s "
                                 "(it holds the directory's lock); try again when it is done");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
  }
  ~DirectoryLocks() {
    for (int fd : fds_) ::close(fd);
  }
  DirectoryLocks(const DirectoryLocks&) = delete;
  DirectoryLocks& operator=(const DirectoryLocks&) = delete;

 private:
  std::vector<int> fds_;
};

}  // namespace

void refuse_outputs_naming_one_file(const std::vector<OutputFile>& files) {
  std::map<std::string, const OutputFile*> seen;
  for (const OutputFile& f : files) {
    std::string key = resolved(f.path);
    // An existing file reached by two names (a hard link, a symlinked directory).
    for (const auto& [other_key, other] : seen) {
      std::error_code ec;
      if (other_key == key || (std::filesystem::equivalent(other->path, f.path, ec) && !ec)) {
        throw InputError(f.path.string() + ": is both the " + role_of(*other) + " output and the " + role_of(f) +
                         " output of this run; refusing to write one over the other (give them different paths)");
      }
    }
    seen.emplace(std::move(key), &f);
  }
}

void write_files_atomically(const std::vector<OutputFile>& files) {
  refuse_outputs_naming_one_file(files);
  // Held until the set is in place: no other writer's file lands between ours.
  const DirectoryLocks locks(files);
  // 1. Every target is checked before any byte is written.
  std::vector<Target> kinds;
  for (const OutputFile& f : files) kinds.push_back(check_target(f));

  // 2. Temporary files with the full contents, next to their targets.
  std::vector<Staged> staged;
  std::vector<const OutputFile*> devices;
  try {
    for (size_t i = 0; i < files.size(); ++i) {
      if (kinds[i] == Target::kDevice) {
        devices.push_back(&files[i]);
        continue;
      }
      const std::string target = files[i].path.string();
      remove_stale_temporaries(files[i].path.parent_path(), files[i].path.filename().string());
      std::string tmp = temp_prefix(target) + "XXXXXX";
      const int fd = ::mkstemp(tmp.data());
      if (fd < 0) fail(target, "cannot create output file", errno);
      staged.push_back(Staged{target, tmp, "", false});
      int err = write_all(fd, files[i].contents);
      if (err == 0 && ::fsync(fd) != 0) err = errno;
      if (::close(fd) != 0 && err == 0) err = errno;
      if (err != 0) fail(target, "cannot write output file", err);
      ::chmod(tmp.c_str(), 0644);
    }
    // 3. Devices cannot be rolled back: written once every temporary file is complete.
    for (const OutputFile* f : devices) write_device(f->path.string(), f->contents);
    // 4. Into place, keeping each previous file (a hard link) until all are renamed.
    for (Staged& s : staged) {
      struct stat st {};
      if (::lstat(s.target.c_str(), &st) == 0) {
        std::string backup = temp_prefix(s.target) + "XXXXXX";
        const int fd = ::mkstemp(backup.data());
        if (fd >= 0) {
          ::close(fd);
          ::unlink(backup.c_str());
          if (::link(s.target.c_str(), backup.c_str()) == 0) s.backup = backup;
        }
      }
      if (::rename(s.tmp.c_str(), s.target.c_str()) != 0) fail(s.target, "cannot write output file", errno);
      s.renamed = true;
    }
  } catch (...) {
    roll_back(staged);
    throw;
  }
  for (const Staged& s : staged) {
    if (!s.backup.empty()) ::unlink(s.backup.c_str());
  }
}

void write_file_atomically(const std::filesystem::path& path, const std::string& contents) {
  write_files_atomically({OutputFile{path, contents, true}});
}

}  // namespace tessera
