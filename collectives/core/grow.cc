// Growing a communicator (hoop_comm_grow, hoop_init_join; NCCL's ncclCommGrow): its ranks admit
// new processes, such as replacements a launcher started for lost ranks.
//
// Everything goes through the job's store, nothing through the communicator's connections (which
// a loss may have broken: a grow may follow a shrink or replace it). Newcomers queue at the job:
// each takes the next place in line (Add on hoop/join/arrived) and waits for its offer there
// (hoop/join/slot/PLACE). A grow of `count` takes the first `count` places no grow has taken:
// the first of its ranks to arrive takes a ticket and claims each place by writing its offer
// there with SetIfAbsent (the new communicator's name, size and the newcomer's rank in it), so a
// place is taken exactly when it is offered, and a first rank that dies meanwhile leaves no place
// taken and never offered (its grow is given up; the next one takes the places it did not). The
// places taken are always 0 up to some m: each claim takes the lowest free one. hoop/join/offered
// counts them, added to after the claims, so it may lag m (never pass it) where a first rank died
// between the two; a claim and a count start there and step over the places already taken. The
// first rank then writes the first place under the grow's key, which the others wait for. The
// ranks keep their numbers and the newcomers follow in the order they queued; everyone then makes
// the new communicator, with connections of its own, waiting up to HOOP_TIMEOUT for the newcomers
// (a replacement may take a while to start). The communicator grown stays as it was. Newcomers
// counts those in line and not yet offered a place, so that the ranks of an elastic job know when
// to grow and by how many.
//
// A member (old or new) that dies or stops inside the grow must not leave some ranks with the
// grown communicator and others without: as a shrink's round (agreement.h), every member writes
// whether it made the communicator and the store keeps one verdict, "commit" or "abort". The old
// ranks give up at once when one of them is gone (its address would never come) and say so in
// the verdict; on "abort" every member drops what it made, and a newcomer queues again for the
// next grow (the survivors shrink, and grow again).
#include <algorithm>
#include <cstdio>

#include "collectives/core/agreement.h"
#include "collectives/core/comm_core.h"
#include "common/logging.h"

namespace hoop {

namespace {
constexpr int kMaxGrow = 1 << 20;
const char kArrived[] = "hoop/join/arrived";
const char kOffered[] = "hoop/join/offered";
std::string SlotKey(int64_t place) { return "hoop/join/slot/" + std::to_string(place); }

// The number of places taken: hoop/join/offered, then past each place taken since it was added to.
StatusOr<int64_t> PlacesTaken(Store& store) {
  HOOP_ASSIGN_OR_RETURN(int64_t taken, store.Add(kOffered, 0));
  while (Peek(store, SlotKey(taken))) ++taken;
  return taken;
}
}  // namespace

// The first of the grow's ranks to arrive takes the newcomers' places by offering them theirs;
// the others wait for that (a check that it got that far).
Status CommCore::OfferPlaces(const std::string& base, const CommOptions& o, int count, Deadline deadline,
                             const std::function<Status()>& give_up) {
  Store& store = *store_;
  HOOP_ASSIGN_OR_RETURN(int64_t ticket, store.Add(base + "ticket", 1));
  if (ticket != 1) {  // the first rank may die before it offers: watch for that
    WatchfulStore watchful(store, give_up);
    return watchful.Get(base + "first", deadline).status().WithContext("waiting for the first rank's offers");
  }
  HOOP_ASSIGN_OR_RETURN(int64_t place, store.Add(kOffered, 0));
  int64_t first = -1;
  for (int i = 0; i < count; ++place) {
    const std::string offer =
        o.name + "\t" + std::to_string(o.size) + "\t" + std::to_string(opts_.size + i) + "\t" + base;
    // The offer names this grow (base), so reading it back means this grow took the place.
    HOOP_ASSIGN_OR_RETURN(std::string held, store.SetIfAbsent(SlotKey(place), offer, deadline));
    if (held != offer) continue;  // another grow's, perhaps one given up
    if (first < 0) first = place;
    ++i;
  }
  HOOP_RETURN_IF_ERROR(store.Add(kOffered, count).status());
  return store.Set(base + "first", std::to_string(first));
}

StatusOr<std::unique_ptr<CommCore>> CommCore::Grow(int count) {
  const std::string who = "rank " + std::to_string(opts_.rank) + ": grow of communicator '" + opts_.name + "'";
  if (count < 1 || count > kMaxGrow)
    return InvalidArgument(who + ": count " + std::to_string(count) + " (new ranks to admit: 1 to " +
                           std::to_string(kMaxGrow) + ")");
  const uint32_t number = grows_++;  // the same on every rank: each grow is a collective of them
  const std::string base = "hoop/" + opts_.name + "/grow" + std::to_string(number) + "/";
  const Deadline deadline = Deadline::After(opts_.timeout);
  CommOptions o = Inherited();
  o.name = opts_.name + ".g" + std::to_string(number);
  o.size = opts_.size + count;
  o.local_rank = o.local_size = -1;  // from the members' host names
  // Give up making it once a rank of this communicator is gone, or another member gave up.
  auto give_up = [&]() -> Status {
    if (Peek(*store_, base + "outcome")) return Unavailable("another member gave the grow up");
    for (int r : FailedRanks()) {
      (void)store_->SetIfAbsent(base + "outcome", "abort", deadline);
      return Unavailable("rank " + std::to_string(r) + " of the communicator grown is gone");
    }
    return Status::Ok();
  };
  HOOP_RETURN_IF_ERROR(OfferPlaces(base, o, count, deadline, give_up).WithContext(who));
  WatchfulStore watchful(*store_, give_up);
  auto made = Create(*store_, o, Meeting{deadline, &watchful, give_up});
  std::vector<int> members(static_cast<size_t>(o.size));
  for (int r = 0; r < o.size; ++r) members[static_cast<size_t>(r)] = r;
  auto keep =
      AgreeOutcome(*store_, base, opts_.rank, members, made.ok(), deadline, deadline, [this] { return FailedRanks(); });
  // Given up, or no verdict: aborted, not closed (a close would wait on members dropping theirs).
  if (made.ok() && !(keep.ok() && *keep)) (*made)->Abort(o.name + ": the grow was given up");
  if (!keep.ok()) return keep.status().WithContext(who);
  if (!*keep)
    return Unavailable(who + ": given up (" +
                       (made.ok() ? std::string("another member could not make it") : made.status().message()) +
                       "); the communicator grown is as it was: shrink it where a rank is gone, then grow again");
  HOOP_LOG(kInfo, who << ": " << opts_.size << " + " << count << " ranks in '" << o.name << "'");
  return made;
}

StatusOr<int> CommCore::Newcomers() {
  const std::string who = "rank " + std::to_string(opts_.rank) + ": newcomers of communicator '" + opts_.name + "'";
  int64_t waiting = 0;
  if (opts_.rank == 0) {  // the others take rank 0's count: one answer, good for everyone's Grow
    auto arrived = store_->Add(kArrived, 0);
    if (!arrived.ok()) return arrived.status().WithContext(who);
    auto taken = PlacesTaken(*store_);
    if (!taken.ok()) return taken.status().WithContext(who);
    waiting = std::clamp<int64_t>(*arrived - *taken, 0, kMaxGrow);
  }
  Op x;
  x.kind = CollKind::kBroadcast;
  x.in = x.out = Buffer{&waiting, 1, DType::kI64};
  x.root = 0;
  Status s = Submit(x, true).Wait();
  if (!s.ok()) return s.WithContext(who + " (a broadcast of rank 0's count)");
  return static_cast<int>(waiting);
}

// One place in line: null where the grow that offered it was given up (queue again).
StatusOr<std::unique_ptr<CommCore>> CommCore::JoinOnce(Store& store, const CommOptions& options) {
  auto place = store.Add(kArrived, 1);
  if (!place.ok()) return place.status();
  const int64_t mine = *place - 1;
  const std::string ctx = "place " + std::to_string(mine) + " in line";
  const Deadline deadline = Deadline::After(options.timeout);
  auto offer = store.Get(SlotKey(mine), deadline);
  if (!offer.ok())
    return offer.status().WithContext(ctx + ": no grow admitted it within " + options.timeout_name +
                                      " (its ranks call hoop_comm_grow)");
  CommOptions o = options;
  char name[1024] = {0}, base[1100] = {0};
  if (std::sscanf(offer->c_str(), "%1023[^\t]\t%d\t%d\t%1099s", name, &o.size, &o.rank, base) != 4)
    return Internal(ctx + ": a malformed offer '" + *offer + "'");
  o.name = name;
  o.local_rank = o.local_size = -1;
  const std::string at = base;
  auto give_up = [&]() -> Status {
    return Peek(store, at + "outcome") ? Unavailable("the grow was given up") : Status::Ok();
  };
  WatchfulStore watchful(store, give_up);
  auto made = Create(store, o, Meeting{deadline, &watchful, give_up});
  std::vector<int> members(static_cast<size_t>(o.size));
  for (int r = 0; r < o.size; ++r) members[static_cast<size_t>(r)] = r;
  auto keep =
      AgreeOutcome(store, at, o.rank, members, made.ok(), deadline, deadline, [] { return std::vector<int>(); });
  if (made.ok() && !(keep.ok() && *keep)) (*made)->Abort(o.name + ": the grow was given up");  // as above
  if (!keep.ok()) return keep.status().WithContext(ctx);
  if (!*keep) {
    HOOP_LOG(kWarn, "a newcomer, " << ctx << ": the grow into '" << o.name << "' was given up ("
                                   << (made.ok() ? "another member could not make it" : made.status().message())
                                   << "); queueing again");
    return std::unique_ptr<CommCore>();
  }
  HOOP_LOG(kInfo, "a newcomer, " << ctx << ": rank " << o.rank << " of " << o.size << " in '" << o.name << "'");
  return made;
}

StatusOr<std::unique_ptr<CommCore>> CommCore::Join(Store& store, const CommOptions& options) {
  for (int tries = 0; tries < 64; ++tries) {
    auto made = JoinOnce(store, options);
    if (!made.ok()) return made.status().WithContext("a newcomer joining the job");
    if (*made) return made;
  }
  return Unavailable("a newcomer joining the job: 64 grows that offered it a place were given up");
}

}  // namespace hoop
