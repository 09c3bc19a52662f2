// The orderly end of a TCP back end (Transport::Close): nothing a completed send wrote is lost.
//
// A send completes once its bytes are in the kernel, and the peer may take them much later (it
// had not posted the receive; it was busy). Closing a socket that still has unread input makes
// the kernel answer with a reset, which throws away the bytes it still held for the peer: a
// finalize followed by exit lost completed sends that way. So: whatever is still queued here is
// written out; each connection sends its FIN behind the last byte (shutdown(SHUT_WR)); then,
// until HOOP_TIMEOUT, input is read and dropped (the peer's frames for a communicator that is
// going) while the bytes not yet acknowledged drain (SIOCOUTQ), and only then are the sockets
// closed, with nothing unread. A peer that is gone (reset, broken pipe) with bytes still unsent
// to it, or that takes nothing before the deadline, is named in the error.
//
// A connection whose peer's FIN has been read is done, whatever is still unacknowledged to it. A
// FIN comes from the peer's own Close, after every call it made had completed (or from its exit,
// which hooprun reports), and it needs nothing after it: what it had not read by then no call of
// its asked for. Those are frames of the protocol that only answer (a freed communicator's
// goodbye, flow-control credit) sent to a peer that finished first, or a message it never
// received. The peer drops them or, once its socket is closed, answers them with a reset; our
// close leaves them to the kernel. Waiting for either only ran into HOOP_TIMEOUT, a finalize that
// failed now and then on a busy machine (a sub-communicator freed just before it: its goodbyes
// crossed the peers' FINs; and an 8-rank split test over tcp whose rank read the FIN and then
// saw neither the acknowledgement nor the reset).
#include <linux/sockios.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "transport/tcp/connection.h"
#include "transport/tcp/tcp_transport.h"

namespace hoop {

void Connection::CloseWrite() { ::shutdown(fd_.get(), SHUT_WR); }

bool Connection::Delivered(std::string* why) {
  char drop[16 * 1024];
  int gone = 0;
  while (!fin_read_) {
    const ssize_t n = ::recv(fd_.get(), drop, sizeof drop, MSG_DONTWAIT);
    if (n > 0) continue;
    if (n == 0) fin_read_ = true;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) gone = errno;
    break;
  }
  // Its FIN was read, now or by an earlier look (a reset may have come since): it had finished
  // before our last bytes came (above) and needs none of them.
  if (fin_read_) return true;
  int unsent = 0;
  if (::ioctl(fd_.get(), SIOCOUTQ, &unsent) != 0) unsent = 0;
  if (unsent == 0) return true;
  if (gone != 0) {
    *why = "peer " + std::to_string(peer_) + " (" + peer_addr_ + ") is gone (" + std::strerror(gone) + ") with " +
           std::to_string(unsent) + " byte(s) sent to it not taken";
    return true;  // nothing more will move
  }
  *why = "peer " + std::to_string(peer_) + " (" + peer_addr_ + ") has not taken " + std::to_string(unsent) +
         " byte(s) sent to it";
  return false;
}

Status TcpTransport::Close(Deadline deadline) {
  if (closed_) return Status::Ok();
  closed_ = true;
  // Frames still queued here (a small send completes once copied into its frame) go out first.
  std::vector<Completion> ignored;
  auto queued = [&] {
    for (auto& [peer, c] : conns_)
      if (c->HasPendingSends() && c->can_send()) return true;
    return false;
  };
  while (queued() && !deadline.Expired()) {
    Status s = Events(&ignored, deadline.RemainingMs(10));
    if (!s.ok()) return s;
  }
  for (auto& [peer, c] : conns_) c->CloseWrite();
  std::vector<pollfd> fds;
  std::string why, gone;
  while (true) {
    fds.clear();
    for (auto& [peer, c] : conns_) {
      // A connection that failed (the peer aborted, or it broke) takes nothing more: no wait.
      if (c->failed()) continue;
      std::string w;
      if (!c->Delivered(&w)) {
        fds.push_back({c->fd(), POLLIN, 0});
        why = w;
      } else if (!w.empty() && gone.empty()) {
        gone = w;
      }
    }
    if (fds.empty()) break;
    if (deadline.Expired())
      return DeadlineExceeded("closing the connections: " + why + " within " + opts_.timeout_name);
    // Input wakes the poll; the acknowledgements do not, so look again every millisecond.
    ::poll(fds.data(), fds.size(), deadline.RemainingMs(1));
  }
  if (!gone.empty()) return Unavailable("closing the connections: " + gone);
  return Status::Ok();
}

}  // namespace hoop
