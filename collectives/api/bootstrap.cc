#include "collectives/api/bootstrap.h"

#include "transport/store/file_store.h"
#include "transport/store/memory_store.h"

namespace hoop {

Job::~Job() {
  auto* files = dynamic_cast<FileStore*>(store.get());
  if (!files || !comm) return;
  const bool clean = comm->healthy();
  comm.reset();        // closes this rank's connections first
  if (!clean) return;  // a failed job's entries stay: its stall reports are there
  auto open = files->Add("hoop/open", -1);
  if (open.ok() && *open == 0) files->RemoveAll();
}

namespace {
// OpenStore, and a rank that finds nobody serving a tcp:// store within seconds says who should
// (rank 0, or the launcher), then goes on waiting up to HOOP_TIMEOUT: a hand-launched job whose
// rank 0 is not up is not silent for minutes.
StatusOr<std::unique_ptr<Store>> OpenStoreSaying(const Config& cfg, Deadline deadline, const std::string& ctx) {
  if (cfg.store.rfind("tcp://", 0) != 0 || deadline.RemainingMs(5001) <= 5000)
    return OpenStore(cfg.store, cfg.token, deadline);
  auto first = OpenStore(cfg.store, cfg.token, Deadline::After(std::chrono::seconds(5)));
  if (first.ok() || first.status().code() != Code::kUnavailable) return first;
  HOOP_LOG(kWarn, ctx << ": nobody serves the store at " << cfg.store << " yet (" << first.status().message()
                      << "); rank 0 serves it (hooprun does, for its jobs): waiting up to HOOP_TIMEOUT ("
                      << cfg.timeout.count() / 1000.0 << " s) for it");
  return OpenStore(cfg.store, cfg.token, deadline);
}

// The part every way of joining shares, once job->store is open: name this communicator by its
// place among the job's, and create it.
StatusOr<std::unique_ptr<Job>> Finish(const Config& cfg, std::unique_ptr<Job> job, const std::string& ctx,
                                      bool job_ranks = false);
}  // namespace

StatusOr<std::unique_ptr<Job>> JoinJob(const Config& cfg) {
  SetLogLevel(cfg.log_level);
  SetLogRank(cfg.rank);
  const std::string ctx = "rank " + std::to_string(cfg.rank) + ": joining the job";
  auto job = std::make_unique<Job>();
  Deadline deadline = Deadline::After(cfg.timeout);
  if (cfg.store.empty()) {
    if (cfg.size != 1)
      return InvalidArgument(ctx +
                             ": HOOP_STORE is not set (start the job with hooprun, or set "
                             "HOOP_STORE=tcp://HOST:PORT or file:///DIR)");
    job->store = std::make_unique<MemoryStore>();
  } else {
    // Rank 0 serves a tcp:// store itself, as under mpirun, Slurm and torchrun: a job started by
    // hand (HOOP_RANK, HOOP_SIZE, HOOP_STORE in each shell) has nobody else to. Under hooprun,
    // whose server holds the port already, the bind fails and the check below finds hooprun's.
    bool serve = cfg.rank == 0 && cfg.store.rfind("tcp://", 0) == 0;
    if (serve) {
      HOOP_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(cfg.store.substr(6)));
      auto server = TcpStoreServer::Start(hp.host, hp.port, cfg.token);
      // Taken already: by this process's earlier communicator, whose server this one then shares
      // (the token check below tells), or by a stranger (and then the error says both).
      if (server.ok())
        job->server = std::move(server).value();
      else if (!OpenStore(cfg.store, cfg.token, Deadline::After(std::chrono::seconds(2))).ok())
        return server.status().WithContext(ctx + ": serving the store at " + cfg.store);
    }
    auto store = OpenStoreSaying(cfg, deadline, ctx);
    if (!store.ok()) return store.status().WithContext(ctx);
    job->store = std::move(store).value();
    if (auto* files = dynamic_cast<FileStore*>(job->store.get())) {
      HOOP_RETURN_IF_ERROR(files->Claim(cfg.token, cfg.rank).WithContext(ctx));
      auto open = files->Add("hoop/open", 1);
      if (!open.ok()) return open.status().WithContext(ctx);
    }
  }
  return Finish(cfg, std::move(job), ctx, true);  // HOOP_RANK and HOOP_SIZE: the job's numbering
}

StatusOr<std::unique_ptr<Job>> JoinJobOnStore(const Config& cfg, std::unique_ptr<Store> store) {
  SetLogLevel(cfg.log_level);
  SetLogRank(cfg.rank);
  auto job = std::make_unique<Job>();
  job->store = std::move(store);
  return Finish(cfg, std::move(job), "rank " + std::to_string(cfg.rank) + ": joining the job");
}

StatusOr<std::unique_ptr<Job>> JoinAsNewcomer(const Config& cfg) {
  SetLogLevel(cfg.log_level);
  const std::string ctx = "a newcomer joining the job";
  if (cfg.store.empty())
    return InvalidArgument(ctx + ": HOOP_STORE is not set (the running job's store, through which it is admitted)");
  auto job = std::make_unique<Job>();
  auto store = OpenStoreSaying(cfg, Deadline::After(cfg.timeout), ctx);
  if (!store.ok()) return store.status().WithContext(ctx);
  job->store = std::move(store).value();
  if (auto* files = dynamic_cast<FileStore*>(job->store.get())) {
    auto open = files->Add("hoop/open", 1);  // counted like every rank's Job (~Job)
    if (!open.ok()) return open.status().WithContext(ctx);
  }
  CommOptions opts = CommOptions::FromConfig(cfg);
  opts.job_rank = cfg.launcher != Launcher::kNone ? cfg.rank : -2;
  if (cfg.host.empty()) {
    auto* tcp = dynamic_cast<TcpStoreClient*>(job->store.get());
    opts.host = tcp && !tcp->local_address().empty() ? tcp->local_address() : "127.0.0.1";
  }
  HOOP_ASSIGN_OR_RETURN(job->comm, Communicator::Join(*job->store, opts));
  SetLogRank(job->comm->rank());
  // The launcher's note that this process made it in (elastic hooprun ends those never admitted
  // once the job is over).
  if (opts.job_rank >= 0) {
    Status noted = job->store->Set("hoop/join/admitted/" + std::to_string(opts.job_rank), "1");
    if (!noted.ok()) HOOP_LOG(kWarn, ctx << ": telling the launcher it was admitted: " << noted.message());
  }
  return job;
}

namespace {

StatusOr<std::unique_ptr<Job>> Finish(const Config& cfg, std::unique_ptr<Job> job, const std::string& ctx,
                                      bool job_ranks) {
  CommOptions opts = CommOptions::FromConfig(cfg);
  opts.job_ranks = job_ranks;
  // Every communicator a job makes has a name of its own, by creation order: the ranks create
  // theirs in the same order, so this rank's n-th is every rank's n-th. A second one from the
  // same job used to reuse "world" and cross wires with the first.
  auto nth = job->store->Add("hoop/communicators/" + std::to_string(cfg.rank), 1);
  if (!nth.ok()) return nth.status().WithContext(ctx + ": numbering the communicator");
  opts.name = *nth == 1 ? "world" : "world-" + std::to_string(*nth);
  if (cfg.host.empty()) {
    // Advertise the address by which this host reaches the store server: on one host that is
    // loopback, across hosts the interface on the route to rank 0's host. HOOP_HOST overrides.
    auto* tcp = dynamic_cast<TcpStoreClient*>(job->store.get());
    opts.host = tcp && !tcp->local_address().empty() ? tcp->local_address() : "127.0.0.1";
  }
  HOOP_ASSIGN_OR_RETURN(job->comm, Communicator::Create(*job->store, opts));
  return job;
}

}  // namespace

}  // namespace hoop
