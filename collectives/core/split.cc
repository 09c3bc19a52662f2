// CommCore::Split and Dup: sub-communicators over the parent's connections.
//
// Every rank gathers every rank's record over the parent (an allgather, so a rank that calls
// something else instead fails every rank, naming the difference): a marker, its color and key,
// and which communicator ids are in use on it (transport/shared_transport.h). Each rank then
// checks every record (a bad color fails every rank alike), takes the ranks of its color ordered
// by (key, parent rank), and the lowest id free on every one of them: all members compute the
// same answer from the same records, and no rank ever has two communicators with one id.
#include <algorithm>
#include <array>
#include <cstring>

#include "collectives/core/comm_core.h"
#include "collectives/core/op_desc.h"
#include "common/logging.h"

namespace hoop {

namespace {
constexpr int64_t kMarker = 0x686f6f7073706c74;  // "hooplspt": a record, not a caller's allgather
constexpr size_t kWords = 3 + kMaxViews / 64;    // marker, color, key, id bitmap
}  // namespace

StatusOr<std::unique_ptr<CommCore>> CommCore::Dup() { return Split(0, opts_.rank); }

StatusOr<std::unique_ptr<CommCore>> CommCore::Split(int color, int key) {
  const std::string who = "rank " + std::to_string(opts_.rank) + ": split of communicator '" + opts_.name + "'";
  std::array<int64_t, kWords> mine{};
  mine[0] = kMarker;
  mine[1] = color;
  mine[2] = key;
  const auto used = membership_.hub->InUse();
  for (size_t i = 0; i < used.size(); ++i) std::memcpy(&mine[3 + i], &used[i], sizeof(uint64_t));
  std::vector<int64_t> all(kWords * static_cast<size_t>(opts_.size));
  // An allgather that says it is a split (kSplitRoot): a rank that called anything else is told so.
  Op x;
  x.kind = CollKind::kAllgather;
  x.in = Buffer{mine.data(), kWords, DType::kI64};
  x.out = Buffer{all.data(), all.size(), DType::kI64};
  x.root = kSplitRoot;
  Status s = Submit(x, true).Wait();
  if (!s.ok()) return s.WithContext(who);
  const uint32_t number = splits_++;  // the same on every rank: splits are collectives here

  auto rec = [&](int r) { return all.data() + kWords * static_cast<size_t>(r); };
  for (int r = 0; r < opts_.size; ++r) {
    if (rec(r)[0] != kMarker)
      return InvalidArgument(who + ": rank " + std::to_string(r) + " called an allgather of " + std::to_string(kWords) +
                             " x i64 instead of the split");
    if (rec(r)[1] < 0 && rec(r)[1] != kUndefined)
      return InvalidArgument(who + ": rank " + std::to_string(r) + " passed color " + std::to_string(rec(r)[1]) +
                             " (a color is >= 0, or HOOP_UNDEFINED for no communicator)");
  }
  if (color == kUndefined) return std::unique_ptr<CommCore>();

  std::vector<int> group;  // parent ranks of this color, in their new order
  for (int r = 0; r < opts_.size; ++r)
    if (rec(r)[1] == color) group.push_back(r);
  std::stable_sort(group.begin(), group.end(), [&](int a, int b) { return rec(a)[2] < rec(b)[2]; });
  std::array<uint64_t, kMaxViews / 64> taken{};
  for (int r : group)
    for (size_t i = 0; i < taken.size(); ++i) {
      uint64_t w;
      std::memcpy(&w, &rec(r)[3 + i], sizeof w);
      taken[i] |= w;
    }
  int id = -1;
  for (int i = 1; i < kMaxViews && id < 0; ++i)
    if (!(taken[static_cast<size_t>(i) / 64] >> (i % 64) & 1)) id = i;
  if (id < 0)
    return InvalidArgument(who + ": " + std::to_string(kMaxViews - 1) +
                           " communicators already share these "
                           "connections on some member (free some with hoop_comm_free)");

  Membership m;
  m.hub = membership_.hub;
  m.id = id;
  CommOptions sub = Inherited();
  sub.name = opts_.name + "." + std::to_string(number) + "." + std::to_string(color);
  sub.size = static_cast<int>(group.size());
  sub.local_rank = sub.local_size = 0;  // the members on this host, and those of them ahead of this rank
  const std::string& my_host = membership_.hosts[static_cast<size_t>(opts_.rank)];
  bool passed_me = false;
  for (size_t i = 0; i < group.size(); ++i) {
    const int r = group[i];
    m.members.push_back(membership_.members[static_cast<size_t>(r)]);
    m.hosts.push_back(membership_.hosts[static_cast<size_t>(r)]);
    m.procs.push_back(membership_.procs[static_cast<size_t>(r)]);
    if (r == opts_.rank) {
      sub.rank = static_cast<int>(i);
      passed_me = true;
    }
    if (m.hosts.back() != my_host) continue;
    ++sub.local_size;
    if (!passed_me) ++sub.local_rank;
  }
  auto view = m.hub->View(id, m.members, sub.rank);
  if (!view.ok())  // another split on this rank, from another thread, took the id meanwhile
    return view.status().WithContext(who + " (split one communicator at a time on each rank)");
  HOOP_LOG(kDebug, who << ": color " << color << " key " << key << " -> rank " << sub.rank << " of " << sub.size
                       << " in '" << sub.name << "' (id " << id << ")");
  std::unique_ptr<CommCore> comm(new CommCore(sub, store_, std::move(m), std::move(view).value()));
  HOOP_RETURN_IF_ERROR(comm->mailbox_->Start().WithContext(who));
  return comm;
}

}  // namespace hoop
