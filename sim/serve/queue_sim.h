#pragma once
// The discrete-event simulation of one serving configuration (model.h): requests arrive,
// take host CPU time on a shared pool of cores, wait in one batching queue until the
// policy closes a batch, take per-batch host CPU time, and go to a replica (round-robin or
// shortest queue) that serves batches first-come-first-served; a batch's host transfers
// pass the root complex all replicas share. Plain C++, no SystemC: the service times come
// from a table that SystemC runs filled beforehand (service_runs.h).
//
// Cost: a few events per request on a heap no larger than the number of cores plus
// replicas plus two, and no heap allocation per request (arrays sized once per run).
#include "sim/serve/model.h"

namespace tessera::serve {

// Runs `c.requests` requests (a trace: at most that many of its own). Throws InputError on
// a configuration it cannot run (a batch above the service table, a closed loop with a
// batch above 1, a trace request larger than the batch).
SimResult simulate(const SimConfig& c);

// The latency at quantile q (0.99) of `latencies`, as MLPerf LoadGen reports it: the
// element at index floor(n * q) of the sorted list. Reorders `latencies`.
double quantile(std::vector<double>& latencies, double q);

}  // namespace tessera::serve
