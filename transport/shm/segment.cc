#include "transport/shm/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <new>

namespace hoop::shm {

Segment::Segment(Segment&& o) noexcept : base_(o.base_), bytes_(o.bytes_), fd_(std::move(o.fd_)) {
  o.base_ = nullptr;
  o.bytes_ = 0;
}

Segment& Segment::operator=(Segment&& o) noexcept {
  if (this != &o) {
    if (base_) ::munmap(base_, bytes_);
    base_ = o.base_;
    bytes_ = o.bytes_;
    fd_ = std::move(o.fd_);
    o.base_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

Segment::~Segment() {
  if (base_) ::munmap(base_, bytes_);
}

StatusOr<Segment> Segment::Create(int rank, int size, uint32_t rings, uint64_t job_hash) {
  std::string name = "hoop-shm-rank" + std::to_string(rank);
  Fd fd(::memfd_create(name.c_str(), MFD_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(Code::kUnavailable, "shm: memfd_create", errno);
  size_t bytes = SegmentBytes(rings);
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0)
    return ErrnoStatus(Code::kInternal, "shm: sizing a " + std::to_string(bytes) + "-byte segment", errno);
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) return ErrnoStatus(Code::kInternal, "shm: mmap", errno);
  Segment s;
  s.base_ = p;
  s.bytes_ = bytes;
  s.fd_ = std::move(fd);
  auto* h = new (p) SegHeader{};
  h->version = kVersion;
  h->rank = rank;
  h->size = size;
  h->pid = static_cast<int32_t>(::getpid());
  h->rings = rings;
  h->job_hash = job_hash;
  for (uint32_t i = 0; i < rings; ++i) new (s.ring(i)) RingHeader{};
  std::atomic_thread_fence(std::memory_order_release);
  h->magic = kMagic;
  return s;
}

StatusOr<Segment> Segment::Open(int pid, int fd_num, int rank, int size, uint64_t job_hash) {
  std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd_num);
  std::string who = "shm: rank " + std::to_string(rank) + "'s segment (" + path + ")";
  Fd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd.valid())
    return ErrnoStatus(errno == ENOENT ? Code::kUnavailable : Code::kPermissionDenied, "opening " + who, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ErrnoStatus(Code::kInternal, "fstat " + who, errno);
  size_t bytes = static_cast<size_t>(st.st_size);
  if (bytes < sizeof(SegHeader)) return FailedPrecondition(who + " is too small");
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) return ErrnoStatus(Code::kInternal, "mapping " + who, errno);
  Segment s;
  s.base_ = p;
  s.bytes_ = bytes;
  s.fd_ = std::move(fd);
  SegHeader* h = s.header();
  if (h->magic != kMagic || h->version != kVersion)
    return FailedPrecondition(who + " is not a hoop shm v" + std::to_string(kVersion) + " segment");
  if (h->rank != rank || h->size != size || h->pid != pid)
    return FailedPrecondition(who + " belongs to rank " + std::to_string(h->rank) + " of " + std::to_string(h->size));
  if (h->job_hash != job_hash) return PermissionDenied(who + " belongs to another job or communicator");
  if (bytes < SegmentBytes(h->rings)) return FailedPrecondition(who + " is truncated");
  return s;
}

uint64_t JobHash(const std::string& token, const std::string& comm) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (char c : token + '\0' + comm) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace hoop::shm
