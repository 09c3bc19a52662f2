// Growing a communicator (hoop_comm_grow, hoop_init_join; NCCL's ncclCommGrow): its ranks admit
// new processes, such as replacements a launcher started for lost ranks.
//
// Everything goes through the job's store, nothing through the communicator's connections (which
// a loss may have broken: a grow may follow a shrink or replace it). Newcomers queue at the job:
// each takes the next place in line (Add on hoop/join/arrived) and waits for its offer there
// (hoop/join/slot/PLACE). A grow of `count` takes the next `count` places: the first of its ranks
// to arrive takes a ticket, reserves the places (Add on hoop/join/offered) and writes the first
// one under the grow's key, which the others read; it then writes each newcomer's offer: the
// new communicator's name, size and the newcomer's rank in it. The ranks keep their numbers and
// the newcomers follow in the order they queued; everyone then makes the new communicator, with
// connections of its own, waiting up to HOOP_TIMEOUT for the newcomers (a replacement may take a
// while to start). The communicator grown stays as it was. Newcomers counts those in line and
// not yet offered a place, so that the ranks of an elastic job know when to grow and by how many.
#include <algorithm>
#include <cstdio>

#include "collectives/core/comm_core.h"
#include "common/logging.h"

namespace hoop {

namespace {
constexpr int kMaxGrow = 1 << 20;
const char kArrived[] = "hoop/join/arrived";
const char kOffered[] = "hoop/join/offered";
std::string SlotKey(int64_t place) { return "hoop/join/slot/" + std::to_string(place); }
}  // namespace

StatusOr<std::unique_ptr<CommCore>> CommCore::Grow(int count) {
  const std::string who = "rank " + std::to_string(opts_.rank) + ": grow of communicator '" + opts_.name + "'";
  if (count < 1 || count > kMaxGrow)
    return InvalidArgument(who + ": count " + std::to_string(count) + " (new ranks to admit: 1 to " +
                           std::to_string(kMaxGrow) + ")");
  const uint32_t number = grows_++;  // the same on every rank: each grow is a collective of them
  const std::string base = "hoop/" + opts_.name + "/grow" + std::to_string(number) + "/";
  const Deadline deadline = Deadline::After(opts_.timeout);
  Store& store = *store_;
  CommOptions o = opts_;
  o.name = opts_.name + ".g" + std::to_string(number);
  o.size = opts_.size + count;
  o.local_rank = o.local_size = -1;  // from the members' host names
  auto ticket = store.Add(base + "ticket", 1);
  if (!ticket.ok()) return ticket.status().WithContext(who);
  if (*ticket == 1) {  // first here: reserve the newcomers' places, and offer them theirs
    auto end = store.Add(kOffered, count);
    if (!end.ok()) return end.status().WithContext(who);
    const int64_t first = *end - count;
    HOOP_RETURN_IF_ERROR(store.Set(base + "first", std::to_string(first)).WithContext(who));
    for (int i = 0; i < count; ++i) {
      const std::string offer = o.name + "\t" + std::to_string(o.size) + "\t" + std::to_string(opts_.size + i);
      HOOP_RETURN_IF_ERROR(store.Set(SlotKey(first + i), offer).WithContext(who));
    }
  } else {  // the first rank's reservation: a check that it got that far
    auto first = store.Get(base + "first", deadline);
    if (!first.ok()) return first.status().WithContext(who + ": waiting for the first rank's reservation");
  }
  auto made = Create(store, o);
  if (!made.ok()) return made.status().WithContext(who + " (waiting for " + std::to_string(count) + " newcomer(s))");
  HOOP_LOG(kInfo, who << ": " << opts_.size << " + " << count << " ranks in '" << o.name << "'");
  return made;
}

StatusOr<int> CommCore::Newcomers() {
  const std::string who = "rank " + std::to_string(opts_.rank) + ": newcomers of communicator '" + opts_.name + "'";
  int64_t waiting = 0;
  if (opts_.rank == 0) {  // the others take rank 0's count: one answer, good for everyone's Grow
    auto arrived = store_->Add(kArrived, 0);
    if (!arrived.ok()) return arrived.status().WithContext(who);
    auto offered = store_->Add(kOffered, 0);
    if (!offered.ok()) return offered.status().WithContext(who);
    waiting = std::clamp<int64_t>(*arrived - *offered, 0, kMaxGrow);
  }
  Op x;
  x.kind = CollKind::kBroadcast;
  x.in = x.out = Buffer{&waiting, 1, DType::kI64};
  x.root = 0;
  Status s = Submit(x, true).Wait();
  if (!s.ok()) return s.WithContext(who + " (a broadcast of rank 0's count)");
  return static_cast<int>(waiting);
}

StatusOr<std::unique_ptr<CommCore>> CommCore::Join(Store& store, const CommOptions& options) {
  const std::string who = "a newcomer joining the job";
  auto place = store.Add(kArrived, 1);
  if (!place.ok()) return place.status().WithContext(who);
  const int64_t mine = *place - 1;
  const std::string ctx = who + " (place " + std::to_string(mine) + " in line)";
  auto offer = store.Get(SlotKey(mine), Deadline::After(options.timeout));
  if (!offer.ok())
    return offer.status().WithContext(ctx +
                                      ": no grow admitted it within HOOP_TIMEOUT (its ranks call "
                                      "hoop_comm_grow)");
  CommOptions o = options;
  char name[1024] = {0};
  if (std::sscanf(offer->c_str(), "%1023[^\t]\t%d\t%d", name, &o.size, &o.rank) != 3)
    return Internal(ctx + ": a malformed offer '" + *offer + "'");
  o.name = name;
  o.local_rank = o.local_size = -1;
  HOOP_LOG(kInfo, ctx << ": rank " << o.rank << " of " << o.size << " in '" << o.name << "'");
  auto made = Create(store, o);
  if (!made.ok()) return made.status().WithContext(ctx);
  return made;
}

}  // namespace hoop
