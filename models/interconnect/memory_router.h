#pragma once
// Several initiators (the weight fetchers of every matrix unit, the device DMA engines of
// every core) on the one target socket of device memory: each request is passed through
// unchanged, so the memory model's own servers (channels, pseudo channels) are where they
// contend. It adds no time.
#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>

namespace tessera::models {

class MemoryRouter : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<MemoryRouter> target;
  tlm_utils::simple_initiator_socket<MemoryRouter> initiator;

  explicit MemoryRouter(sc_core::sc_module_name name) : sc_module(name), target("target"), initiator("initiator") {
    target.register_b_transport(this, &MemoryRouter::b_transport);
  }

 private:
  void b_transport(int /*initiator*/, tlm::tlm_generic_payload& payload, sc_core::sc_time& delay) {
    initiator->b_transport(payload, delay);
  }
};

}  // namespace tessera::models
