#pragma once
// Write-then-rename: a reader never sees a half-written output file, and a set of
// outputs (a run's report files and trace) appears all together or not at all.
#include <filesystem>
#include <string>
#include <vector>

namespace tessera {

struct OutputFile {
  std::filesystem::path path;
  std::string contents;
  // A character device (/dev/null, /dev/full, a terminal) is written directly instead
  // of replaced. Only for outputs the user names as a file (a listing, a trace).
  bool allow_device = false;
};

// Writes every file or none. Each target must be a regular file, a symlink to one (the
// link is replaced, never followed), a missing name or, with allow_device, a character
// device: a directory, FIFO, socket or block device is refused before anything is
// written (writing to a FIFO would block forever). Contents go to temporary files in the
// targets' directories, named NAME.tmp.PID@HOST.XXXXXX so that a later write of NAME
// removes those a killed process left behind; then all are renamed into place. A failed
// write or rename removes the temporaries and puts back every target already replaced,
// so no partial set and no lost previous file is left. Throws InputError naming the path.
void write_files_atomically(const std::vector<OutputFile>& files);

// One file (a listing, a trace, a sweep file); a character device is written directly.
void write_file_atomically(const std::filesystem::path& path, const std::string& contents);

}  // namespace tessera
