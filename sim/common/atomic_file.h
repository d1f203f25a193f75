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
  // Which output this is, for messages: "--trace", "--out (report.json)". Empty: the path.
  std::string role = "";
};

// Writes every file or none. Each target must be a regular file, a symlink to one (the
// link is replaced, never followed), a missing name or, with allow_device, a character
// device: a directory, FIFO, socket or block device is refused before anything is
// written (writing to a FIFO would block forever). Contents go to temporary files in the
// targets' directories, named NAME.tmp.PID@HOST.XXXXXX so that a later write of NAME
// removes those a killed process left behind; then all are renamed into place. A failed
// write or rename removes the temporaries and puts back every target already replaced,
// so no partial set and no lost previous file is left. Throws InputError naming the path.
//
// Two outputs of one set naming the same file (`--trace D/report.json` with `--out D`) are
// refused, naming both (one would silently replace the other). The publish holds an
// exclusive lock (flock) on each target directory, taken in path order, so concurrent
// writers of the same directory publish one whole set after another and every set on disk
// comes from one process (issue 34 item 2); a writer that cannot get the lock in 60 s
// gives up with an InputError naming the directory.
void write_files_atomically(const std::vector<OutputFile>& files);

// The check above on its own, for a set before anything is computed: InputError naming both roles.
void refuse_outputs_naming_one_file(const std::vector<OutputFile>& files);

// One file (a listing, a trace, a sweep file); a character device is written directly.
void write_file_atomically(const std::filesystem::path& path, const std::string& contents);

}  // namespace tessera
