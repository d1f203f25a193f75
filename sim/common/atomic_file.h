#pragma once
// Write-then-rename: a reader never sees a half-written output file.
#include <filesystem>
#include <string>

namespace tessera {

// Writes `contents` to `path` via a temporary file in the same directory and an
// atomic rename. Throws InputError naming the path if it cannot be written (the
// temporary file is removed: no partial output is left behind). A character device or
// a FIFO (/dev/stdout, /dev/full, a named pipe) is written directly instead.
void write_file_atomically(const std::filesystem::path& path, const std::string& contents);

}  // namespace tessera
