// Flat gather and scatter: every block travels once, straight between its rank and the root,
// the root keeping up to a window of them in flight at once (time ~ (n-1) blocks / the root's
// link rate, which no tree beats for the root's bytes). Positions are absolute: block r of the
// root's buffer belongs to rank r. The root places its own block itself. Both open with the
// roll call (schedule.h), so ranks that pass different roots fail naming them.
#include "collectives/schedules/schedule.h"

namespace hoop {

Schedule FlatGather(int rank, int n, int root, size_t count) {
  Schedule s;
  s.algo = "flat";
  if (n == 1) return s;
  AppendRollCall(s, rank, n);
  if (rank != root) {
    Step st;
    st.send_from_in = true;
    st.send_peers = {root};
    st.count = count;
    s.steps.push_back(st);
    return s;
  }
  for (int k = 1; k < n; ++k) {  // the ranks after the root first, as they are listed
    const int from = Mod(root + k, n);
    Step st;
    st.recv = RecvKind::kCopy;
    st.recv_peer = from;
    st.out_offset = static_cast<size_t>(from) * count;
    st.count = count;
    s.steps.push_back(st);
  }
  return s;
}

Schedule FlatScatter(int rank, int n, int root, size_t count) {
  Schedule s;
  s.algo = "flat";
  if (n == 1) return s;
  AppendRollCall(s, rank, n);
  if (rank != root) {
    Step st;
    st.recv = RecvKind::kCopy;
    st.recv_peer = root;
    st.count = count;
    s.steps.push_back(st);
    return s;
  }
  for (int k = 1; k < n; ++k) {
    const int to = Mod(root + k, n);
    Step st;
    st.send_from_in = true;
    st.send_peers = {to};
    st.in_offset = static_cast<size_t>(to) * count;
    st.count = count;
    s.steps.push_back(st);
  }
  return s;
}

}  // namespace hoop
