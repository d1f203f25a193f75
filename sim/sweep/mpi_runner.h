#pragma once
// The MPI runner of `tessera sweep --mpi` (mpi_main.cpp), for tessera-mpi's main().
namespace tessera::sweep {

struct InProcessRunner;

// Parses `tessera-mpi sweep ...` and runs the sweep on the MPI ranks, each running its points
// through `in_process` (forked children), or executing `tessera run` per point when null.
int mpi_sweep_main(int argc, char** argv, const InProcessRunner* in_process);

}  // namespace tessera::sweep
