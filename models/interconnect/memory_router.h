#pragma once
// Several initiators (the weight fetchers of every matrix unit, the device DMA engines of
// every core) on the one target socket of device memory: each request is passed through
// unchanged, so the memory model's own servers (channels, pseudo channels) are where they
// contend. It adds no time.
//
// Where weights live in host memory (residency.weights: host) the router also has a host
// port on the host link: the weight fetchers are connected with Route::kHost and the host
// DMA with them, so their requests queue on the one PCIe server, while the device DMA
// engines still reach device memory (which stays bound, so its counters read zero reads).
#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>

#include <memory>
#include <vector>

namespace tessera::models {

class MemoryRouter : public sc_core::sc_module {
 public:
  enum class Route { kDevice, kHost };
  tlm_utils::multi_passthrough_target_socket<MemoryRouter> target;
  tlm_utils::simple_initiator_socket<MemoryRouter> initiator;  // device memory
  // The host link; only with_host_port (an unbound socket fails elaboration).
  std::unique_ptr<tlm_utils::simple_initiator_socket<MemoryRouter>> host;

  explicit MemoryRouter(sc_core::sc_module_name name, bool with_host_port = false)
      : sc_module(name), target("target"), initiator("initiator") {
    target.register_b_transport(this, &MemoryRouter::b_transport);
    if (with_host_port) host = std::make_unique<tlm_utils::simple_initiator_socket<MemoryRouter>>("host");
  }

  // Binds an initiator's socket to `target`; its requests go where `to` says (the
  // multi-socket numbers its bindings in bind order).
  template <typename Socket>
  void connect(Socket& socket, Route to = Route::kDevice) {
    socket.bind(target);
    routes_.push_back(to);
  }

 private:
  void b_transport(int from, tlm::tlm_generic_payload& payload, sc_core::sc_time& delay) {
    const bool to_host = static_cast<size_t>(from) < routes_.size() && routes_[static_cast<size_t>(from)] == Route::kHost;
    (to_host ? *host : initiator)->b_transport(payload, delay);
  }
  std::vector<Route> routes_;
};

}  // namespace tessera::models
