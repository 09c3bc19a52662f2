// See sub_flags.h.
#include "perf/sub_flags.h"

#include <algorithm>

#include "common/parse.h"

namespace hoop::perf {

Status ReadSubFlags(int argc, char** argv, const std::vector<std::string>& known, bool* help,
                    const std::function<Status(const std::string&, const std::string&)>& take) {
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      *help = true;
      return Status::Ok();
    }
    if (std::find(known.begin(), known.end(), a) == known.end()) return InvalidArgument("unknown option '" + a + "'");
    if (i + 1 >= argc) return InvalidArgument(a + " needs a value");
    HOOP_RETURN_IF_ERROR(take(a, argv[++i]));
  }
  return Status::Ok();
}

StatusOr<int> FlagInt(const std::string& flag, const std::string& value, int lo, int hi) {
  auto n = ParseInt(value);
  if (!n || *n < lo || *n > hi)
    return InvalidArgument(flag + " '" + value + "': expected an integer in [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "]");
  return static_cast<int>(*n);
}

Status FlagTransport(const std::string& flag, const std::string& value, std::string* out) {
  if (value != "shm" && value != "ucx" && value != "ofi" && value != "tcp")
    return InvalidArgument(flag + " '" + value + "': expected shm, ucx, ofi or tcp");
  *out = value;
  return Status::Ok();
}

}  // namespace hoop::perf
