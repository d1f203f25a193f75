#pragma once
// Error classes shared by every stage. The CLI maps InputError to exit code 2
// (bad config, workload or command line) and anything else to exit code 1.
#include <stdexcept>
#include <string>

namespace tessera {

// Bad user input: the message names the file, line, key or node and what is allowed.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tessera
