#include "sim/common/text_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sim/common/error.h"

namespace tessera {

std::string bytes_text(uint64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + " " + units[u];
}

std::string unreadable_kind(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";  // open() reports it
  if (S_ISDIR(st.st_mode)) return "it is a directory";
  if (S_ISSOCK(st.st_mode)) return "it is a socket";
  if (S_ISBLK(st.st_mode)) return "it is a block device";
  return "";
}

std::string not_a_regular_file(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return errno == ENOENT ? "it does not exist" : std::string("it cannot be examined: ") + std::strerror(errno);
  }
  if (S_ISREG(st.st_mode)) return "";
  if (S_ISDIR(st.st_mode)) return "it is a directory";
  if (S_ISFIFO(st.st_mode)) return "it is a FIFO (named pipe)";
  if (S_ISCHR(st.st_mode)) return "it is a character device";
  if (S_ISBLK(st.st_mode)) return "it is a block device";
  if (S_ISSOCK(st.st_mode)) return "it is a socket";
  return "it is not a regular file";
}

namespace {

std::string prefix(const std::string& flag, const std::filesystem::path& path) {
  return (flag.empty() ? "" : flag + " ") + path.string() + ": ";
}

// Reads `path` in blocks, handing each to `sink`; checks the file bound.
template <typename Sink>
void read_blocks(const std::filesystem::path& path, const TextLimits& limits, const std::string& flag, Sink&& sink) {
  const std::string where = prefix(flag, path);
  if (const std::string kind = unreadable_kind(path); !kind.empty()) {
    throw InputError(where + "cannot read the " + limits.what + ": " + kind);
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(where + "cannot open file: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > limits.max_file_bytes) {
    throw InputError(where + "the " + std::string(limits.what) + " is " + std::to_string(st.st_size) +
                     " bytes, more than the " + bytes_text(limits.max_file_bytes) + " allowed");
  }
  static thread_local char buf[1 << 16];
  uint64_t total = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InputError(where + "cannot read file: " + std::strerror(errno));
    }
    if (n == 0) break;
    total += static_cast<uint64_t>(n);
    if (total > limits.max_file_bytes) {
      throw InputError(where + "the " + std::string(limits.what) + " is longer than the " +
                       bytes_text(limits.max_file_bytes) + " allowed (an endless device or pipe?)");
    }
    sink(std::string_view(buf, static_cast<size_t>(n)));
  }
}

[[noreturn]] void line_too_long(const std::string& where, const TextLimits& limits, uint64_t line_no) {
  throw InputError(where.substr(0, where.size() - 2) + ":" + std::to_string(line_no) + ": line longer than the " +
                   bytes_text(limits.max_line_bytes) + " allowed in a " + limits.what);
}

}  // namespace

std::string read_text_file(const std::filesystem::path& path, const TextLimits& limits, const std::string& flag) {
  std::string text;
  uint64_t line_no = 1, line_bytes = 0;
  const std::string where = prefix(flag, path);
  read_blocks(path, limits, flag, [&](std::string_view block) {
    for (char c : block) {
      if (c == '\n' || c == '\r') {
        if (c == '\n') ++line_no;
        line_bytes = 0;
      } else if (++line_bytes > limits.max_line_bytes) {
        line_too_long(where, limits, line_no);
      }
    }
    text.append(block);
  });
  return text;
}

void for_each_line(const std::filesystem::path& path, const TextLimits& limits,
                   const std::function<void(std::string_view, uint64_t)>& on_line, const std::string& flag) {
  std::string line;
  uint64_t line_no = 0;
  const std::string where = prefix(flag, path);
  read_blocks(path, limits, flag, [&](std::string_view block) {
    size_t from = 0;
    while (from < block.size()) {
      const size_t nl = block.find('\n', from);
      const size_t end = nl == std::string_view::npos ? block.size() : nl;
      if (line.size() + (end - from) > limits.max_line_bytes) line_too_long(where, limits, line_no + 1);
      line.append(block.substr(from, end - from));
      if (nl == std::string_view::npos) break;
      on_line(line, ++line_no);
      line.clear();
      from = nl + 1;
    }
  });
  if (!line.empty()) on_line(line, ++line_no);
}

}  // namespace tessera
