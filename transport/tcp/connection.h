// One TCP connection to one peer: the non-blocking state machine under TcpTransport.
//
// Wire format: every message is a 32-byte header {magic, kind, tag, length, check} and then
// `length` payload bytes. Sends are queued and written with sendmsg (several messages per call
// when they are small). Receives are posted by tag; when a header arrives, its tag is looked up
// and the payload is read straight into the posted buffer (no copy). A header whose tag has no
// receive yet "stalls" the connection: nothing more is read from it until one is posted, so an
// early sender is held back by TCP flow control instead of by our memory.
//
// Readiness is edge-triggered: `readable_`/`writable_` record what epoll last said and are
// cleared when a call returns EAGAIN.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "transport/socket.h"
#include "transport/transport.h"

namespace hoop {

class Connection : public Endpoint {
 public:
  Connection(int peer, Fd fd, std::string peer_addr);
  int peer() const override { return peer_; }
  int fd() const { return fd_.get(); }
  void PostSend(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) override;
  void PostRecv(const Region& region, size_t offset, size_t len, Tag tag, uint64_t op_id) override;

  void OnEvents(uint32_t epoll_events);
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

 private:
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
  void Fail(const Status& why, std::vector<Completion>* out);
  void FailSocket(const std::string& what, std::vector<Completion>* out);

  int peer_;
  Fd fd_;
  std::string peer_addr_;
  std::deque<SendOp> sends_;
  std::unordered_map<uint64_t, RecvOp> recvs_;
  std::vector<Completion> deferred_;  // completions produced outside Progress (posts after failure)

  Header hdr_{};
  size_t hdr_got_ = 0;
  bool stalled_ = false;
  bool in_payload_ = false;
  RecvOp current_{};
  size_t payload_got_ = 0;
  std::string abort_text_;

  bool readable_ = true;
  bool writable_ = true;
  bool peer_closed_ = false;
  bool send_ok_ = true;
  bool socket_error_ = false;
  Status failure_;
};

}  // namespace hoop
