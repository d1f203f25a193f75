#pragma once
// Write-then-rename: a reader never sees a half-written output file.
#include <filesystem>
#include <string>

namespace tessera {

// Writes `contents` to `path` via a temporary file in the same directory and an
// atomic rename. Throws InputError naming the path if it cannot be written.
void write_file_atomically(const std::filesystem::path& path, const std::string& contents);

}  // namespace tessera
