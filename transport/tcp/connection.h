// One TCP connection to one peer: the non-blocking state machine under TcpTransport.
//
// Wire format: every message is a 32-byte header {magic, kind, tag, length, check} and then
// `length` payload bytes. Sends are queued and written with sendmsg (several messages per call
// when they are small). Receives are posted by tag; when a header arrives, its tag is looked up
// and the payload goes into the posted buffer. Reads take up to kReadAhead bytes at once, so a
// header and a small payload (and what follows them) cost one recv; a payload of kReadAhead or
// more still left to come is read straight into the posted buffer (no copy). A read that comes
// back short means the socket is empty: no recv is spent to hear EAGAIN. A header whose tag has no
// receive yet "stalls" the connection: nothing more is read from it until one is posted, so an
// early sender is held back by TCP flow control instead of by our memory.
//
// A peer that closes while the stream's head still waits for its receive (it finished and left
// before we were ready for its last messages) is not lost: the rest of its stream is read at once
// and kept, each message goes to its receive whenever that is posted, in any order, and only a
// receive for something it never sent fails (connection_closed.cc).
//
// Once the connections are shared by a second communicator (HoldEarly), or while an ask for this
// peer is open (AskHold: a point-to-point call with it), a header with no receive is read into
// memory of its own instead (up to a cap, then it stalls as above) and handed over when its
// receive is posted (held.cc): the messages behind it go on.
//
// Readiness is edge-triggered: `readable_`/`writable_` record what epoll last said and are
// cleared when a call returns EAGAIN.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "transport/hold_asks.h"
#include "transport/transport.h"
#include "transport/util/socket.h"

namespace hoop {

class Connection : public Endpoint {
 public:
  Connection(int peer, Fd fd, std::string peer_addr);
  int peer() const override { return peer_; }
  int fd() const { return fd_.get(); }
  int64_t Retransmits() const override;
  void PostSend(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) override;
  void PostRecv(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) override;

  void OnEvents(uint32_t epoll_events);
  // The next Progress tries a recv whatever epoll said last (an empty socket costs one EAGAIN).
  void AssumeReadable() { readable_ = true; }
  // Reads and writes until the socket would block (or nothing is left to do).
  void Progress(std::vector<Completion>* out);
  bool HasPendingSends() const { return !sends_.empty(); }
  bool failed() const { return !failure_.ok(); }
  // The socket still takes bytes: true after a protocol failure (a mismatch), false once the
  // connection itself broke. Abort frames need only this.
  bool can_send() const { return send_ok_; }
  // Queues an abort frame carrying `cause`, behind whatever is being sent now.
  void QueueAbort(const std::string& cause);
  void Shutdown();
  // The orderly end (close.cc): the FIN behind the last byte written; then, each call, input
  // read and dropped and true once every byte written has been acknowledged, or the peer is gone
  // (`why` then says so). False, with `why`, while the peer still has bytes to take.
  void CloseWrite();
  bool Delivered(std::string* why);
  // held.cc: from now on, a message with no receive posted is held, up to `cap` bytes at once.
  void HoldEarly(size_t cap) { holds_.early = cap; }
  // This peer's early messages held while an ask is open (Endpoint::AskHold); a stalled header is
  // looked at again at the next Progress (HasInput), so an ask opened while one waits holds it then.
  void AskHold(bool on, size_t cap, uint64_t spare) override { holds_.Ask(on, cap, spare); }

 private:
  static constexpr uint32_t kMagic = 0x48505431;  // "HPT1"
  static constexpr uint32_t kData = 1;
  static constexpr uint32_t kAbort = 2;
  static constexpr size_t kMaxAbortText = 4096;

  struct Header {
    uint32_t magic;
    uint32_t kind;
    uint64_t tag;
    uint64_t len;
    uint64_t check;
  };
  struct SendOp {
    Header header;
    const char* data;
    size_t len;
    size_t done = 0;  // bytes of header + payload written
    uint64_t op_id;
    bool internal = false;  // abort frame: no completion
    std::string owned;      // abort frame text
  };
  struct RecvOp {
    char* data;
    size_t len;
    uint64_t check;
    uint64_t op_id;
  };

  void WriteSome(std::vector<Completion>* out);
  void ReadSome(std::vector<Completion>* out);
  bool MatchHeader(std::vector<Completion>* out);  // false: stalled or failed
  // Reads what the socket has into ahead_: true if it got bytes; false if it would block
  // (readable_ cleared) or the connection failed (reported).
  bool ReadAhead(std::vector<Completion>* out);
  // One recv into `dst` (up to `cap`): bytes read, or 0 when it would block or failed.
  size_t RecvInto(char* dst, size_t cap, std::vector<Completion>* out);
  // Something to parse: the socket has bytes, some were read ahead, or a stalled header waits.
  bool HasInput() const { return readable_ || ahead_pos_ < ahead_end_ || (!in_payload_ && hdr_got_ == sizeof(Header)); }
  void Fail(const Status& why, std::vector<Completion>* out);
  // The peer closed behind a stalled head (connection_closed.cc): read the rest to the end,
  // split it into messages, and answer posted receives from them.
  void TakeRest(std::vector<Completion>* out);
  bool ReadRest(std::vector<Completion>* out);  // true once the close was read
  void ParseRest(std::vector<Completion>* out);
  void AnswerFromRest(std::vector<Completion>* out);
  // held.cc: starts reading the current header's payload into held memory (false: over the cap);
  // a held message, once whole, goes to its receive if one is posted (true if one was); a
  // receive being posted takes a whole held message with its tag (true if one was there).
  bool Hold();
  bool HeldDone(std::vector<Completion>* out);
  bool TakeHeld(const RecvOp& r, uint64_t tag, std::vector<Completion>* out);
  Status Lost(const std::string& what) const;
  void FailSocket(const std::string& what, std::vector<Completion>* out);

  int peer_;
  Fd fd_;
  std::string peer_addr_;
  std::deque<SendOp> sends_;
  std::unordered_map<uint64_t, RecvOp> recvs_;
  std::vector<Completion> deferred_;  // completions produced outside Progress (posts after failure)

  Header hdr_{};
  size_t hdr_got_ = 0;
  std::vector<char> ahead_;  // bytes read, not yet parsed: [ahead_pos_, ahead_end_)
  size_t ahead_pos_ = 0, ahead_end_ = 0;
  bool stalled_ = false;
  bool in_payload_ = false;
  RecvOp current_{};
  size_t payload_got_ = 0;
  std::string abort_text_;

  struct Parked {
    uint64_t tag;
    uint64_t check;
    std::string payload;
  };
  bool reading_rest_ = false;  // the peer closed behind a stalled head: ReadSome is done with
  bool rest_known_ = false;    // everything it sent is in parked_
  std::string rest_;           // bytes after the stalled header, up to the close
  std::deque<Parked> parked_;

  struct Held {
    uint64_t tag;
    uint64_t check;
    std::vector<char> bytes;  // its heap block stays put when the deque moves the entry
    bool whole = false;
  };
  std::deque<Held> held_;  // arrival order; the last is being read while holding_
  HoldAsks holds_;         // whether and how much it holds
  size_t held_bytes_ = 0;
  bool holding_ = false;

  bool readable_ = true;
  bool writable_ = true;
  bool peer_closed_ = false;
  bool send_ok_ = true;
  bool socket_error_ = false;
  bool fin_read_ = false;  // Delivered (close.cc) read the peer's FIN: it closed, all its calls done
  Status failure_;
};

}  // namespace hoop
