#include "transport/tcp/tcp_transport.h"

#include <poll.h>
#include <sched.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "common/logging.h"
#include "transport/util/handshake.h"

namespace hoop {
namespace {

// How long Poll looks without sleeping before it blocks in epoll_wait.
constexpr auto kSpin = std::chrono::microseconds(50);
// The epoll id of the listening socket and of callers still to finish their hello (peers use
// their rank).
constexpr uint32_t kDoormanId = ~uint32_t{0};

// Registers the back end; lowest priority of all, since every pair of hosts can use TCP.
const bool kRegistered = [] {
  RegisterTransport("tcp", 100, &TcpTransport::Create, [] { return std::string("any host with an IP route"); });
  return true;
}();
}  // namespace

StatusOr<std::unique_ptr<Transport>> TcpTransport::Create(const TransportOptions& opts) {
  (void)kRegistered;
  int port = 0;
  HOOP_ASSIGN_OR_RETURN(Fd lfd, Listen(opts.host, 0, &port));
  Fd ep(::epoll_create1(EPOLL_CLOEXEC));
  if (!ep.valid()) return ErrnoStatus(Code::kInternal, "epoll_create1", errno);
  std::string host = opts.host.find(':') != std::string::npos ? "[" + opts.host + "]" : opts.host;
  std::string address = host + ":" + std::to_string(port);
  epoll_event lev{};
  lev.events = EPOLLIN;  // level-triggered: whatever waits is accepted on the next look
  lev.data.u32 = kDoormanId;
  if (::epoll_ctl(ep.get(), EPOLL_CTL_ADD, lfd.get(), &lev) != 0)
    return ErrnoStatus(Code::kInternal, "epoll_ctl", errno);
  return std::unique_ptr<Transport>(new TcpTransport(opts, std::move(lfd), std::move(ep), address));
}

TcpTransport::TcpTransport(TransportOptions opts, Fd listen_fd, Fd epoll_fd, std::string address)
    : opts_(std::move(opts)),
      listen_fd_(std::move(listen_fd)),
      epoll_fd_(std::move(epoll_fd)),
      address_(std::move(address)),
      doorman_(listen_fd_.get(), opts_.token, opts_.comm, opts_.rank, opts_.size),
      crowded_(HostCrowded(opts_)) {}

void TcpTransport::WatchCallers() {
  for (int fd : doorman_.Watched()) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u32 = kDoormanId;
    ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &ev);  // EEXIST for those already watched
  }
}

void TcpTransport::ServeDoorman() {
  std::vector<Doorman::Admitted> none;
  doorman_.Serve(false, &none);
  WatchCallers();
}

Status TcpTransport::Adopt(int peer, Fd fd, const std::string& peer_addr) {
  HOOP_RETURN_IF_ERROR(SetNonBlocking(fd.get(), true));
  SetNoDelay(fd.get());
  // Socket buffers are left to Linux's autotuning: fixing them (1-16 MiB tried) measured
  // slower on loopback (docs/PERF.md).
  auto conn = std::make_unique<Connection>(peer, std::move(fd), peer_addr);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  ev.data.u32 = static_cast<uint32_t>(peer);
  // The descriptor may be watched already, as a caller still saying its hello (WatchCallers).
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, conn->fd(), &ev) != 0 &&
      (errno != EEXIST || ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, conn->fd(), &ev) != 0))
    return ErrnoStatus(Code::kInternal, "epoll_ctl", errno);
  if (hold_cap_ > 0) conn->HoldEarly(hold_cap_);
  conns_[peer] = std::move(conn);
  return Status::Ok();
}

StatusOr<Fd> TcpTransport::Dial(const HostPort& to, Deadline deadline) {
  if (!opts_.give_up) return ConnectRetry(to, deadline);
  while (true) {  // in slices, asking give_up between them
    const Deadline slice = Deadline::After(std::chrono::milliseconds(20));
    auto fd = ConnectRetry(to, slice.at() < deadline.at() ? slice : deadline);
    if (fd.ok() || deadline.Expired()) return fd;
    if (Status stop = opts_.give_up(); !stop.ok()) return stop.WithContext("connecting to " + to.ToString());
  }
}

Status TcpTransport::Connect(int peer, const std::string& address, Deadline deadline) {
  if (peer == opts_.rank || peer < 0 || peer >= opts_.size)
    return InvalidArgument("tcp: cannot connect to rank " + std::to_string(peer));
  if (opts_.rank < peer) {
    HOOP_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(address));
    HOOP_ASSIGN_OR_RETURN(Fd fd, Dial(hp, deadline));
    Hello hello{HelloKind::kPeer, opts_.rank, opts_.comm};
    Status s = SendHello(fd.get(), opts_.token, hello, deadline);
    if (!s.ok()) return s.WithContext("connecting to rank " + std::to_string(peer) + " at " + address);
    return Adopt(peer, std::move(fd), address);
  }
  // The higher rank accepts, until the connection from `peer` arrives; others are kept. Every
  // caller's hello is read as it arrives, so none can hold up the others.
  while (true) {
    std::vector<Doorman::Admitted> admitted;
    doorman_.Serve(true, &admitted);
    for (auto& a : admitted) early_[a.rank] = {std::move(a.fd), a.address};
    auto it = early_.find(peer);
    if (it != early_.end()) {
      Fd fd = std::move(it->second.first);
      std::string addr = it->second.second;
      early_.erase(it);
      // Callers still saying their hello are heard from Poll's epoll set from now on (and, once
      // start-up is over, refused as soon as they have said it).
      WatchCallers();
      return Adopt(peer, std::move(fd), addr);
    }
    if (deadline.Expired())
      return DeadlineExceeded("waiting for rank " + std::to_string(peer) + " to connect: timed out (" +
                              opts_.timeout_name + ")");
    if (opts_.give_up)
      if (Status stop = opts_.give_up(); !stop.ok())
        return stop.WithContext("waiting for rank " + std::to_string(peer) + " to connect");
    std::vector<pollfd> fds;
    for (int fd : doorman_.Watched()) fds.push_back({fd, POLLIN, 0});
    const int most = opts_.give_up ? 20 : 1000;
    if (::poll(fds.data(), fds.size(), doorman_.NextExpiryMs(deadline.RemainingMs(most))) < 0 && errno != EINTR)
      return ErrnoStatus(Code::kInternal, "poll", errno);
  }
}

StatusOr<Region> TcpTransport::Register(void* ptr, size_t bytes, MemKind kind) {
  if (!HostVisible(kind))
    return Unimplemented("tcp transport: only host memory is supported (got " + std::string(MemKindName(kind)) +
                         " memory)");
  return Region{ptr, bytes, kind, 0};
}

Endpoint* TcpTransport::endpoint(int peer) {
  auto it = conns_.find(peer);
  return it == conns_.end() ? nullptr : it->second.get();
}

Status TcpTransport::Poll(std::vector<Completion>* out, Deadline deadline, SpinGate gate) {
  // A turn is a system call; the slower look (the clock, the peers' processes) every fourth.
  return ProgressLoop(*this, WaitStyle{"tcp", kSpin, 3, crowded_}, out, deadline, gate);
}

Status TcpTransport::Progress(std::vector<Completion>* out) {
  // What the connections can finish without a system call first: a reply to a small message
  // often is already read.
  const size_t start = out->size();
  for (auto& [peer, c] : conns_) c->Progress(out);
  if (out->size() > start) return Status::Ok();
  // With a single peer, a turn asks its socket directly: a recv that finds nothing costs what an
  // epoll_wait does, and one that finds the message has read it, a system call sooner (0.3-0.7 us
  // off a 2-rank ping-pong's 5.8). Every 16th turn is still an epoll_wait, for what only epoll
  // says: room to write, a hang-up, strangers at the door.
  if (conns_.size() == 1 && (++turns_ & 15) != 0) {
    Connection& c = *conns_.begin()->second;
    c.AssumeReadable();
    c.Progress(out);
    return Status::Ok();
  }
  return Events(out, 0);
}

Status TcpTransport::Sleep(std::vector<Completion>* out, Deadline deadline) {
  const int wait_ms =
      doorman_.has_callers() ? doorman_.NextExpiryMs(deadline.RemainingMs(1000)) : deadline.RemainingMs(1000);
  return Events(out, wait_ms);
}

Status TcpTransport::Events(std::vector<Completion>* out, int wait_ms) {
  epoll_event events[64];
  int n = ::epoll_wait(epoll_fd_.get(), events, 64, wait_ms);
  if (n < 0 && errno != EINTR) return ErrnoStatus(Code::kInternal, "epoll_wait", errno);
  bool doorman = doorman_.has_callers() && doorman_.NextExpiryMs(1) == 0;
  for (int i = 0; i < n; ++i) {
    if (events[i].data.u32 == kDoormanId) {
      doorman = true;
      continue;
    }
    auto it = conns_.find(static_cast<int>(events[i].data.u32));
    if (it != conns_.end()) it->second->OnEvents(events[i].events);
  }
  if (doorman) ServeDoorman();
  for (auto& [peer, c] : conns_) c->Progress(out);
  return Status::Ok();
}

void TcpTransport::Abort(const std::string& cause) {
  for (auto& [peer, c] : conns_) c->QueueAbort(cause);
  // Flush the abort frames for a short, bounded time; a peer that is not reading will learn of
  // the failure from the closed connection instead.
  Deadline flush = Deadline::After(std::chrono::milliseconds(200));
  std::vector<Completion> ignored;
  epoll_event events[64];
  while (!flush.Expired()) {
    bool pending = false;
    for (auto& [peer, c] : conns_) {
      c->Progress(&ignored);
      pending |= c->HasPendingSends() && c->can_send();
    }
    if (!pending) break;
    int n = ::epoll_wait(epoll_fd_.get(), events, 64, flush.RemainingMs(50));
    for (int i = 0; i < n; ++i) {
      auto it = conns_.find(static_cast<int>(events[i].data.u32));
      if (it != conns_.end()) it->second->OnEvents(events[i].events);
    }
  }
  for (auto& [peer, c] : conns_) c->Shutdown();
}

}  // namespace hoop
