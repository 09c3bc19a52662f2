// The shared-memory segment each rank owns: a header with the rank's doorbell, then one inbound
// ring per other rank on this host. The sender writes slots and `tail`; the owner (receiver)
// reads them and writes `head`. Everything a pair needs lives in the receiver's segment, and
// each rank maps the segments of all its local peers.
//
// The segment is a memfd: it has no name, so nothing is ever left in /dev/shm, whatever way a
// rank ends. Peers open it through /proc/<pid>/fd/<fd> while its owner lives, and keep their
// mapping after that.
//
// A slot carries one message or one fragment of it (at most kInlineMax bytes, after a 64-byte
// header). The sender writes the header and payload, then the header's `seq` (the slot's number
// on the ring's count, plus one) with release order; the receiver waits on the `seq` of the
// next slot it expects, not on `tail`, so a message reaches it in the lines it has to read
// anyway (the header's, the payload's) without a third, tail's, crossing between cores.
// Version 3: `seq` (version 2 published through `tail` alone; version 1 also passed a large
// message's address for a process_vm_readv copy, which measured slower; docs/PERF.md).
// Version 4: a slot may carry a CUDA IPC descriptor (kSlotDevice) instead of bytes, and the
// receiver counts the descriptors it is done reading from in the ring's `acked`.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"
#include "transport/util/futex.h"
#include "transport/util/socket.h"

namespace hoop::shm {

constexpr uint64_t kMagic = 0x686f6f702d73686dULL;  // "hoop-shm"
constexpr uint32_t kVersion = 4;
constexpr uint32_t kSlots = 16;
constexpr uint32_t kSlotBytes = 32 * 1024 + 64;  // 64-byte slot header, then the payload
constexpr size_t kInlineMax = kSlotBytes - 64;
constexpr size_t kStreamMin = 2 * kInlineMax;  // of a large operation, messages this long are streamed into the ring

struct SlotHeader {
  std::atomic<uint64_t> seq;  // written last: the slot's number plus one once it is full
  uint64_t match;
  uint64_t check;
  uint64_t total;   // message length
  uint64_t offset;  // of this fragment within the message
  uint32_t len;     // bytes in this slot
  uint32_t flags;   // kSlotDevice: the payload is an IpcRef to the whole message's bytes
};
constexpr uint32_t kSlotDevice = 1;
static_assert(sizeof(SlotHeader) <= 64);

struct alignas(64) RingHeader {
  alignas(64) std::atomic<uint64_t> tail{0};   // slots published (sender; receivers wait on a slot's seq)
  alignas(64) std::atomic<uint64_t> head{0};   // slots consumed (receiver)
  alignas(64) std::atomic<uint64_t> acked{0};  // descriptors read to the end (receiver; channel.h)
  alignas(64) std::atomic<uint32_t> aborted{0};
  char cause[1020] = {0};  // the sender's abort cause (a chain of ranks' errors can be long)
};

struct alignas(64) SegHeader {
  uint64_t magic;
  uint32_t version;
  int32_t rank;
  int32_t size;
  int32_t pid;
  uint32_t rings;
  uint32_t pad;
  uint64_t job_hash;  // token and communicator name: a mix-up is refused
  Doorbell doorbell;
};

constexpr size_t RingBytes() { return sizeof(RingHeader) + size_t{kSlots} * kSlotBytes; }
constexpr size_t SegmentBytes(uint32_t rings) { return sizeof(SegHeader) + rings * RingBytes(); }

// A mapping of one segment (own or a peer's).
class Segment {
 public:
  Segment() = default;
  Segment(Segment&& o) noexcept;
  Segment& operator=(Segment&& o) noexcept;
  ~Segment();

  // Creates and initializes this rank's segment.
  static StatusOr<Segment> Create(int rank, int size, uint32_t rings, uint64_t job_hash);
  // Maps a peer's segment, found through its /proc entry, and checks that it is the one expected.
  static StatusOr<Segment> Open(int pid, int fd, int rank, int size, uint64_t job_hash);

  SegHeader* header() const { return static_cast<SegHeader*>(base_); }
  RingHeader* ring(uint32_t i) const {
    return reinterpret_cast<RingHeader*>(static_cast<char*>(base_) + sizeof(SegHeader) + i * RingBytes());
  }
  static char* slot(RingHeader* r, uint64_t n) { return reinterpret_cast<char*>(r + 1) + (n % kSlots) * kSlotBytes; }
  int fd() const { return fd_.get(); }

 private:
  void* base_ = nullptr;
  size_t bytes_ = 0;
  Fd fd_;
};

uint64_t JobHash(const std::string& token, const std::string& comm);

}  // namespace hoop::shm
