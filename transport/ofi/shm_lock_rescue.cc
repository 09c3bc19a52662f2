#include "transport/ofi/shm_lock_rescue.h"

#include <rdma/fabric.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <sstream>

#include "common/logging.h"

namespace hoop {
namespace {

// The start of libfabric 1.17's `struct smr_region` (include/ofi_shm.h there), as far as its lock.
struct Header117 {
  uint8_t version;
  uint8_t resv;
  uint16_t flags;
  int32_t pid;
  uint8_t cma_cap_peer;
  uint8_t cma_cap_self;
  uint32_t max_sar_buf_per_peer;
  void* base_addr;
  pthread_spinlock_t lock;
};
static_assert(offsetof(Header117, lock) == 24, "libfabric 1.17's smr_region puts its lock at byte 24");
constexpr uint8_t kSmrVersion117 = 4;  // SMR_VERSION in 1.17

bool KnownLayout(uint32_t v) { return FI_MAJOR(v) == 1 && FI_MINOR(v) == 17; }

constexpr auto kPeerHeld = std::chrono::milliseconds(200);
constexpr auto kOwnHeld = std::chrono::milliseconds(500);
constexpr int kOwnLooks = 100;

}  // namespace

pthread_spinlock_t* ShmLockRescue::LockOf(const std::string& region, int pid) {
  if (region.empty() || region.find('/') != std::string::npos) return nullptr;
  const std::string path = "/dev/shm/" + region;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    // "start-end perms offset dev inode path", the path of an unlinked file ending " (deleted)".
    std::istringstream in(line);
    std::string range, perms, offset, dev, inode, name;
    if (!(in >> range >> perms >> offset >> dev >> inode >> name) || name != path) continue;
    std::string rest;
    if ((in >> rest) && rest != "(deleted)") continue;
    if (perms.rfind("rw", 0) != 0 || std::stoull(offset, nullptr, 16) != 0) continue;
    const size_t dash = range.find('-');
    const uintptr_t start = std::stoull(range.substr(0, dash), nullptr, 16);
    const uintptr_t end = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (end - start < sizeof(Header117)) continue;
    auto* h = reinterpret_cast<Header117*>(start);
    if (h->version == kSmrVersion117 && h->pid == pid) return &h->lock;
  }
  return nullptr;
}

std::unique_ptr<ShmLockRescue> ShmLockRescue::Start(const std::string& own_region, uint32_t fabric_version) {
  if (!KnownLayout(fabric_version)) {
    HOOP_LOG(kDebug, "ofi: libfabric " << FI_MAJOR(fabric_version) << "." << FI_MINOR(fabric_version)
                                       << ": no rescue of shm locks a dead rank held (its layout is known for 1.17)");
    return nullptr;
  }
  return std::unique_ptr<ShmLockRescue>(new ShmLockRescue(own_region));
}

ShmLockRescue::ShmLockRescue(std::string own_region) : own_region_(std::move(own_region)) {
  thread_ = std::thread([this] { Loop(); });
}

ShmLockRescue::~ShmLockRescue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void ShmLockRescue::Watch(int peer, int pid, const std::string& region) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!watch_.Watch(peer, pid).ok()) return;  // gone already: the transport reports it
  known_.push_back({peer, pid, region});
}

void ShmLockRescue::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(20));
    if (stop_) break;
    for (int peer : watch_.Exited())
      for (const Known& k : known_)
        if (k.peer == peer) {
          const Known dead = k;
          lock.unlock();
          Rescue(dead.peer, dead.pid, dead.region);
          lock.lock();
          break;
        }
  }
}

void ShmLockRescue::Rescue(int peer, int pid, const std::string& region) {
  pthread_spinlock_t* theirs = LockOf(region, pid);
  pthread_spinlock_t* own = LockOf(own_region_, static_cast<int>(::getpid()));
  const std::string who = "rank " + std::to_string(peer) + " (pid " + std::to_string(pid) + ")";
  const std::string theirs_why =
      "ofi: " + who + " died holding its shm region's lock; released it, so that no send to it spins";
  const std::string own_why = "ofi: this rank's shm region's lock stayed taken " + std::to_string(kOwnHeld.count()) +
                              " ms after " + who + " died sending to it; released it";
  // One look at a lock: seen free, it was not the dead rank's and is left alone; still taken
  // once `overdue`, it is released. Either way it is not looked at again.
  auto look = [](pthread_spinlock_t*& lock, bool overdue, const std::string& why) {
    if (!lock) return;
    if (pthread_spin_trylock(lock) == 0) {
      pthread_spin_unlock(lock);
      lock = nullptr;
    } else if (overdue) {
      HOOP_LOG(kWarn, why);
      pthread_spin_unlock(lock);
      lock = nullptr;
    }
  };
  const auto since = std::chrono::steady_clock::now();
  for (int own_looks = 1; theirs || own; ++own_looks) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
    }
    const auto held = std::chrono::steady_clock::now() - since;
    look(theirs, held >= kPeerHeld, theirs_why);
    look(own, own_looks >= kOwnLooks && held >= kOwnHeld, own_why);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace hoop
