#pragma once
// A timing-only bulk transfer (host DMA, weight tile fetch) on a TLM-2.0 generic
// payload. The payload's own data_length is 32-bit, so a transfer over 4 GiB would be
// truncated; the full byte count, and the layer / instruction that labels the target's
// busy interval, travel in the Transfer extension instead of through side calls on the
// target (the engine's trace and per-layer attribution read those labels).
#include <tlm>

#include <algorithm>
#include <climits>
#include <cstdint>

namespace tessera::models {

struct Transfer : tlm::tlm_extension<Transfer> {
  uint64_t bytes = 0;
  int32_t layer = -1;        // -1: not attributed to a layer
  int32_t instruction = -1;  // index into the program, -1: none

  Transfer() = default;
  Transfer(uint64_t b, int32_t l, int32_t i) : bytes(b), layer(l), instruction(i) {}
  tlm::tlm_extension_base* clone() const override { return new Transfer(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override { *this = static_cast<const Transfer&>(other); }
};

// Prepares `payload` for one transfer. No data is carried (timing only), so the data
// pointer is a one-byte dummy; data_length is clamped to what TLM can express and the
// payload owns (and frees) the extension.
inline void set_transfer(tlm::tlm_generic_payload& payload, tlm::tlm_command command, uint64_t address,
                         const Transfer& transfer, unsigned char* dummy) {
  const auto length = static_cast<unsigned int>(std::min<uint64_t>(transfer.bytes, UINT_MAX));
  payload.set_command(command);
  payload.set_address(address);
  payload.set_data_ptr(dummy);
  payload.set_data_length(length);
  payload.set_streaming_width(length);
  payload.set_extension(new Transfer(transfer));
}

// What a target serves: the extension when the initiator set one, else the payload's
// data_length with no labels (a plain TLM initiator, as in the unit tests).
inline Transfer transfer_of(const tlm::tlm_generic_payload& payload) {
  if (const auto* t = payload.get_extension<Transfer>()) return *t;
  return Transfer{payload.get_data_length(), -1, -1};
}

}  // namespace tessera::models
