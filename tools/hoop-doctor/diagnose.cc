// See diagnose.h.
#include "tools/hoop-doctor/diagnose.h"

#include <algorithm>
#include <map>
#include <set>

#include "transport/transport.h"

namespace hoop::doctor {

const char* VerdictName(Verdict v) {
  switch (v) {
    case kHealthy: return "healthy";
    case kMismatch: return "mismatch";
    case kDied: return "died";
    case kNeverEntered: return "never-entered";
    case kStuck: return "stuck";
    case kNoDump: return "no-dump";
    case kFailed: return "failed";
  }
  return "?";
}

std::string RankList(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    s += (s.empty() ? "" : ", ") + std::to_string(ranks[i]);
    if (j >= i + 2)
      s += "-" + std::to_string(ranks[j]);
    else if (j == i + 1)
      s += ", " + std::to_string(ranks[j]);
    i = j + 1;
  }
  return s;
}

namespace {

std::string Ranks(const std::vector<int>& r) { return (r.size() == 1 ? "rank " : "ranks ") + RankList(r); }

// One communicator's ranks, each with its collectives by sequence number.
struct View {
  std::map<int, const RankDump*> by_rank;
  std::map<int, std::map<int64_t, const Op*>> colls;  // rank -> seq -> op
  int size = 0;

  int64_t Reached(int r) const {  // the furthest collective it entered (-1: none)
    int64_t best = -1;
    for (const auto& [seq, op] : colls.at(r))
      if (op->state != "queued") best = std::max(best, seq);
    return best;
  }
};

View Build(const std::vector<const RankDump*>& dumps) {
  View v;
  for (const RankDump* d : dumps) {
    auto& slot = v.by_rank[d->rank];
    if (!slot || d->ops.size() > slot->ops.size()) slot = d;  // the fuller of two of one rank
    v.size = std::max({v.size, d->size, d->rank + 1});
  }
  for (const auto& [r, d] : v.by_rank) {
    auto& m = v.colls[r];
    for (const Op& o : d->ops)
      if (o.seq >= 0) m[o.seq] = &o;
  }
  return v;
}

bool Mismatch(const View& v, Diagnosis* out) {
  std::set<int64_t> seqs;
  for (const auto& [r, m] : v.colls)
    for (const auto& [seq, op] : m) seqs.insert(seq);
  for (int64_t seq : seqs) {
    std::map<std::string, std::vector<int>> by_sig;
    std::map<std::string, const Op*> example;
    for (const auto& [r, m] : v.colls)
      if (auto it = m.find(seq); it != m.end()) {
        by_sig[it->second->Signature()].push_back(r);
        example[it->second->Signature()] = it->second;
      }
    if (by_sig.size() < 2) continue;
    std::vector<std::pair<std::string, std::vector<int>>> groups(by_sig.begin(), by_sig.end());
    std::stable_sort(groups.begin(), groups.end(),
                     [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
    out->verdict = kMismatch;
    out->seq = seq;
    const Op& most = *example[groups[0].first];
    bool same_kind = true;
    for (size_t g = 1; g < groups.size(); ++g) {
      out->culprits.insert(out->culprits.end(), groups[g].second.begin(), groups[g].second.end());
      same_kind &= example[groups[g].first]->op == most.op;
    }
    std::sort(out->culprits.begin(), out->culprits.end());
    out->lines.push_back("collective #" + std::to_string(seq) + ": the ranks called different collectives: " +
                         (same_kind ? "the same one, with other arguments (count, dtype or root)"
                                    : "called in another order, or one left out"));
    for (const auto& [sig, ranks] : groups) out->lines.push_back("  " + Ranks(ranks) + ": " + example[sig]->Describe());
    if (groups[0].second.size() == groups[1].second.size()) {  // an even split: no odd one out
      out->culprits.clear();
      out->lines.push_back("the ranks split evenly: the dumps cannot tell which side is wrong");
    } else {
      out->lines.push_back("culprit: " + Ranks(out->culprits) + " (the odd one out)");
    }
    return true;
  }
  return false;
}

// Ranks without a dump: died (another saw it go), else not answering (stopped, or its signal blocked).
bool Missing(const View& v, Diagnosis* out) {
  std::vector<int> missing, died;
  std::string seen;
  int64_t died_in = -1;  // the collective in which the others saw it go
  for (int r = 0; r < v.size; ++r) {
    if (v.by_rank.count(r)) continue;
    missing.push_back(r);
    const std::string lost = "lost peer " + std::to_string(r) + " ";
    for (const auto& [other, d] : v.by_rank)
      for (const Op& o : d->ops)
        if (o.error.find(lost) != std::string::npos ||
            o.error.find("rank " + std::to_string(r) + " died") != std::string::npos) {
          if (died.empty() || died.back() != r) died.push_back(r);
          if (seen.empty()) seen = "rank " + std::to_string(other) + ": " + o.error;
          died_in = std::max(died_in, o.seq);
        }
  }
  if (missing.empty()) return false;
  std::vector<int> waiting;
  int64_t at = -1;
  for (const auto& [r, d] : v.by_rank)
    for (const Op& o : d->ops)
      for (int p : o.waiting_for)
        if (std::find(missing.begin(), missing.end(), p) != missing.end()) {
          if (waiting.empty() || waiting.back() != r) waiting.push_back(r);
          at = std::max(at, o.seq);
        }
  out->culprits = died.empty() ? missing : died;
  out->seq = died.empty() ? at : died_in;
  if (!died.empty()) {
    out->verdict = kDied;
    out->lines.push_back(Ranks(died) + " died" +
                         (died_in >= 0 ? " before or in collective #" + std::to_string(died_in) : "") +
                         ": no dump from it, and the others saw it go");
    out->lines.push_back("  " + seen);
  } else {
    out->verdict = kNoDump;
    out->lines.push_back(
        Ranks(missing) + " wrote no dump" +
        (waiting.empty() ? "" : ", and " + Ranks(waiting) + " wait for it in collective #" + std::to_string(at)) +
        ": it is stopped (SIGSTOP, a debugger), stuck with its signals blocked, or gone without a trace");
  }
  return true;
}

// A started collective, or one that failed waiting for peers: a rank stuck in it.
bool StuckIn(const Op& o) {
  return o.seq >= 0 && (o.state == "started" || (o.state == "failed" && !o.waiting_for.empty()));
}

bool NeverEntered(const View& v, Diagnosis* out) {
  int64_t furthest = -1;
  for (const auto& [r, d] : v.by_rank) furthest = std::max(furthest, v.Reached(r));
  std::vector<int> behind, inside;
  for (const auto& [r, d] : v.by_rank) (v.Reached(r) < furthest ? behind : inside).push_back(r);
  if (behind.empty() || furthest < 0) return false;
  // Ranks behind because they are stuck inside an earlier collective (waiting for a peer that
  // finished it and went on: its data never came) are StuckInside's.
  if (std::all_of(behind.begin(), behind.end(), [&](int r) {
        const int64_t last = v.Reached(r);
        return last >= 0 && StuckIn(*v.colls.at(r).at(last));
      }))
    return false;
  const Op* op = v.colls.at(inside.front()).at(furthest);
  out->verdict = kNeverEntered;
  out->seq = furthest;
  out->culprits = behind;
  out->lines.push_back(Ranks(behind) + " never entered collective #" + std::to_string(furthest) + " (" +
                       op->Describe() + "); " + Ranks(inside) + " did, and wait there");
  for (int r : behind) {
    const int64_t last = v.Reached(r);
    std::string line = "  rank " + std::to_string(r) + ": ";
    if (last < 0) {
      line += "entered no collective";
    } else {
      const Op* l = v.colls.at(r).at(last);
      line += "its last was #" + std::to_string(last) + " (" + l->Describe() + "), " + l->state;
    }
    const auto& q = v.by_rank.at(r)->queued;
    line += q.empty() ? "; it is in its own code: stuck before the call, or it left the call out"
                      : "; queued behind it: " + q.front().Describe();
    out->lines.push_back(line);
  }
  return true;
}

// The links that resent many segments by the timeout (the dumps' "retransmits": at least
// kLossyResends, and a tenth of the most any link resent; a busy link resends a few), and the one rank on
// every such link, if there is one: the rank behind a lossy link. Empty where none did.
std::vector<int> LossyAt(const View& v, std::string* said) {
  int64_t most = 0;
  for (const auto& [r, d] : v.by_rank)
    for (int64_t n : d->retransmits) most = std::max(most, n);
  if (most < kLossyResends) return {};
  std::vector<std::pair<int, int>> links;
  for (const auto& [r, d] : v.by_rank)
    for (size_t p = 0; p < d->retransmits.size(); ++p)
      if (d->retransmits[p] * 10 >= most) {
        links.emplace_back(r, static_cast<int>(p));
        *said += std::string(said->empty() ? "" : ", ") + std::to_string(r) + " to " + std::to_string(p) + ": " +
                 std::to_string(d->retransmits[p]);
      }
  if (links.empty()) return {};
  std::vector<int> on_all;
  for (int c : {links[0].first, links[0].second})
    if (std::all_of(links.begin(), links.end(), [c](const auto& l) { return l.first == c || l.second == c; }))
      on_all.push_back(c);
  std::sort(on_all.begin(), on_all.end());
  return on_all;
}

bool StuckInside(const View& v, Diagnosis* out) {
  // The oldest collective some rank is stuck in: the others may have gone on to later ones.
  for (const auto& [r, d] : v.by_rank)
    for (const Op& o : d->ops)
      if (StuckIn(o) && (out->seq < 0 || o.seq < out->seq)) out->seq = o.seq;
  if (out->seq < 0) return false;
  out->verdict = kStuck;
  for (const auto& [r, d] : v.by_rank)
    for (const Op& o : d->ops) {
      if (!StuckIn(o) || o.seq != out->seq) continue;
      if (out->lines.empty())
        out->lines.push_back("collective #" + std::to_string(o.seq) + " (" + o.Describe() +
                             "): every rank entered it, and some are still in it");
      out->lines.push_back("  rank " + std::to_string(r) + ": at step " + std::to_string(o.step) + ", chunk " +
                           std::to_string(o.chunk) + (o.algo.empty() ? "" : " of " + o.algo) +
                           (o.waiting_for.empty() ? "" : ", waiting for " + Ranks(o.waiting_for)));
      for (int p : o.waiting_for)
        if (std::find(out->culprits.begin(), out->culprits.end(), p) == out->culprits.end()) out->culprits.push_back(p);
    }
  std::sort(out->culprits.begin(), out->culprits.end());
  std::string resent;
  const std::vector<int> lossy = LossyAt(v, &resent);
  if (!lossy.empty()) {
    out->culprits = lossy;
    out->lines.push_back("the links that resent segments (rank to rank: segments) " + resent + "; each of them " +
                         (lossy.size() == 1 ? "is " + Ranks(lossy) + "'s" : "joins " + Ranks(lossy)) +
                         ": a lossy link there");
  } else if (!out->culprits.empty()) {
    out->lines.push_back("the one they wait for: " + Ranks(out->culprits) +
                         " (a slow or lossy link to it, or it is stuck)");
  }
  return true;
}

Diagnosis One(const std::string& comm, const std::vector<const RankDump*>& dumps) {
  const View v = Build(dumps);
  Diagnosis d;
  d.comm = comm;
  d.size = v.size;
  d.dumps = static_cast<int>(v.by_rank.size());
  if (Mismatch(v, &d) || Missing(v, &d) || NeverEntered(v, &d) || StuckInside(v, &d)) return d;
  for (const auto& [r, dump] : v.by_rank)
    for (const Op& o : dump->ops)
      if (o.state == "failed" && d.verdict == kHealthy) {
        d.verdict = kFailed;
        d.seq = o.seq;
        d.culprits = {r};
        d.lines.push_back("rank " + std::to_string(r) + ": " + o.Describe() + " failed: " + o.error);
      }
  if (d.verdict == kHealthy) {
    int64_t last = -1;
    for (const auto& [r, dump] : v.by_rank) last = std::max(last, v.Reached(r));
    d.lines.push_back("no hang found: every rank's last collective" +
                      (last >= 0 ? " (#" + std::to_string(last) + ") is done" : std::string(": none recorded")));
  }
  return d;
}

}  // namespace

std::vector<Diagnosis> Diagnose(const std::vector<RankDump>& dumps) {
  std::map<std::string, std::vector<const RankDump*>> by_comm;
  for (const RankDump& d : dumps) by_comm[d.comm].push_back(&d);
  std::vector<Diagnosis> out;
  for (const auto& [comm, ds] : by_comm) out.push_back(One(comm, ds));
  return out;
}

}  // namespace hoop::doctor
