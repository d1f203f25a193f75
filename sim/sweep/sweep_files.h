#pragma once
// Every file and directory a sweep creates in its output tree goes through here, so that
// none of them follows a symbolic link. A sweep directory may sit in shared scratch space
// (/tmp, a group directory) where someone else can plant `points/<id>/config.yaml ->
// ~/precious` before the sweep runs (point ids are predictable: `--list`); writing through
// that link would overwrite the other file. So: directories below the output directory must
// be real directories, files are opened with O_NOFOLLOW, and whole files are replaced by a
// rename, which replaces a link instead of following it.
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include "sim/common/error.h"

namespace tessera::sweep {

// A symbolic link where the sweep would write: bad input that stops the sweep (exit 2),
// never a failed point.
class UnsafeOutputPath : public InputError {
 public:
  using InputError::InputError;
};

// Creates the output directory (and its parents). It may itself be a symbolic link only if
// the link belongs to the user running the sweep (their own `out -> /scratch/...`); a link
// planted by someone else is refused. Throws InputError naming the path.
void make_output_dir(const std::filesystem::path& dir);

// Creates `dir` (one level, its parent must exist) or accepts an existing one, which must be
// a real directory, not a symbolic link. Throws InputError naming the path.
void make_real_dir(const std::filesystem::path& dir);

// open(2) with O_NOFOLLOW | O_CLOEXEC added; a symbolic link at `path` is an InputError
// ("is a symbolic link; the sweep does not write through links"), as is any other failure.
int open_no_follow(const std::filesystem::path& path, int flags, const char* what);

// Reads a regular file of the output tree without following a link (a report.json swapped
// for a link to someone's secrets must not end up quoted in results.jsonl). Throws
// InputError; UnsafeOutputPath for a link or a FIFO/device.
std::string read_no_follow(const std::filesystem::path& path);

// Replaces `path` with `contents`: a new temporary file next to it (O_CREAT | O_EXCL |
// O_NOFOLLOW), fsync, rename over the target (a link there is replaced, not followed).
// Throws InputError naming the path; the temporary file is removed on failure.
void replace_file(const std::filesystem::path& path, const std::string& contents);

// replace_file for contents written piece by piece (a resume rewriting 100,000 rows without
// holding them all): the same temporary file, fsync and rename, at commit(). Destroyed without
// commit(), the temporary file is removed and the target is untouched.
class ReplacementFile {
 public:
  explicit ReplacementFile(const std::filesystem::path& path);  // creates the temporary file
  ~ReplacementFile();
  ReplacementFile(const ReplacementFile&) = delete;
  ReplacementFile& operator=(const ReplacementFile&) = delete;
  void write(std::string_view text);  // buffered
  void commit();

 private:
  void flush();
  std::filesystem::path path_;
  std::string tmp_;
  std::string buffer_;
  int fd_ = -1;
  int err_ = 0;  // the first write error, reported by commit()
};

// Reads a regular file of the output tree line by line, with read_no_follow's checks (no link,
// a regular file, the same size bound), holding one buffer of it at a time.
class LineReader {
 public:
  explicit LineReader(const std::filesystem::path& path);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;
  // The next line without its '\n'; false at the end. `complete` is false for a last line
  // that has no '\n' (a write that was killed before it finished).
  bool next(std::string& line, bool& complete);

 private:
  bool fill();
  std::filesystem::path path_;
  int fd_ = -1;
  std::string buffer_;
  size_t start_ = 0;
  bool eof_ = false;
};

// Removes the temporary files (`NAME.tmp.XXXXXX`) that a killed write left in `dir`, without
// following links; returns how many. Call only while holding the sweep directory's lock.
size_t remove_stale_temporaries(const std::filesystem::path& dir);

// True for names of temporary files: "report.json.tmp.a1B2c3".
bool is_temporary_name(const std::string& name);

}  // namespace tessera::sweep
