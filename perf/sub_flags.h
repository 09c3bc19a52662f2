// The flag walk of hoop-perf's subcommands (fusion, sendrecv): after `hoop-perf SUB`, -h/--help,
// else FLAG VALUE pairs, each flag one of `known`; `take` reads each value. Errors name the flag
// and say what it expects.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"

namespace hoop::perf {

// Stops at -h/--help, setting *help.
Status ReadSubFlags(int argc, char** argv, const std::vector<std::string>& known, bool* help,
                    const std::function<Status(const std::string& flag, const std::string& value)>& take);
// The value as an integer in [lo, hi].
StatusOr<int> FlagInt(const std::string& flag, const std::string& value, int lo, int hi);
// The value as a back end name for every peer (shm, ucx, ofi, tcp).
Status FlagTransport(const std::string& flag, const std::string& value, std::string* out);

}  // namespace hoop::perf
