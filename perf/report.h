// hoop-perf's output: the nccl-tests-style table on stdout (a header with the run's parameters
// and one line per rank, then one row per size with out of place and in place side by side),
// and the same measurements as CSV and JSON files, rewritten as each size finishes.
#pragma once

#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "perf/bench.h"

namespace hoop::perf {

struct RankLine {  // as nccl-tests' device list
  int rank = 0, pid = 0;
  std::string host, transport;
};

struct RunInfo {
  const PerfOptions* o;
  int ranks;
  std::string transport;    // rank 0's back ends
  std::string compression;  // --compression, else HOOP_COMPRESSION's setting
  std::vector<RankLine> rank_lines;
};

// One size of one dtype/op: the out-of-place and in-place measurements that ran.
struct SizeRows {
  std::optional<Row> out, in;
};

void PrintHeader(const RunInfo& info);
void PrintCaseNote(const std::string& note);  // a '#' line between rows
void PrintRow(const RunInfo& info, const SizeRows& r);
void PrintSummary(const RunInfo& info, const std::vector<Row>& rows);

// --csv and --json: opened (and so checked) before the first measurement; every Add writes the
// CSV line and flushes, and rewrites the JSON file whole through a rename, so a sweep stopped at
// any point leaves valid files holding every size it finished.
class RowFiles {
 public:
  // "" or the reason a file cannot be written.
  std::string Open(const RunInfo& info);
  // false (and *why) when a write fails.
  bool Add(const RunInfo& info, const Row& r, std::string* why);

 private:
  bool WriteJson(std::string* why);
  std::string csv_path_, json_path_;
  std::ofstream csv_;
  std::vector<std::string> json_rows_;
};

}  // namespace hoop::perf
