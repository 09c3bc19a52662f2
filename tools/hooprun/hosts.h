// The hosts a job runs on and where each rank goes, as horovodrun's -H and --hostfile and
// mpirun's --map-by say: pure functions, so the unit tests check the arithmetic and the error
// messages without starting anything.
//
// Placement: --map-by slot (the default) fills each host's slots in the order the hosts are
// listed; --map-by node deals ranks round-robin over the hosts that still have a free slot. A
// rank's local rank counts the ranks before it on its host; its cross rank counts the hosts
// before its own that have a rank of the same local rank (Horovod's HOROVOD_CROSS_RANK), and the
// cross size is how many hosts have one.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace hoop::run {

struct HostSlots {
  std::string host;
  int slots = 1;
  int max_slots = 0;  // a hostfile's max_slots=N: the most ranks even --oversubscribe puts there (0: no limit)
};

// "-H a:2,b:2,c" (a host without ":N" has one slot).
StatusOr<std::vector<HostSlots>> ParseHostList(const std::string& spec);
// A hostfile's text: one "HOST [slots=N] [max_slots=M]" per line (mpirun's), '#' starts a
// comment, blank lines are skipped. `name` is the file's name, for the messages (which give the line number).
StatusOr<std::vector<HostSlots>> ParseHostfile(const std::string& text, const std::string& name);

// What a --host-discovery-script printed: one HOST[:SLOTS] per line (horovodrun's), '#'
// comments and blank lines skipped; no line at all is no host.
StatusOr<std::vector<HostSlots>> ParseDiscovered(const std::string& text, int default_slots = 1);

enum class MapBy { kSlot, kNode };

struct Placement {
  std::string host;
  int local_rank = 0, local_size = 0;
  int cross_rank = 0, cross_size = 0;
};

// Where each of `np` ranks goes (np 0: the sum of the slots). More ranks than slots is an error
// naming both numbers, unless `oversubscribe` (mpirun's flag): then the ranks past the slots are
// dealt one per host in turn, up to each host's max_slots.
StatusOr<std::vector<Placement>> PlaceRanks(const std::vector<HostSlots>& hosts, int np, MapBy map,
                                            bool oversubscribe = false);

// Whether `host` names this machine: localhost, a loopback address, one of this host's own
// `addresses`, or its own name (`self`, as gethostname gives it; a short name matches its fully
// qualified form). Any other host is remote: its ranks start over ssh.
bool IsThisHost(const std::string& host, const std::string& self, const std::vector<std::string>& addresses = {});

}  // namespace hoop::run
