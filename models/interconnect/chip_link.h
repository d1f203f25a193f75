#pragma once
// Chip-to-chip links (ICI) and the collectives that tensor parallelism runs on them:
// ArchConfig::ici (the `ici:` section, sim/config/arch_config.cpp), used by the LLM serving
// cost model for each layer's all-reduce / all-gather.
//
// A collective is simulated, not a closed formula: every directed link (one port, one
// direction) is a FIFO server that a transfer occupies for bytes / bandwidth, with the
// latency added to its arrival (pipeline depth, not occupancy, as PcieLink); the collective's
// algorithm is unrolled into transfers with data dependencies and played through a plain C++
// discrete-event loop (events: a transfer becoming ready; ties broken by creation order, so
// the result is deterministic). Not SystemC: a process gets one elaboration, and the caller
// calls this thousands of times while building cost tables, also in forked children; the
// project has no reusable event engine in plain C++ (sim/serve's queue is specific to
// request batches, BandwidthServer counts integer cycles), so this file has its own small loop.
//
// Algorithms (the data are split into streams that each use one direction of the links):
// - ring: a bidirectional ring; half the data goes round each way. All-reduce is reduce-
//   scatter + all-gather: 2(N-1) steps of bytes/2/N per direction; a step's chunk is striped
//   over the ports/2 links that join a chip to each neighbour.
// - torus_2d: per-dimension rings (x then y, or y then x), four streams: a quarter of the data
//   on each of +x-then-+y, -x-then--y, +y-then-+x, -y-then--x, so all four port groups are busy;
//   when the two dimensions differ the streams meet on the same links and queue there.
// - wraparound false (a mesh axis): the ring's closing hop goes back through the chips in
//   between, on the opposite direction's links, which the other stream also uses; contention
//   then halves the bandwidth, as on TPU slices whose axes have no wraparound link.
// Reductions take no time (the vector unit adds a chunk far faster than a link delivers it);
// uneven splits are real-valued (no padding).
#include <cstdint>

namespace tessera::models {

struct ChipLinkParams {
  double bandwidth_gb_per_s = 0;  // per port, per direction (1 GB = 1e9 bytes)
  double latency_ns = 0;          // per hop: added to each transfer's arrival
  int ports = 0;                  // ICI ports per chip; ring uses 2 groups of ports/2, torus_2d 4 groups of ports/4
  enum class Topology { kRing, kTorus2d } topology = Topology::kRing;
  // torus_2d: the slice's shape; 0 x 0: the chips of a collective form the most square
  // x <= y torus (8 chips: 2 x 4; a prime count: 1 x N). Given: chips must equal x * y.
  int torus_x = 0, torus_y = 0;
  // Links close each ring (a torus); false: a mesh, the closing hop routes back (see above).
  bool wraparound = true;
};

const char* topology_name(ChipLinkParams::Topology t);  // "ring" | "torus_2d"

// Seconds until every chip holds the result, starting with idle links. chips >= 1 (1: 0 s),
// bytes >= 0 (0: 0 s). Throws InputError when torus_x * torus_y is given and differs from
// chips, std::invalid_argument for a negative count or unusable params (ArchConfig's parser
// has refused those already).
// All-reduce of bytes_per_chip on every chip (the sum lands on every chip).
double all_reduce_s(const ChipLinkParams& p, int chips, int64_t bytes_per_chip);
// All-gather: bytes_per_chip is each chip's shard; every chip ends with chips x shard.
double all_gather_s(const ChipLinkParams& p, int chips, int64_t bytes_per_chip);
// Reduce-scatter: bytes_per_chip is each chip's full input; each ends with 1/chips of the sum.
double reduce_scatter_s(const ChipLinkParams& p, int chips, int64_t bytes_per_chip);

}  // namespace tessera::models
