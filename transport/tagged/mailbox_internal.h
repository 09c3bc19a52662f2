// The mailbox's pieces shared by its files (mailbox.cc: frames, sending, arriving, completions;
// mailbox_failure.cc: timeouts, lost peers, shutdown). Not a public header.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>

#include "transport/tagged/mailbox.h"

namespace hoop {

// The wire's constants, kept out of hoop's own namespace.
namespace mailbox_wire {
inline constexpr size_t kFrameBytes = 64;
inline constexpr size_t kInlineBytes = 24;
inline constexpr size_t kFramesPerBlock = 256;
inline constexpr uint64_t kFrameCheck = 0x6672616d65703270;  // "p2pframe": both ends must agree
inline constexpr uint64_t kDataCheck = 0x6461746170327000;
// Match words: bit 63 (kP2pBit), then the communicator's bits 55-62 (shared_transport.h), so a
// payload piece's word is kDataBit, 30 bits of message number and 24 of piece; a frame's is its
// 48-bit number. Op ids: kind in bits 56-62, the communicator's bits 48-55, then the 48-bit id.
inline constexpr uint64_t kDataBit = uint64_t{1} << 54;
inline constexpr uint64_t kIdMask = (uint64_t{1} << 48) - 1;
enum FrameKind : uint32_t { kEager = 1, kRts, kCts, kCredit, kNack, kBye };
// A NACK's tag: why the sender gave the message up (its HOOP_TIMEOUT, or it freed the communicator).
enum NackWhy : int32_t { kNackExpired = 0, kNackFreed = 1 };
}  // namespace mailbox_wire
using namespace mailbox_wire;  // NOLINT: the mailbox's files only include this header

// Whether a posted receive takes a message from `peer` with `tag` (any-source takes any peer's).
inline bool Matches(const P2pCall& recv, int peer, int tag) {
  return (recv.peer == kAnySource || recv.peer == peer) && recv.tag == tag;
}

struct Mailbox::Frame {
  uint32_t kind = 0;
  int32_t tag = 0;
  uint64_t bytes = 0;   // the message's
  uint64_t msg = 0;     // the message's number on its sender's count to this receiver
  uint64_t credit = 0;  // returned to the frame's receiver
  uint32_t piece = 0;   // payload piece size
  uint8_t dtype = 0;
  uint8_t pad[3] = {};
  char data[kInlineBytes] = {};
};

struct Mailbox::Arrival {
  uint64_t id = 0;
  int peer = -1;
  int tag = 0;
  uint64_t msg = 0;
  uint64_t bytes = 0;
  DType dtype = DType::kU8;
  bool rndv = false;
  uint32_t piece = 0;
  uint64_t cost = 0;  // credit its sender spent on it
  char small[kInlineBytes] = {};
  std::unique_ptr<char[]> own;         // an unexpected payload, or a refused one's landing piece
  const char* from = nullptr;          // where the delivered bytes are (small, own, or a send to self)
  std::shared_ptr<P2pCall> self_send;  // a send to self held by reference
  size_t pieces_left = 0;
  bool posted = false;  // its payload's receives are posted (or it had none to post)
  bool landed = false;
  std::shared_ptr<P2pCall> call;  // the receive it matched
  Status refused;                 // why the receive cannot take it (the payload is drained)
  Status nack;                    // its sender gave up on it
};

struct Mailbox::Send {
  uint64_t id = 0;
  std::shared_ptr<P2pCall> call;  // null: the zero payload answering a late CTS
  int peer = -1;
  uint64_t msg = 0;
  uint64_t bytes = 0;
  Region region;
  std::unique_ptr<char[]> own;
  uint32_t piece = 0;
  size_t pieces_left = 0;
  enum { kWaiting, kAwaitingCts, kSending } state = kWaiting;
};

struct Mailbox::PeerState {
  uint64_t next_in = 0, next_out = 0, next_msg = 0;
  uint64_t credit = 0, owed = 0;
  std::deque<uint64_t> waiting;  // send ids, in post order
  Status lost;                   // the peer is gone
  bool bye = false;              // the peer freed the communicator: no more frames come from it
  size_t asks = 0;               // open calls that asked its link to hold (Mailbox::AskHold)
};

}  // namespace hoop
