#include "sim/common/exit_code.h"

#include <exception>
#include <iostream>
#include <new>

#include "sim/common/error.h"

namespace tessera {

int exit_code_of(const std::function<int()>& body) {
  try {
    return body();
  } catch (const InputError& e) {
    std::cerr << "tessera: error: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    // The stages check their size estimates first; an input too big for this machine
    // that still gets here is named as such, not reported as a bug.
    std::cerr << "tessera: error: out of memory: this workload (at this batch, or with --functional at this "
                 "--functional-batch) needs more memory than this process may use; use a smaller batch or workload\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "tessera: internal error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace tessera
