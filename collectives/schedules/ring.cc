// Ring schedules: allreduce as reduce-scatter then allgather, and each half on its own.
//
// With n ranks the data is cut into n segments. In reduce-scatter step k (k = 0..n-2) rank r
// sends segment r-k to its right neighbour and receives segment r-k-1 from its left, reducing it
// into its own copy; the segment it just reduced is the one it sends in the next step. After
// n-1 steps rank r holds segment r+1 reduced over all ranks. The allgather then passes finished
// segments around the ring once more. Written as NCCL writes it, rank r runs
//   send(r), recvReduceSend(r-1) .. recvReduceSend(r-n+2), recvReduceCopySend(r+1),
//   recvCopySend(r) .. recvCopySend(r+3), recv(r+2)
// which moves 2(n-1)/n of the data in and out of every rank: the bandwidth optimum.
// Message k of the ring is what a rank sends in its k-th sending step; its right neighbour
// receives it in its (k+1)-th step. Units are issued step by step, except with two ranks (below).
#include "collectives/schedules/schedule.h"

namespace hoop {

Schedule RingAllreduce(int rank, int n, size_t count) {
  Schedule s;
  s.algo = "ring";
  // With two ranks each chunk's result goes straight back to the rank it came from: issued chunk
  // by chunk, it is sent while still in cache instead of after the whole reduce-scatter (docs/PERF.md;
  // with more ranks the step-major order measured better over TCP).
  s.chunk_major = n == 2;
  if (n == 1) return s;
  const int left = Mod(rank - 1, n), right = Mod(rank + 1, n);
  auto seg = [&](int i) { return SplitEven(count, n, Mod(i, n)); };
  uint16_t msg = 0;
  auto step = [&](Range r, RecvKind recv, bool send) {
    Step st;
    st.in_offset = st.out_offset = r.begin;
    st.count = r.size;
    if (recv != RecvKind::kNone) {
      st.recv = recv;
      st.recv_peer = left;
      st.recv_msg = static_cast<uint16_t>(msg - 1);
    }
    if (send) {
      st.send_peers = {right};
      st.send_msg = msg++;
    }
    s.steps.push_back(st);
    return &s.steps.back();
  };
  step(seg(rank), RecvKind::kNone, true)->send_from_in = true;
  for (int k = 1; k <= n - 2; ++k) step(seg(rank - k), RecvKind::kReduce, true);
  step(seg(rank + 1), RecvKind::kReduce, true)->finalize = true;
  for (int k = 1; k <= n - 2; ++k) step(seg(rank + 1 - k), RecvKind::kCopy, true);
  step(seg(rank + 2), RecvKind::kCopy, false);
  return s;
}

// Reduce-scatter over blocks of any sizes (reduce_scatterv): in and out both hold every block at
// its displacement; step k reduces block r-k-1 into out and sends it on, so every step moves one
// whole block and each message's length is that block's, the same on both ends.
Schedule RingReduceScatterv(int rank, int n, const Blocks& b) {
  Schedule s;
  s.algo = "ring";
  if (n == 1) return s;
  const int left = Mod(rank - 1, n), right = Mod(rank + 1, n);
  for (int k = 0; k <= n - 1; ++k) {
    Step st;
    const int blk = Mod(rank - k - 1, n);
    st.count = b.counts[static_cast<size_t>(blk)];
    // Step k sends block r-k-1 (k < n-1) after reducing into it; the last step receives only.
    st.in_offset = st.out_offset = b.displs[static_cast<size_t>(blk)];
    if (k > 0) {
      st.recv = RecvKind::kReduce;
      st.recv_peer = left;
      st.recv_msg = static_cast<uint16_t>(k - 1);
    }
    if (k == 0) st.send_from_in = true;
    if (k < n - 1) {
      st.send_peers = {right};
      st.send_msg = static_cast<uint16_t>(k);
    } else {
      st.finalize = true;  // block r-n = r: this rank's result
    }
    s.steps.push_back(st);
  }
  return s;
}

Schedule RingReduceScatter(int rank, int n, size_t count) { return RingReduceScatterv(rank, n, EvenBlocks(n, count)); }

// Allgather over blocks of any sizes (allgatherv): the rank's own block goes out from in, then
// every step receives block r-k into out at its displacement and passes it on.
Schedule RingAllgatherv(int rank, int n, const Blocks& b) {
  Schedule s;
  s.algo = "ring";
  if (n == 1) return s;
  const int left = Mod(rank - 1, n), right = Mod(rank + 1, n);
  for (int k = 0; k <= n - 1; ++k) {
    Step st;
    const size_t blk = static_cast<size_t>(Mod(rank - k, n));  // block received at step k-1
    st.count = b.counts[blk];
    st.out_offset = b.displs[blk];
    if (k == 0) {
      st.send_from_in = true;
      st.in_offset = 0;
    } else {
      st.recv = RecvKind::kCopy;
      st.recv_peer = left;
      st.recv_msg = static_cast<uint16_t>(k - 1);
    }
    if (k < n - 1) {
      st.send_peers = {right};
      st.send_msg = static_cast<uint16_t>(k);
    }
    s.steps.push_back(st);
  }
  return s;
}

Schedule RingAllgather(int rank, int n, size_t count) { return RingAllgatherv(rank, n, EvenBlocks(n, count)); }

}  // namespace hoop
