// The job token handshake. Every connection a hoop process accepts, from a store client or from
// a peer rank, must begin with a Hello that carries the job's secret token and says what it is
// (store client or peer, and which rank). The acceptor answers with one status word; a wrong
// token or a wrong kind is answered "refused", logged with the caller's address, and closed
// before any other byte is read.
//
// The token travels in the clear: it keeps strangers and stale jobs out, it is not encryption.
#pragma once

#include <cstdint>
#include <string>

#include "common/deadline.h"
#include "common/status.h"

namespace hoop {

enum class HelloKind : uint32_t { kStoreClient = 1, kPeer = 2 };

struct Hello {
  HelloKind kind = HelloKind::kPeer;
  int32_t rank = -1;
  std::string comm;  // peers: the communicator's name, so two communicators never cross wires
};

// Client side: sends the hello, waits for the answer.
Status SendHello(int fd, const std::string& token, const Hello& hello, Deadline deadline);

// Server side, for servers that serve many callers at once without blocking on any (the store
// server; the TCP back end's Doorman): looks at the bytes buffered so far. kNeedMore: not a whole hello yet. Otherwise
// `consumed` bytes made the hello,
// and the caller sends HelloAnswer(verdict == kAccepted) (then closes on refusal; `why` says why).
enum class HelloVerdict { kNeedMore, kAccepted, kRefused };
HelloVerdict ParseHello(const std::string& buffered, const std::string& token, HelloKind expected, Hello* hello,
                        size_t* consumed, std::string* why);
std::string HelloAnswer(bool accepted);

}  // namespace hoop
