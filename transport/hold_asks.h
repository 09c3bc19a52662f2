// When one link holds a message that comes before its receive, and up to how many bytes: the
// state tcp's Connection and shm's Channel share for Transport::HoldEarly (every peer, from a
// second communicator on) and Endpoint::AskHold (one peer, while the mailbox asks).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace hoop {

struct HoldAsks {
  size_t early = 0;  // HoldEarly's cap; 0: stall instead (one communicator on the link)
  size_t open = 0;   // AskHold's open asks, their cap and the match bits they spare
  size_t cap = 0;
  uint64_t spare = 0;

  void Ask(bool on, size_t c, uint64_t s) {
    if (on) {
      ++open;
      cap = c;
      spare = s;
    } else if (open > 0) {
      --open;
    }
  }
  // The most held bytes at once under which a message with `match` may be held (0: never).
  size_t CapFor(uint64_t match) const { return open > 0 && (match & spare) == 0 ? std::max(early, cap) : early; }
};

}  // namespace hoop
