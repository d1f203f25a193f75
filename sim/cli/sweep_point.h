#pragma once
// The fork server of `tessera sweep` (sim/sweep/runner.h InProcessRunner) for `tessera` and
// `tessera-mpi`: a point runs as `tessera run` would, in a forked child of the sweep process
// (or of an MPI rank), with the workload imported once per process and the compiled program
// shared between the points that differ only in config keys the compiler does not read.
#include "sim/sweep/runner.h"

namespace tessera::cli {

const sweep::InProcessRunner& sweep_point_runner();

}  // namespace tessera::cli
