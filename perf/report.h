// hoop-perf's output: the nccl-tests-style table on stdout, and the same rows as JSON or CSV.
#pragma once

#include <string>
#include <vector>

#include "perf/bench.h"

namespace hoop::perf {

struct RunInfo {
  const PerfOptions* o;
  int ranks;
  std::string transport;
  std::string compression;  // -z, else HOOP_COMPRESSION's setting
};

void PrintHeader(const RunInfo& info);
void PrintRow(const RunInfo& info, const Row& r);
void PrintSummary(const RunInfo& info, const std::vector<Row>& rows);
bool WriteJson(const std::string& path, const RunInfo& info, const std::vector<Row>& rows);
bool WriteCsv(const std::string& path, const RunInfo& info, const std::vector<Row>& rows);

}  // namespace hoop::perf
