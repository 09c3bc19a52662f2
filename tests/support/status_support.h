// For the tests of `hooprun --status` (tools/hooprun/status.h): finding a running hooprun by its
// job file, and reading the table it prints.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace hoop::test {

// The pid of the running hooprun whose command holds `marker`, from its job file (status.h); 0
// if none appears within `seconds`.
inline int HooprunWith(const std::string& tmp, const std::string& marker, double seconds) {
  const std::string dir = tmp + "/hoop-" + std::to_string(::getuid());
  for (int i = 0; i < seconds * 20; ++i, ::usleep(50000)) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      std::ifstream in(e.path());
      const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
      if (j.is_object() && j.value("command", std::string()).find(marker) != std::string::npos) return j["pid"];
    }
  }
  return 0;
}

// The table's row of `rank` (the first, where it has several communicators).
inline std::string RowOf(const std::string& out, int rank) {
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(std::to_string(rank) + " ", 0) == 0) return line;
  return "";
}

}  // namespace hoop::test
