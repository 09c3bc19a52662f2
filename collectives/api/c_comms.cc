// The C API's sub-communicators: hoop_comm_split, hoop_comm_dup, hoop_comm_free; and
// hoop_comm_revoke, hoop_comm_failed_ranks, hoop_comm_shrink, hoop_comm_grow (Communicator::Split,
// collectives/core/split.cc; revoke.cc; shrink.cc; grow.cc). A new handle shares its parent's job (the store
// and the connections, c_api_internal.h) and holds its own communicator.
#include <cstring>
#include <string>
#include <vector>

#include "collectives/api/c_api_internal.h"
#include "collectives/api/communicator.h"

using hoop::capi::CheckLive;
using hoop::capi::Guard;
using hoop::capi::Report;

static_assert(HOOP_UNDEFINED == hoop::kUndefined);

namespace {
// A handle for a communicator made from `comm`'s (shrunk or grown): it shares comm's job, whose
// store it uses too.
hoop_comm_t Adopt(hoop_comm_t comm, std::unique_ptr<hoop::Communicator> made) {
  auto* h = new hoop_comm;
  h->job = comm->job;
  h->config = comm->config;
  h->rank = made->rank();
  h->own = std::move(made);
  return h;
}
}  // namespace

extern "C" {

hoop_status_t hoop_comm_split(hoop_comm_t comm, int color, int key, hoop_comm_t* newcomm) {
  return Guard([&] {
    if (hoop_status_t bad = CheckLive(comm, "hoop_comm_split")) return bad;
    const std::string who = "rank " + std::to_string(comm->rank) + ": hoop_comm_split";
    if (!newcomm) return Report(hoop::InvalidArgument(who + ": newcomm is NULL"));
    *newcomm = nullptr;
    if (comm->fusion_active.load())
      return Report(hoop::InvalidArgument(who + ": a tensor fusion runtime drives this communicator; stop it first"));
    // A bad color is checked after every rank's arguments are exchanged, so all ranks fail alike.
    auto sub = comm->get().Split(color, key);
    if (!sub.ok()) return Report(sub.status());
    if (!*sub) return HOOP_SUCCESS;  // HOOP_UNDEFINED
    auto* h = new hoop_comm;
    h->job = comm->job;
    h->config = comm->config;
    h->rank = (*sub)->rank();
    h->own = std::move(sub).value();
    *newcomm = h;
    return HOOP_SUCCESS;
  });
}

hoop_status_t hoop_comm_dup(hoop_comm_t comm, hoop_comm_t* newcomm) {
  if (hoop_status_t bad = CheckLive(comm, "hoop_comm_dup")) return bad;
  return hoop_comm_split(comm, 0, comm->get().rank(), newcomm);
}

hoop_status_t hoop_comm_free(hoop_comm_t comm) { return hoop::capi::Finalize(comm, "hoop_comm_free"); }

hoop_status_t hoop_comm_set_deterministic(hoop_comm_t comm, int on) {
  return Guard([&] {
    if (hoop_status_t bad = CheckLive(comm, "hoop_comm_set_deterministic")) return bad;
    if (on != 0 && on != 1)
      return Report(hoop::InvalidArgument("rank " + std::to_string(comm->get().rank()) +
                                          ": hoop_comm_set_deterministic: on is " + std::to_string(on) +
                                          ", expected 0 or 1"));
    comm->get().SetDeterministic(on == 1);
    return HOOP_SUCCESS;
  });
}

hoop_status_t hoop_comm_deterministic(hoop_comm_t comm, int* on) {
  return Guard([&] {
    if (hoop_status_t bad = CheckLive(comm, "hoop_comm_deterministic")) return bad;
    if (!on)
      return Report(hoop::InvalidArgument("rank " + std::to_string(comm->get().rank()) +
                                          ": hoop_comm_deterministic: on is null"));
    *on = comm->get().deterministic() ? 1 : 0;
    return HOOP_SUCCESS;
  });
}

hoop_status_t hoop_comm_trace(hoop_comm_t comm, char* buf, size_t cap, size_t* needed) {
  return Guard([&] {
    if (hoop_status_t bad = CheckLive(comm, "hoop_comm_trace")) return bad;
    const std::string j = comm->get().TraceJson();
    if (needed) *needed = j.size() + 1;
    if (!buf || cap < j.size() + 1)
      return Report(hoop::InvalidArgument("rank " + std::to_string(comm->get().rank()) +
                                          ": hoop_comm_trace: the trace needs " + std::to_string(j.size() + 1) +
                                          " bytes, cap is " + std::to_string(cap)));
    std::memcpy(buf, j.c_str(), j.size() + 1);
    return HOOP_SUCCESS;
  });
}

hoop_status_t hoop_comm_dump_trace(hoop_comm_t comm, const char* dir) {
  return Guard([&] {
    if (hoop_status_t bad = CheckLive(comm, "hoop_comm_dump_trace")) return bad;
    auto path = comm->get().DumpTrace(dir ? dir : "");
    return Report(path.status().WithContext("hoop_comm_dump_trace"));
  });
}

hoop_status_t hoop_comm_set_trace_label(hoop_comm_t comm, const char* label) {
  return Guard([&] {
    if (hoop_status_t bad = CheckLive(comm, "hoop_comm_set_trace_label")) return bad;
    comm->get().SetTraceLabel(label ? label : "");
    return HOOP_SUCCESS;
  });
}

hoop_status_t hoop_comm_set_trace_name(hoop_comm_t comm, const char* name) {
  return Guard([&] {
    if (hoop_status_t bad = CheckLive(comm, "hoop_comm_set_trace_name")) return bad;
    comm->get().NameNextCall(name ? name : "");
    return HOOP_SUCCESS;
  });
}

hoop_status_t hoop_comm_revoke(hoop_comm_t comm, const char* reason) {
  return Guard([&] {
    if (hoop_status_t bad = CheckLive(comm, "hoop_comm_revoke")) return bad;
    return Report(comm->get().Revoke(reason ? reason : ""));
  });
}

hoop_status_t hoop_comm_failed_ranks(hoop_comm_t comm, int* ranks, int capacity, int* count) {
  return Guard([&] {
    if (hoop_status_t bad = CheckLive(comm, "hoop_comm_failed_ranks")) return bad;
    const std::string who = "rank " + std::to_string(comm->rank) + ": hoop_comm_failed_ranks";
    if (!count) return Report(hoop::InvalidArgument(who + ": count is NULL"));
    if (capacity < 0 || (capacity > 0 && !ranks))
      return Report(hoop::InvalidArgument(who + ": capacity " + std::to_string(capacity) +
                                          (capacity < 0 ? " is negative" : " with ranks NULL")));
    const std::vector<int> failed = comm->get().FailedRanks();
    *count = static_cast<int>(failed.size());
    for (size_t i = 0; i < failed.size() && i < static_cast<size_t>(capacity); ++i) ranks[i] = failed[i];
    return HOOP_SUCCESS;
  });
}

hoop_status_t hoop_comm_grow(hoop_comm_t comm, int count, hoop_comm_t* newcomm) {
  return Guard([&] {
    if (hoop_status_t bad = CheckLive(comm, "hoop_comm_grow")) return bad;
    const std::string who = "rank " + std::to_string(comm->rank) + ": hoop_comm_grow";
    if (!newcomm) return Report(hoop::InvalidArgument(who + ": newcomm is NULL"));
    *newcomm = nullptr;
    auto grown = comm->get().Grow(count);
    if (!grown.ok()) return Report(grown.status());
    *newcomm = Adopt(comm, std::move(grown).value());
    return HOOP_SUCCESS;
  });
}

hoop_status_t hoop_comm_newcomers(hoop_comm_t comm, int* count) {
  return Guard([&] {
    if (hoop_status_t bad = CheckLive(comm, "hoop_comm_newcomers")) return bad;
    if (!count)
      return Report(
          hoop::InvalidArgument("rank " + std::to_string(comm->rank) + ": hoop_comm_newcomers: count is NULL"));
    auto n = comm->get().Newcomers();
    if (!n.ok()) return Report(n.status());
    *count = *n;
    return HOOP_SUCCESS;
  });
}

hoop_status_t hoop_comm_shrink(hoop_comm_t comm, hoop_comm_t* newcomm) {
  return hoop_comm_shrink_excluding(comm, nullptr, 0, newcomm);
}

hoop_status_t hoop_comm_shrink_excluding(hoop_comm_t comm, const int* excluded, int count, hoop_comm_t* newcomm) {
  return Guard([&] {
    if (hoop_status_t bad = CheckLive(comm, "hoop_comm_shrink")) return bad;
    const std::string who = "rank " + std::to_string(comm->rank) + ": hoop_comm_shrink";
    if (!newcomm) return Report(hoop::InvalidArgument(who + ": newcomm is NULL"));
    *newcomm = nullptr;
    if (count < 0 || (count > 0 && !excluded))
      return Report(hoop::InvalidArgument(who + ": " + std::to_string(count) + " excluded ranks" +
                                          (count < 0 ? " (a negative count)" : " at NULL")));
    if (comm->fusion_active.load())
      return Report(hoop::InvalidArgument(who + ": a tensor fusion runtime drives this communicator; stop it first"));
    auto shrunk = comm->get().Shrink(std::vector<int>(excluded, excluded + count));
    if (!shrunk.ok()) return Report(shrunk.status());
    *newcomm = Adopt(comm, std::move(shrunk).value());
    return HOOP_SUCCESS;
  });
}

}  // extern "C"
