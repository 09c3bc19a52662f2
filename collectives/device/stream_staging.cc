// StreamStaging (stream_staging.h).
#include "collectives/device/stream_staging.h"

#include <algorithm>

#include "common/device.h"

namespace hoop {

StreamStaging::~StreamStaging() {
  // The communicator's streams are released by now; freeing pinned memory waits for the copies
  // still queued from it.
  for (auto& s : slots_) {
    CudaFree(s->in, MemKind::kCudaPinned);
    CudaFree(s->out, MemKind::kCudaPinned);
    CudaEventDestroy(s->done);
  }
  for (char* p : retired_) CudaFree(p, MemKind::kCudaPinned);
}

Status StreamStaging::Grow(char** p, size_t* cap, size_t bytes) {
  if (bytes == 0 || (*p != nullptr && *cap >= bytes)) return Status::Ok();
  const size_t want = std::max(bytes, 2 * *cap);  // retired buffers stay smaller than the current one
  HOOP_ASSIGN_OR_RETURN(void* q, CudaAllocPinned(want));
  if (*p != nullptr) retired_.push_back(*p);
  *p = static_cast<char*>(q);
  *cap = want;
  return Status::Ok();
}

StatusOr<StreamStaging::Slot*> StreamStaging::Take(size_t in, size_t out) {
  Slot* pick = nullptr;
  for (auto& s : slots_) {
    if (s->lost) continue;
    if (s->busy) {
      auto done = CudaEventDone(s->done);
      if (!done.ok() || !*done) continue;
      s->busy = false;
    }
    // The free slot that needs the least growth.
    const auto short_by = [&](const Slot& x) {
      return (in > x.in_cap ? in - x.in_cap : 0) + (out > x.out_cap ? out - x.out_cap : 0);
    };
    if (pick == nullptr || short_by(*s) < short_by(*pick)) pick = s.get();
  }
  if (pick == nullptr) {
    auto s = std::make_unique<Slot>();
    HOOP_ASSIGN_OR_RETURN(s->done, CudaEventCreate(false));
    slots_.push_back(std::move(s));
    pick = slots_.back().get();
  }
  HOOP_RETURN_IF_ERROR(Grow(&pick->in, &pick->in_cap, in));
  HOOP_RETURN_IF_ERROR(Grow(&pick->out, &pick->out_cap, out));
  pick->busy = true;
  return pick;
}

void StreamStaging::Give(Slot* slot, void* stream) {
  // Where the event cannot be recorded the slot stays taken: never reused under a copy.
  if (!CudaEventRecord(slot->done, stream).ok()) slot->lost = true;
}

}  // namespace hoop
