// What a point-to-point receive reports, and whom it may take from: the words the tagged channel
// (mailbox.h) and the Communicator's front (collectives/api/communicator.h) share.
#pragma once

#include <cstddef>

namespace hoop {

// A receive from any rank.
inline constexpr int kAnySource = -1;

// What a receive got: the sender, its tag and the element count (of the receive's dtype).
struct RecvInfo {
  int source = -1;
  int tag = -1;
  size_t count = 0;
};

}  // namespace hoop
