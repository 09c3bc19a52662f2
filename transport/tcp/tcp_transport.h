// TcpTransport: the TCP back end. One listening socket per communicator, one connection per
// peer (the lower rank dials; both ends prove the job token and the communicator name before a
// byte of data moves), one epoll set over all of them. The listening socket is served by a
// Doorman (doorman.h), during start-up and after it, so strangers are refused and logged and
// never hold anyone up. Progress happens inside Poll() on the
// caller's thread; a wait looks without sleeping for 50 us, then blocks in epoll_wait (at once
// when ranks outnumber cores, so they do not starve each other).
#pragma once

#include <map>
#include <memory>

#include "transport/progress_loop.h"
#include "transport/tcp/connection.h"
#include "transport/tcp/doorman.h"
#include "transport/transport.h"
#include "transport/util/socket.h"

namespace hoop {

class TcpTransport : public Transport {
 public:
  static StatusOr<std::unique_ptr<Transport>> Create(const TransportOptions& opts);
  std::string Name() const override { return "tcp"; }
  bool CanConnect(const PeerInfo&, const PeerInfo&) const override { return true; }
  std::string Address() const override { return address_; }
  Status Connect(int peer, const std::string& address, Deadline deadline) override;
  StatusOr<Region> Register(void* ptr, size_t bytes, MemKind kind) override;
  Endpoint* endpoint(int peer) override;
  Status Poll(std::vector<Completion>* out, Deadline deadline, SpinGate gate = {}) override;
  void Abort(const std::string& cause) override;
  Status Close(Deadline deadline) override;  // close.cc
  void HoldEarly(size_t cap) override;       // every connection's, now and later (held.cc)
  // Connections refused so far (wrong token, wrong communicator, after start-up, silent).
  int refused() const { return doorman_.refused(); }

 private:
  TcpTransport(TransportOptions opts, Fd listen_fd, Fd epoll_fd, std::string address);
  Status Adopt(int peer, Fd fd, const std::string& peer_addr);
  // ConnectRetry, in slices that ask opts_.give_up between them where it is set.
  StatusOr<Fd> Dial(const HostPort& to, Deadline deadline);
  // After start-up: refuses newcomers, and has epoll watch every caller still to finish its hello.
  void ServeDoorman();
  void WatchCallers();  // the epoll set watches every caller still to finish its hello
  // ProgressLoop's parts (progress_loop.h): a turn is an epoll_wait without waiting (with a single
  // peer, mostly a recv on its socket instead), a sleep one that waits (up to a second, or until
  // the doorman's next caller expires).
  template <class B>
  friend Status ProgressLoop(B&, const WaitStyle&, std::vector<Completion>*, Deadline, SpinGate);
  Status Progress(std::vector<Completion>* out);
  void Watch(std::vector<Completion>*) {}  // a dead peer's socket says so itself
  Status Sleep(std::vector<Completion>* out, Deadline deadline);
  Status Events(std::vector<Completion>* out, int wait_ms);  // one epoll_wait, then every connection

  TransportOptions opts_;
  Fd listen_fd_;
  Fd epoll_fd_;
  std::string address_;
  std::map<int, std::unique_ptr<Connection>> conns_;
  size_t hold_cap_ = 0;
  std::map<int, std::pair<Fd, std::string>> early_;  // accepted from a peer we were not waiting for yet
  Doorman doorman_;
  bool crowded_;  // ranks outnumber cores on this host: block at once, never spin
  unsigned turns_ = 0;
  bool closed_ = false;  // Close ran  // Progress calls that found nothing, to space out epoll_wait (one peer)
};

}  // namespace hoop
