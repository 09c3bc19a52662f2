#include "transport/util/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

namespace hoop {

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = o.release();
  }
  return *this;
}
Fd::~Fd() { reset(); }
void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

StatusOr<HostPort> ParseHostPort(const std::string& text) {
  HostPort hp;
  std::string port;
  if (!text.empty() && text[0] == '[') {
    auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return InvalidArgument("bad address '" + text + "': expected [HOST]:PORT");
    hp.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0)
      return InvalidArgument("bad address '" + text + "': expected HOST:PORT");
    hp.host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  char* end = nullptr;
  long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p < 0 || p > 65535) return InvalidArgument("bad port in address '" + text + "'");
  hp.port = static_cast<int>(p);
  return hp;
}

namespace {
StatusOr<addrinfo*> Resolve(const std::string& host, int port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  std::string p = std::to_string(port);
  int rc = ::getaddrinfo(host.c_str(), p.c_str(), &hints, &res);
  if (rc != 0) return Unavailable("cannot resolve '" + host + "': " + gai_strerror(rc));
  return res;
}

Status WaitFd(int fd, short events, Deadline deadline, const char* what) {
  while (true) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, deadline.RemainingMs(1000));
    if (rc > 0) return Status::Ok();
    if (rc < 0 && errno != EINTR) return ErrnoStatus(Code::kUnavailable, what, errno);
    if (deadline.Expired()) return DeadlineExceeded(std::string(what) + ": timed out");
  }
}
}  // namespace

StatusOr<Fd> Listen(const std::string& host, int port, int* bound_port) {
  HOOP_ASSIGN_OR_RETURN(addrinfo * res, Resolve(host, port, true));
  Status last = Unavailable("no usable address for " + host);
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd.valid()) continue;
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      last = ErrnoStatus(Code::kUnavailable, "bind " + host + ":" + std::to_string(port), errno);
      continue;
    }
    if (::listen(fd.get(), 128) != 0) {
      last = ErrnoStatus(Code::kUnavailable, "listen", errno);
      continue;
    }
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len);
    *bound_port = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                           : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    ::freeaddrinfo(res);
    return fd;
  }
  ::freeaddrinfo(res);
  return last;
}

int FreePortBelowEphemeral(const std::string& host) {
  constexpr int kLowest = 10000;  // above the well-known and most registered servers' ports
  int first_ephemeral = 32768;    // Linux's default, where the file cannot be read
  if (std::FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(f, "%d", &first_ephemeral) != 1) first_ephemeral = 32768;
    std::fclose(f);
  }
  int port = 0;
  if (first_ephemeral - 1 > kLowest) {
    std::mt19937 rng(std::random_device{}());
    std::uniform_int_distribution<int> pick(kLowest, first_ephemeral - 1);
    for (int i = 0; i < 200; ++i)
      if (Listen(host, pick(rng), &port).ok()) return port;
  }
  return Listen(host, 0, &port).ok() ? port : 0;
}

StatusOr<Fd> ConnectRetry(const HostPort& to, Deadline deadline) {
  Backoff backoff(5, 200);
  Status last = Unavailable("cannot connect to " + to.ToString());
  while (true) {
    HOOP_ASSIGN_OR_RETURN(addrinfo * res, Resolve(to.host, to.port, false));
    for (addrinfo* ai = res; ai; ai = ai->ai_next) {
      Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
      if (!fd.valid()) continue;
      int rc = ::connect(fd.get(), ai->ai_addr, ai->ai_addrlen);
      if (rc != 0 && errno == EINPROGRESS) {
        Status w = WaitFd(fd.get(), POLLOUT, deadline, "connect");
        if (!w.ok()) {
          last = w.WithContext("connect to " + to.ToString());
          continue;
        }
        int err = 0;
        socklen_t len = sizeof(err);
        ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
        errno = err;
      }
      if (rc == 0) {
        ::freeaddrinfo(res);
        HOOP_RETURN_IF_ERROR(SetNonBlocking(fd.get(), false));
        return fd;
      }
      last = ErrnoStatus(Code::kUnavailable, "connect to " + to.ToString(), errno);
    }
    ::freeaddrinfo(res);
    if (deadline.Expired()) return last;
    backoff.Pause(deadline);
  }
}

Fd OpenReserve() { return Fd(::open("/dev/null", O_RDONLY | O_CLOEXEC)); }

StatusOr<Fd> AcceptWaiting(int listen_fd, std::string* peer, Fd* reserve) {
  while (true) {
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      Fd out(fd);
      if (peer) *peer = PeerName(fd);
      return out;
    }
    const int err = errno;
    if (err == EINTR || err == ECONNABORTED) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) return Fd();
    if ((err == EMFILE || err == ENFILE) && reserve && reserve->valid()) {
      reserve->reset();
      Fd shed(::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC));
      std::string who = shed.valid() ? PeerName(shed.get()) : "?";
      shed.reset();
      *reserve = OpenReserve();
      return ErrnoStatus(Code::kUnavailable, "accept: dropped a connection from " + who, err);
    }
    return ErrnoStatus(Code::kUnavailable, "accept", err);
  }
}

Status SetNonBlocking(int fd, bool on) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0) return ErrnoStatus(Code::kInternal, "fcntl", errno);
  flags = on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
  if (::fcntl(fd, F_SETFL, flags) < 0) return ErrnoStatus(Code::kInternal, "fcntl", errno);
  return Status::Ok();
}

void SetNoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void SetSocketBuffers(int fd, int bytes) {
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
}

namespace {
// "ip" of a socket address (and its port through `port`), for PeerName and LocalAddressOf.
std::string AddressText(const sockaddr_storage& ss, int* port) {
  char host[INET6_ADDRSTRLEN] = "";
  *port = 0;
  if (ss.ss_family == AF_INET) {
    auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
    *port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
    *port = ntohs(a->sin6_port);
  }
  return host;
}
}  // namespace

std::string PeerName(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  int port = 0;
  std::string host = AddressText(ss, &port);
  return (host.empty() ? "?" : host) + ":" + std::to_string(port);
}

std::string LocalAddressOf(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "";
  int port = 0;
  return AddressText(ss, &port);
}

Status SendAll(int fd, const void* data, size_t len, Deadline deadline) {
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    ssize_t n = ::send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      HOOP_RETURN_IF_ERROR(WaitFd(fd, POLLOUT, deadline, "send"));
      continue;
    }
    return ErrnoStatus(Code::kUnavailable, "send", errno);
  }
  return Status::Ok();
}

Status RecvAll(int fd, void* data, size_t len, Deadline deadline) {
  char* p = static_cast<char*>(data);
  while (len > 0) {
    ssize_t n = ::recv(fd, p, len, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return Unavailable("connection closed by peer");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      HOOP_RETURN_IF_ERROR(WaitFd(fd, POLLIN, deadline, "recv"));
      continue;
    }
    return ErrnoStatus(Code::kUnavailable, "recv", errno);
  }
  return Status::Ok();
}

}  // namespace hoop
