#pragma once
// The executables' one mapping from what a run throws to the exit code (error.h):
// InputError -> 2, out of memory -> 2 (a too-big input, not a bug), anything else -> 1.
#include <functional>

namespace tessera {

// Runs `body` and returns its exit code; an exception it throws is printed on stderr as
// "tessera: error: ..." or "tessera: internal error: ..." and mapped to 2 or 1.
int exit_code_of(const std::function<int()>& body);

}  // namespace tessera
