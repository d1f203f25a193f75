#pragma once
// Every text input (YAML configs, graphs, experiments, precision policies, host and
// baseline specs, request traces) is read through here, with a bound on the file and on
// one line, so `/dev/zero`, an endless FIFO or a 200 MB one-line file ends in an
// InputError naming the file and the bound instead of holding it all in memory
// (issue 34 item 5). Directories, sockets and block devices are refused by kind.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace tessera {

struct TextLimits {
  uint64_t max_file_bytes;
  uint64_t max_line_bytes;
  const char* what;  // "YAML file", "request trace": named in the messages
};

// YAML: 64 MiB per file (yaml-cpp holds ~50x that in nodes), 16 MiB per line (a valid
// 200 000-entry flow list is ~1.4 MB on one line).
inline constexpr TextLimits kYamlLimits{uint64_t{64} << 20, uint64_t{16} << 20, "YAML file"};
// Request traces: 64 GiB (2^31 rows of up to 32 bytes), 64 KiB per line (a row and a comment).
inline constexpr TextLimits kTraceLimits{uint64_t{64} << 30, uint64_t{64} << 10, "request trace"};

// "<path>: cannot read <what>: it is a directory" and the like for a path that is no
// regular file, character device or FIFO; "" when it may be read.
std::string unreadable_kind(const std::filesystem::path& path);

// Why `path` is not a regular file one can read ("it is a directory", "it is a FIFO (named
// pipe)", "it is a character device", "it does not exist", ...), or "" when it is one (links
// followed). For inputs that must be files: "--baseline /dev/zero: it is a character device".
std::string not_a_regular_file(const std::filesystem::path& path);

// The whole file, checked against both bounds as it is read. `flag` ("--trace"), when
// given, prefixes the messages. Throws InputError.
std::string read_text_file(const std::filesystem::path& path, const TextLimits& limits, const std::string& flag = "");

// Line by line (without the '\n'), never holding more than one line. `on_line(line,
// line_number)` is called for every line, the last one too if it has no '\n'.
void for_each_line(const std::filesystem::path& path, const TextLimits& limits,
                   const std::function<void(std::string_view, uint64_t)>& on_line, const std::string& flag = "");

// "64 MiB", "16 KiB", "64 GiB": a bound as the messages print it.
std::string bytes_text(uint64_t bytes);

}  // namespace tessera
