#include "transport/multi_transport.h"

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace hoop {

MultiTransport::MultiTransport(std::vector<std::unique_ptr<Transport>> parts, std::vector<int> choice)
    : parts_(std::move(parts)), choice_(std::move(choice)) {
  routed_.resize(choice_.size());
  for (size_t peer = 0; peer < choice_.size(); ++peer) {
    if (choice_[peer] < 0) continue;
    size_t part = static_cast<size_t>(choice_[peer]);
    Endpoint* inner = parts_[part]->endpoint(static_cast<int>(peer));
    if (inner) routed_[peer] = std::make_unique<Routed>(this, part, inner);
  }
}

std::string MultiTransport::Name() const {
  std::string n;
  for (auto& p : parts_) {
    if (!n.empty()) n += '+';
    n += p->Label();
  }
  return n;
}

std::string MultiTransport::Address() const {
  std::string a;
  for (auto& p : parts_) {
    if (!a.empty()) a += ' ';
    a += p->Name();
    a += '=';
    a += p->Address();
  }
  return a;
}

Status MultiTransport::Connect(int, const std::string&, Deadline) {
  return Internal("MultiTransport is assembled from connected back ends");
}

StatusOr<Region> MultiTransport::Register(void* ptr, size_t bytes, MemKind kind) {
  return RegisterWith(ptr, bytes, kind, false);
}

StatusOr<Region> MultiTransport::RegisterStaging(void* ptr, size_t bytes, MemKind kind) {
  return RegisterWith(ptr, bytes, kind, true);
}

StatusOr<Region> MultiTransport::RegisterWith(void* ptr, size_t bytes, MemKind kind, bool staging) {
  // Registrations are looked up by address: the same buffer registered again reuses its slot.
  for (size_t i = 0; i < regs_.size(); ++i)
    if (regs_[i][0].base == ptr && regs_[i][0].bytes == bytes && regs_[i][0].kind == kind)
      return Region{ptr, bytes, kind, i + 1};
  std::vector<Region> per;
  for (auto& p : parts_) {
    auto r = staging ? p->RegisterStaging(ptr, bytes, kind) : p->Register(ptr, bytes, kind);
    if (!r.ok()) return r.status();
    per.push_back(*r);
  }
  regs_.push_back(std::move(per));
  return Region{ptr, bytes, kind, regs_.size()};
}

Endpoint* MultiTransport::endpoint(int peer) {
  if (peer < 0 || static_cast<size_t>(peer) >= routed_.size()) return nullptr;
  return routed_[static_cast<size_t>(peer)].get();
}

Status MultiTransport::Poll(std::vector<Completion>* out, Deadline deadline, SpinGate gate) {
  gate_ = gate;
  return ProgressLoop(*this, WaitStyle{"multi", std::chrono::microseconds(50), 0, false}, out, deadline, gate);
}

// Each part's own loop does the spinning and sleeping; here they take turns: a look at each
// without waiting, and a sleep of at most 1 ms in each.
Status MultiTransport::Progress(std::vector<Completion>* out) {
  return Each(out, Deadline::After(std::chrono::milliseconds(0)));
}

void MultiTransport::Watch(std::vector<Completion>*) {}  // each part watches its own peers

Status MultiTransport::Sleep(std::vector<Completion>* out, Deadline deadline) {
  return Each(out, deadline.Earlier(Deadline::After(std::chrono::milliseconds(1))));
}

Status MultiTransport::Each(std::vector<Completion>* out, Deadline deadline) {
  const size_t start = out->size();
  for (auto& p : parts_) {
    Status s = p->Poll(out, deadline, gate_);
    if (!s.ok() && s.code() != Code::kDeadlineExceeded) return s;
    if (out->size() > start) break;
  }
  return Status::Ok();
}

size_t MultiTransport::PreferredChunkBytes() const {
  size_t c = SIZE_MAX;
  for (auto& p : parts_) c = std::min(c, p->PreferredChunkBytes());
  return c;
}

bool MultiTransport::StageLargeCopies() const {
  for (auto& p : parts_)
    if (!p->StageLargeCopies()) return false;
  return true;
}

void MultiTransport::AllConnected() {
  for (auto& p : parts_) p->AllConnected();
}

void MultiTransport::HoldEarly(size_t cap) {
  for (auto& p : parts_) p->HoldEarly(cap);
}

void MultiTransport::Abort(const std::string& cause) {
  for (auto& p : parts_) p->Abort(cause);
}

Status MultiTransport::Close(Deadline deadline) {
  Status first;
  for (auto& p : parts_) {
    Status s = p->Close(deadline);
    if (first.ok()) first = s;
  }
  return first;
}

}  // namespace hoop
