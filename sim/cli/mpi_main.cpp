// tessera-mpi (sim/sweep/mpi_main.cpp): `tessera sweep --mpi` re-executes as this program.
// Its ranks run their points through the same fork server as a local sweep.
#include "sim/cli/sweep_point.h"
#include "sim/sweep/mpi_runner.h"

int main(int argc, char** argv) {
  return tessera::sweep::mpi_sweep_main(argc, argv, &tessera::cli::sweep_point_runner());
}
