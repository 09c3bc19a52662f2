// A communicator made as a job starts (hoop_init_from_env, hoop_init, hoop.init(); not one made
// on a caller's store, whose numbering may be a group's: CommOptions::job_ranks): its ranks are
// the job's, so where the launcher reports the ranks that ended (hooprun --enable-recovery writes
// their numbers to hoop/exited) a rank that died before joining is known to the others at once,
// and their init fails naming it, instead of waiting HOOP_TIMEOUT for its address.
#include "collectives/core/agreement.h"
#include "collectives/core/comm_core.h"

namespace hoop {

StatusOr<std::unique_ptr<CommCore>> CommCore::Create(Store& store, const CommOptions& options) {
  if (!options.job_ranks) return Create(store, options, Meeting());
  const int size = options.size;
  auto give_up = [&store, size]() -> Status {
    auto text = Peek(store, "hoop/exited");
    if (!text) return Status::Ok();
    for (int r : ParseList(*text))
      if (r >= 0 && r < size)
        return Unavailable("rank " + std::to_string(r) +
                           " of the job ended before the communicator was made (the launcher saw it exit)");
    return Status::Ok();
  };
  WatchfulStore watchful(store, give_up);
  return Create(store, options, Meeting{std::nullopt, &watchful, give_up});
}

}  // namespace hoop
