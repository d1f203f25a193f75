#include "models/interconnect/chip_link.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim/common/error.h"

namespace tessera::models {
namespace {

enum class Collective { kAllReduce, kAllGather, kReduceScatter };

// The chips of a collective as one or two ring dimensions, and the links between them.
// Chip c has coordinates (c % size[0], c / size[0]). Port group g = 2 * dim + (0: +, 1: -)
// has `stripes` links; directed link id = (c * groups + g) * stripes + stripe.
struct Fabric {
  int dims = 1;
  int size[2] = {1, 1};
  int groups = 2;
  int stripes = 1;
  bool wraparound = true;
  double bytes_per_s = 0;
  double latency_s = 0;

  int coord(int chip, int d) const { return d == 0 ? chip % size[0] : chip / size[0]; }
  int with_coord(int chip, int d, int v) const {
    return d == 0 ? v + size[0] * coord(chip, 1) : coord(chip, 0) + size[0] * v;
  }
  int group(int d, int dir) const { return 2 * d + (dir > 0 ? 0 : 1); }
  int hop_base(int chip, int d, int dir) const { return (chip * groups + group(d, dir)) * stripes; }

  // The hops (link ids of stripe 0) from `chip` to its ring successor in `dir` along `d`:
  // one hop, or on a mesh axis the closing hop's way back through the chips in between.
  void route(int chip, int d, int dir, std::vector<int>& hops) const {
    const int n = size[d], i = coord(chip, d);
    const bool closing = dir > 0 ? i == n - 1 : i == 0;
    if (!closing || wraparound) {
      hops.push_back(hop_base(chip, d, dir));
      return;
    }
    for (int j = i; j != i + (n - 1) * -dir; j -= dir) hops.push_back(hop_base(with_coord(chip, d, j), d, -dir));
  }
};

// One step's send from one chip to its successor: `stripes` equal transfers, one per
// parallel link. It becomes ready when the group that last delivered data to its sender
// has fully arrived (the chunk it forwards or reduces); `successor` is the group that
// waits on this one.
struct Group {
  double stripe_s = 0;  // serialization of one stripe
  int hop_begin = 0, hop_count = 0;
  int successor = -1;
};

// One direction of data through the phases: (dimension, chunk bytes, steps).
struct Phase {
  int dim;
  double chunk_bytes;
  int steps;
};

class Schedule {
 public:
  explicit Schedule(const Fabric& f, int chips) : f_(f), chips_(chips), last_(chips, -1), next_(chips, -1) {}

  // Appends one stream: its phases in order, every chip in step.
  void add_stream(int dir, const std::vector<Phase>& phases) {
    std::fill(last_.begin(), last_.end(), -1);
    for (const Phase& ph : phases) {
      const double stripe_s = ph.chunk_bytes / static_cast<double>(f_.stripes) / f_.bytes_per_s;
      for (int step = 0; step < ph.steps; ++step) {
        for (int c = 0; c < chips_; ++c) {
          const int n = f_.size[ph.dim], i = f_.coord(c, ph.dim);
          const int to = f_.with_coord(c, ph.dim, (i + dir + n) % n);
          Group g;
          g.stripe_s = stripe_s;
          g.hop_begin = static_cast<int>(hops_.size());
          f_.route(c, ph.dim, dir, hops_);
          g.hop_count = static_cast<int>(hops_.size()) - g.hop_begin;
          const int id = static_cast<int>(groups_.size());
          groups_.push_back(g);
          if (last_[c] < 0) {
            initial_.push_back(id);
          } else {
            groups_[static_cast<size_t>(last_[c])].successor = id;
          }
          next_[static_cast<size_t>(to)] = id;
        }
        last_.swap(next_);
      }
    }
  }

  // The event loop: groups in order of readiness (then creation); each stripe waits for
  // every link on its route, holds them for its serialization, and arrives a latency per
  // hop later. Returns when the last transfer arrives.
  double run(size_t link_count) const {
    std::vector<double> free_at(link_count, 0.0);
    using Event = std::pair<double, int>;  // (ready s, group)
    std::priority_queue<Event, std::vector<Event>, std::greater<>> ready;
    for (int id : initial_) ready.emplace(0.0, id);
    double done = 0;
    while (!ready.empty()) {
      const auto [at, id] = ready.top();
      ready.pop();
      const Group& g = groups_[static_cast<size_t>(id)];
      double arrived = at;
      for (int s = 0; s < f_.stripes; ++s) {
        double start = at;
        for (int h = g.hop_begin; h < g.hop_begin + g.hop_count; ++h) start = std::max(start, free_at[static_cast<size_t>(hops_[static_cast<size_t>(h)] + s)]);
        const double end = start + g.stripe_s;
        for (int h = g.hop_begin; h < g.hop_begin + g.hop_count; ++h) free_at[static_cast<size_t>(hops_[static_cast<size_t>(h)] + s)] = end;
        arrived = std::max(arrived, end + f_.latency_s * g.hop_count);
      }
      done = std::max(done, arrived);
      if (g.successor >= 0) ready.emplace(arrived, g.successor);
    }
    return done;
  }

 private:
  const Fabric& f_;
  int chips_;
  std::vector<int> last_, next_;  // per chip: the group that last delivered to it (-1: none yet)
  std::vector<Group> groups_;
  std::vector<int> hops_;
  std::vector<int> initial_;  // groups ready at time 0
};

Fabric fabric_of(const ChipLinkParams& p, int chips) {
  const bool torus = p.topology == ChipLinkParams::Topology::kTorus2d;
  const int min_ports = torus ? 4 : 2;
  if (!(p.bandwidth_gb_per_s > 0) || !std::isfinite(p.bandwidth_gb_per_s) || !(p.latency_ns >= 0) ||
      !std::isfinite(p.latency_ns) || p.ports < min_ports) {
    throw std::invalid_argument("chip links: bandwidth_gb_per_s must be > 0, latency_ns >= 0 and ports >= " +
                                std::to_string(min_ports) + " for " + topology_name(p.topology));
  }
  Fabric f;
  f.wraparound = p.wraparound;
  f.bytes_per_s = p.bandwidth_gb_per_s * 1e9;
  f.latency_s = p.latency_ns * 1e-9;
  if (!torus) {
    f.dims = 1;
    f.size[0] = chips;
    f.groups = 2;
    f.stripes = p.ports / 2;
    return f;
  }
  f.dims = 2;
  f.groups = 4;
  f.stripes = p.ports / 4;
  if (p.torus_x != 0 || p.torus_y != 0) {
    if (p.torus_x < 1 || p.torus_y < 1 || static_cast<int64_t>(p.torus_x) * p.torus_y != chips) {
      throw InputError("ici: torus_x x torus_y = " + std::to_string(p.torus_x) + " x " + std::to_string(p.torus_y) +
                       " chips, but the collective spans " + std::to_string(chips) +
                       " chips; give a parallelism of torus_x * torus_y chips, or leave torus_x/torus_y out to "
                       "arrange the chips as the most square torus");
    }
    f.size[0] = p.torus_x;
    f.size[1] = p.torus_y;
    return f;
  }
  int x = 1;  // the largest divisor <= sqrt(chips)
  for (int d = 1; static_cast<int64_t>(d) * d <= chips; ++d) {
    if (chips % d == 0) x = d;
  }
  f.size[0] = x;
  f.size[1] = chips / x;
  return f;
}

// The phases of one stream that starts along `first` (then the other dimension), carrying
// `bytes` of each chip's data (all-gather: of each chip's shard).
std::vector<Phase> phases_of(Collective kind, const Fabric& f, int first, double bytes) {
  const int a = first, b = f.dims == 2 ? 1 - first : -1;
  const int na = f.size[a], nb = b >= 0 ? f.size[b] : 1;
  std::vector<Phase> out;
  auto add = [&](int d, double chunk, int n) {
    if (d >= 0 && n > 1) out.push_back({d, chunk, n - 1});
  };
  const double all = static_cast<double>(na) * nb;
  switch (kind) {
    case Collective::kReduceScatter:
      add(a, bytes / na, na);
      add(b, bytes / all, nb);
      break;
    case Collective::kAllReduce:
      add(a, bytes / na, na);
      add(b, bytes / all, nb);
      add(b, bytes / all, nb);
      add(a, bytes / na, na);
      break;
    case Collective::kAllGather:
      add(a, bytes, na);
      add(b, bytes * na, nb);
      break;
  }
  return out;
}

double simulate(Collective kind, const ChipLinkParams& p, int chips, int64_t bytes_per_chip) {
  if (chips < 1 || bytes_per_chip < 0) {
    throw std::invalid_argument("chip links: a collective needs chips >= 1 and bytes >= 0, got " +
                                std::to_string(chips) + " chips, " + std::to_string(bytes_per_chip) + " bytes");
  }
  const Fabric f = fabric_of(p, chips);
  if (chips == 1 || bytes_per_chip == 0) return 0.0;
  Schedule schedule(f, chips);
  // One stream per port group: both directions of each dimension, each dimension first once.
  const int streams = 2 * f.dims;
  const double bytes = static_cast<double>(bytes_per_chip) / streams;
  for (int first = 0; first < f.dims; ++first) {
    const std::vector<Phase> phases = phases_of(kind, f, first, bytes);
    schedule.add_stream(+1, phases);
    schedule.add_stream(-1, phases);
  }
  return schedule.run(static_cast<size_t>(chips) * static_cast<size_t>(f.groups) * static_cast<size_t>(f.stripes));
}

}  // namespace

const char* topology_name(ChipLinkParams::Topology t) {
  return t == ChipLinkParams::Topology::kTorus2d ? "torus_2d" : "ring";
}

double all_reduce_s(const ChipLinkParams& p, int chips, int64_t bytes_per_chip) {
  return simulate(Collective::kAllReduce, p, chips, bytes_per_chip);
}

double all_gather_s(const ChipLinkParams& p, int chips, int64_t bytes_per_chip) {
  return simulate(Collective::kAllGather, p, chips, bytes_per_chip);
}

double reduce_scatter_s(const ChipLinkParams& p, int chips, int64_t bytes_per_chip) {
  return simulate(Collective::kReduceScatter, p, chips, bytes_per_chip);
}

}  // namespace tessera::models
