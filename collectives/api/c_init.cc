// The C API's start and end of a job (include/hoop/hoop.h): hoop_init_from_env, hoop_init,
// hoop_init_store(_timeout), hoop_init_join (a newcomer of elastic hooprun), hoop_finalize; the version;
// what a handle says of its rank (rank, size, local rank and size, device, locality). c_api.cc has
// the collectives, c_comms.cc the sub-communicators.
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "collectives/api/c_api_internal.h"
#include "collectives/api/callback_store.h"
#include "common/device.h"
#include "common/locality.h"

namespace {

using hoop::capi::CheckLive;
using hoop::capi::Guard;
using hoop::capi::Report;

hoop_status_t BadArg(const std::string& what) { return Report(hoop::InvalidArgument(what)); }

// A handle for a joined job (or the join's error, reported).
hoop_status_t MakeHandle(hoop_comm_t* out, hoop::StatusOr<std::unique_ptr<hoop::Job>> job, const hoop::Config& cfg) {
  if (!job.ok()) return Report(job.status());
  *out = new hoop_comm;
  (*out)->job = std::move(job).value();
  (*out)->config = std::make_shared<const hoop::Config>(cfg);
  (*out)->rank = (*out)->job->comm->rank();  // cfg.rank, except for a newcomer (hoop_init_join)
  return HOOP_SUCCESS;
}

// The environment's settings with an explicit rank and size (hoop_init, hoop_init_store).
hoop::StatusOr<hoop::Config> ExplicitConfig(const char* fn, int rank, int size) {
  auto cfg = hoop::Config::FromProcessEnv();
  if (!cfg.ok()) return cfg.status().WithContext(fn);
  if (size < 1 || rank < 0 || rank >= size)
    return hoop::InvalidArgument(std::string(fn) + ": rank " + std::to_string(rank) + " is not in [0, " +
                                 std::to_string(size) + ")");
  cfg->rank = rank;
  cfg->size = size;
  cfg->launcher = hoop::Launcher::kNone;
  cfg->join = false;  // the caller names this process's place
  if (cfg->local_rank >= size) cfg->local_rank = -1;
  return cfg;
}

hoop_status_t Init(hoop_comm_t* out, const hoop::Config& cfg) {
  if (!out) return BadArg("hoop_init: comm pointer is NULL");
  *out = nullptr;
  return MakeHandle(out, hoop::JoinJob(cfg), cfg);
}

// hoop_init_store and hoop_init_store_timeout (timeout_s: seconds in place of HOOP_TIMEOUT).
hoop_status_t InitStore(const char* fn, hoop_comm_t* comm, int rank, int size, const hoop_store_t* store,
                        const char* host, std::optional<double> timeout_s) {
  if (!comm) return BadArg(std::string(fn) + ": comm pointer is NULL");
  *comm = nullptr;
  if (!store || !store->set || !store->get || !store->add)
    return BadArg(std::string(fn) + ": the store (or one of its set, get and add functions) is NULL");
  auto cfg = ExplicitConfig(fn, rank, size);
  if (!cfg.ok()) return Report(cfg.status());
  if (timeout_s) {
    const auto timeout = hoop::TimeoutFromSeconds(*timeout_s);  // HOOP_TIMEOUT's bounds
    if (!timeout)
      return BadArg("rank " + std::to_string(rank) + ": " + fn + ": timeout " + std::to_string(*timeout_s) +
                    " s: expected " + hoop::kTimeoutBounds);
    cfg->timeout = *timeout;
    cfg->timeout_name = "timeout";  // the caller's, not HOOP_TIMEOUT: its errors say so
  }
  cfg->store.clear();
  if (host && *host) cfg->host = host;
  auto job = hoop::JoinJobOnStore(*cfg, std::make_unique<hoop::CallbackStore>(*store));
  if (!job.ok()) return Report(job.status().WithContext(fn));
  return MakeHandle(comm, std::move(job), *cfg);
}

}  // namespace

namespace hoop::capi {

// hoop_finalize and hoop_comm_free, each named in its own errors.
hoop_status_t Finalize(hoop_comm_t comm, const char* call) {
  return Guard([&] {
    if (!comm) return HOOP_SUCCESS;  // as free(NULL)
    if (comm->finalized())
      return BadArg("rank " + std::to_string(comm->rank) + ": " + call + ": the communicator was " +
                    (std::string(call) == "hoop_comm_free" ? "freed" : "finalized") + " already");
    if (comm->fusion_active.load())
      return BadArg(std::string(call) + ": a tensor fusion runtime still drives this communicator; stop it first");
    // What completed sends handed over reaches the peers before the handle goes (Close).
    const hoop::Status closed = comm->get().Close();
    comm->own.reset();
    comm->job.reset();  // the struct stays, a tombstone (c_api_internal.h)
    comm->config.reset();
    hoop::capi::KeepAsTombstone(comm);
    return closed.ok() ? HOOP_SUCCESS : Report(closed);
  });
}

}  // namespace hoop::capi

extern "C" {

hoop_status_t hoop_init_from_env(hoop_comm_t* comm) {
  return Guard([&] {
    auto cfg = hoop::Config::FromProcessEnv();
    if (!cfg.ok()) return Report(cfg.status().WithContext("hoop_init_from_env"));
    if (cfg->join && comm) {  // HOOP_JOIN=1: a newcomer elastic hooprun started
      *comm = nullptr;
      return MakeHandle(comm, hoop::JoinAsNewcomer(*cfg), *cfg);
    }
    return Init(comm, *cfg);
  });
}

hoop_status_t hoop_init_join(hoop_comm_t* comm) {
  return Guard([&] {
    if (!comm) return BadArg("hoop_init_join: comm pointer is NULL");
    *comm = nullptr;
    auto cfg = hoop::Config::FromProcessEnv();
    if (!cfg.ok()) return Report(cfg.status().WithContext("hoop_init_join"));
    return MakeHandle(comm, hoop::JoinAsNewcomer(*cfg), *cfg);
  });
}

hoop_status_t hoop_init(hoop_comm_t* comm, int rank, int size, const char* store_url, const char* token) {
  return Guard([&] {
    auto cfg = ExplicitConfig("hoop_init", rank, size);
    if (!cfg.ok()) return Report(cfg.status());
    cfg->store = store_url ? store_url : "";
    if (token) cfg->token = token;
    return Init(comm, *cfg);
  });
}

hoop_status_t hoop_init_store(hoop_comm_t* comm, int rank, int size, const hoop_store_t* store, const char* host) {
  return Guard([&] { return InitStore("hoop_init_store", comm, rank, size, store, host, std::nullopt); });
}

hoop_status_t hoop_init_store_timeout(hoop_comm_t* comm, int rank, int size, const hoop_store_t* store,
                                      const char* host, double timeout_s) {
  return Guard([&] { return InitStore("hoop_init_store_timeout", comm, rank, size, store, host, timeout_s); });
}

hoop_status_t hoop_finalize(hoop_comm_t comm) { return hoop::capi::Finalize(comm, "hoop_finalize"); }

hoop_status_t hoop_get_version(int* version) {
  if (!version) return BadArg("hoop_get_version: NULL argument");
  *version = HOOP_VERSION;  // the header this library was built with, which CMake holds to project()
  return HOOP_SUCCESS;
}

#define HOOP_GETTER(name, expr)                                         \
  hoop_status_t hoop_##name(hoop_comm_t comm, int* out) {               \
    if (hoop_status_t bad = CheckLive(comm, "hoop_" #name)) return bad; \
    if (!out) return BadArg("hoop_" #name ": NULL argument");           \
    *out = (*comm)->expr();                                             \
    return HOOP_SUCCESS;                                                \
  }
HOOP_GETTER(rank, rank)
HOOP_GETTER(size, size)
HOOP_GETTER(local_rank, local_rank)
HOOP_GETTER(local_size, local_size)
#undef HOOP_GETTER

hoop_status_t hoop_local_device(hoop_comm_t comm, int* device) {
  if (hoop_status_t bad = CheckLive(comm, "hoop_local_device")) return bad;
  if (!device) return BadArg("hoop_local_device: NULL argument");
  auto d = hoop::DefaultCudaDevice((*comm)->rank(), (*comm)->local_rank());
  if (!d.ok()) return Report(d.status().WithContext("rank " + std::to_string((*comm)->rank()) + ": hoop_local_device"));
  *device = *d;
  return HOOP_SUCCESS;
}

hoop_status_t hoop_locality(hoop_comm_t comm, char* buf, size_t cap, size_t* needed) {
  if (hoop_status_t bad = CheckLive(comm, "hoop_locality")) return bad;
  const std::string j = hoop::LocalityJson((*comm)->rank(), (*comm)->local_rank(), (*comm)->local_size());
  if (needed) *needed = j.size() + 1;
  if (!buf || cap < j.size() + 1)
    return BadArg("rank " + std::to_string((*comm)->rank()) + ": hoop_locality: the text needs " +
                  std::to_string(j.size() + 1) + " bytes, cap is " + std::to_string(cap) +
                  (buf ? "" : " (buf is NULL)"));
  std::memcpy(buf, j.c_str(), j.size() + 1);
  return HOOP_SUCCESS;
}

}  // extern "C"
