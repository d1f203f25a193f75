#pragma once
// The one output-directory routine behind `run --out`, `serve --out`, `sweep --out`,
// `--trace` and `compile -o` (issue 34 item 4): every way a directory cannot be made or
// used (a read-only mount, a file in the way, no permission, a name too long) is an
// InputError, exit 2, naming the flag and the directory; never a filesystem exception.
#include <filesystem>
#include <string>

namespace tessera {

enum class MakeDirectory { kCreate, kMustExist };

// Makes `dir` (and its parents) a directory one can write outputs into, or throws
// InputError "<flag> <dir>: cannot create output directory: <reason>". With kMustExist
// (a --trace or -o file's directory) a missing directory is "... directory D does not exist".
// `flag` may be empty.
void prepare_output_directory(const std::filesystem::path& dir, const std::string& flag,
                              MakeDirectory make = MakeDirectory::kCreate);

// The directory an output file goes into ("." for a bare name), created as --out's is:
// "<flag> <file>: cannot create directory D" when it cannot be.
void prepare_output_file_directory(const std::filesystem::path& file, const std::string& flag);

}  // namespace tessera
