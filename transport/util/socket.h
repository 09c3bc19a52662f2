// Thin, deadline-aware wrappers over POSIX sockets, shared by the store and the TCP back end.
// Blocking helpers here poll() with the caller's deadline; none of them can wait forever.
#pragma once

#include <cstddef>
#include <string>

#include "common/deadline.h"
#include "common/status.h"

namespace hoop {

// An owned file descriptor (closed on destruction).
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset();

 private:
  int fd_ = -1;
};

struct HostPort {
  std::string host;
  int port = 0;
  std::string ToString() const { return host + ":" + std::to_string(port); }
};
StatusOr<HostPort> ParseHostPort(const std::string& text);  // "127.0.0.1:5000", "[::1]:5000"

// Listens on host:port (port 0 picks a free one); returns the socket (non-blocking: servers
// accept from their poll loops) and the bound port.
StatusOr<Fd> Listen(const std::string& host, int port, int* bound_port);
// A port free on `host` now, for a server some other process starts next (torch's store at
// MASTER_PORT): drawn at random below the kernel's ephemeral range (ip_local_port_range), since
// a port from that range can be handed to any process's outgoing connection between this check
// and that server's bind (EADDRINUSE). Where the range leaves no room below it, one the kernel
// picks; 0: none found.
int FreePortBelowEphemeral(const std::string& host);
// Connects, retrying refused connections (the server may not be up yet) until the deadline.
StatusOr<Fd> ConnectRetry(const HostPort& to, Deadline deadline);
// Accepts a connection waiting on listen_fd without blocking: an invalid Fd when none waits.
// peer receives "ip:port" of the caller. A server out of file descriptors would leave the
// connection queued and its listening socket readable, so a poll loop would spin on it: instead
// the spare descriptor `reserve` (see OpenReserve) is given up for a moment to accept the
// connection and close it, and the error says so.
StatusOr<Fd> AcceptWaiting(int listen_fd, std::string* peer, Fd* reserve);
// A spare descriptor for AcceptWaiting (/dev/null).
Fd OpenReserve();

Status SetNonBlocking(int fd, bool on);
void SetNoDelay(int fd);
void SetSocketBuffers(int fd, int bytes);
std::string PeerName(int fd);
// The local IP address of a connected socket: the address by which this host reaches that peer.
std::string LocalAddressOf(int fd);

// Blocking exchange with a deadline (used during set-up and by the store; not the data path).
Status SendAll(int fd, const void* data, size_t len, Deadline deadline);
Status RecvAll(int fd, void* data, size_t len, Deadline deadline);

}  // namespace hoop
