// Double binary tree allreduce, the shape NCCL uses. One balanced binary tree carries the first
// half of the data up (reducing) and back down (broadcasting); a second tree, the mirror image
// of the first (rank r sits where rank n-1-r sat), carries the second half. In a balanced
// in-order tree about half the nodes are leaves, and mirroring moves most leaves to interior
// places, so the two halves load the ranks' links evenly and the two roots are different ranks.
//
// Per tree, per chunk, a rank:
//   recvReduce(child 0)                      out = in + child0
//   recvReduce(child 1, accumulate)          out = out + child1   (then send out up)
//   recvCopySend(parent -> children)         the finished chunk comes down and goes on down
// A leaf sends `in` up and receives the result; the root reduces with the average's division
// and starts the way down. Units are issued chunk-major so going up and coming down overlap.
#include "collectives/schedules/schedule.h"

namespace hoop {
namespace {

int BuildRange(int lo, int hi, int parent, BinaryTree& t) {
  if (lo >= hi) return -1;
  int mid = lo + (hi - lo) / 2;
  t.parent[static_cast<size_t>(mid)] = parent;
  int left = BuildRange(lo, mid, mid, t);
  int right = BuildRange(mid + 1, hi, mid, t);
  if (left >= 0) t.children[static_cast<size_t>(mid)].push_back(left);
  if (right >= 0) t.children[static_cast<size_t>(mid)].push_back(right);
  return mid;
}

void AddTreeSteps(const BinaryTree& t, int pos, int n, bool mirrored, Range half, uint16_t tree_id, Schedule& s) {
  auto rank_of = [&](int p) { return mirrored ? n - 1 - p : p; };
  const uint16_t up = static_cast<uint16_t>(2 * tree_id), down = static_cast<uint16_t>(2 * tree_id + 1);
  const auto& kids = t.children[static_cast<size_t>(pos)];
  const int parent = t.parent[static_cast<size_t>(pos)];
  auto base = [&]() {
    Step st;
    st.in_offset = st.out_offset = half.begin;
    st.count = half.size;
    return st;
  };
  if (kids.empty()) {  // leaf: send up, receive the result
    Step send_up = base();
    send_up.send_from_in = true;
    send_up.send_peers = {rank_of(parent)};
    send_up.send_msg = up;
    s.steps.push_back(send_up);
    Step recv_down = base();
    recv_down.recv = RecvKind::kCopy;
    recv_down.recv_peer = rank_of(parent);
    recv_down.recv_msg = down;
    s.steps.push_back(recv_down);
    return;
  }
  std::vector<int> kid_ranks;
  for (int k : kids) kid_ranks.push_back(rank_of(k));
  for (size_t i = 0; i < kids.size(); ++i) {
    Step st = base();
    st.recv = RecvKind::kReduce;
    st.recv_peer = kid_ranks[i];
    st.recv_msg = up;
    st.accumulate = i > 0;
    st.after_previous = i > 0;
    bool last = i + 1 == kids.size();
    if (last && parent >= 0) {
      st.send_peers = {rank_of(parent)};
      st.send_msg = up;
    }
    if (last && parent < 0) {  // root: finish the reduction and start the way down
      st.finalize = true;
      st.send_peers = kid_ranks;
      st.send_msg = down;
    }
    s.steps.push_back(st);
  }
  if (parent >= 0) {
    Step st = base();
    st.recv = RecvKind::kCopy;
    st.recv_peer = rank_of(parent);
    st.recv_msg = down;
    st.send_peers = kid_ranks;
    st.send_msg = down;
    s.steps.push_back(st);
  }
}

}  // namespace

BinaryTree BuildBinaryTree(int n) {
  BinaryTree t;
  t.parent.assign(static_cast<size_t>(n), -1);
  t.children.assign(static_cast<size_t>(n), {});
  t.root = BuildRange(0, n, -1, t);
  return t;
}

Schedule TreeAllreduce(int rank, int n, size_t count) {
  Schedule s;
  s.algo = "tree";
  s.chunk_major = true;
  if (n == 1) return s;
  BinaryTree t = BuildBinaryTree(n);
  Range first{0, count / 2};
  Range second{count / 2, count - count / 2};
  AddTreeSteps(t, rank, n, false, first, 0, s);
  AddTreeSteps(t, n - 1 - rank, n, true, second, 1, s);
  return s;
}

}  // namespace hoop
