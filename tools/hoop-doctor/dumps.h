// hoop-doctor's input: flight recorder dumps read into one model, whichever library wrote them.
//  - hoop's: hoop-trace.<comm>.<rank>.json (collectives/core/flight_recorder.h: TraceJson), one
//    communicator of one rank per file.
//  - PyTorch's flight recorder in its JSON form ("version", "pg_config", "entries"; its pickle
//    form is not read): one rank per file, the rank the file name's last digits, its entries
//    grouped by process group; state scheduled/started/completed, collective_seq_id, the op
//    from profiling_name ("nccl:all_reduce" -> all_reduce), the count and dtype from the first
//    input.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace hoop::doctor {

struct Op {
  int64_t seq = -1;  // a collective's number on its communicator, the same on every rank; -1: p2p
  std::string op, dtype, algo, state, error;  // state: queued, started, done, failed
  std::string name;  // the caller's (hoop: fusion's tensors, PyTorch's op; PyTorch: profiling_name)
  uint64_t count = 0;
  int root = -1, peer = -1;
  uint32_t step = 0, chunk = 0;
  std::vector<int> waiting_for;
  // What ranks must agree on: op, dtype, count, root.
  std::string Signature() const;
  // "allreduce 1000 x f32", "broadcast 10 x i32 (root 0)", "allreduce 8 x f32 [hoop:allreduce]"
  std::string Describe() const;
};

struct RankDump {
  std::string file, comm, reason, host;
  int rank = -1, size = 0, pid = 0;
  std::vector<Op> ops;               // oldest first
  std::vector<Op> queued;            // behind the running one, not started
  std::vector<int64_t> retransmits;  // by rank: what the link to each resent by the timeout (-1: unknown)
};

// Reads one dump's JSON text (`name`: where it came from, for messages; a PyTorch dump's rank
// is its last digits) into *out; false where the text is no dump.
bool ParseDump(const std::string& text, const std::string& name, std::vector<RankDump>* out);

// Reads every dump under the given files and folders (a folder: its *.json files, not deeper),
// one RankDump per communicator and rank; files that are not dumps are named in *skipped.
StatusOr<std::vector<RankDump>> ReadDumps(const std::vector<std::string>& paths, std::vector<std::string>* skipped);

}  // namespace hoop::doctor
