#include "trainer/device_choice.h"

#include "common/device.h"

namespace hoop::train {

StatusOr<std::vector<std::string>> ParseDevices(const std::string& list) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= list.size()) {
    const size_t comma = list.find(',', at);
    const std::string d = list.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (d != "cpu" && d != "cuda")
      return InvalidArgument("--devices '" + list + "': entry '" + d + "' is not cpu or cuda");
    out.push_back(d);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

StatusOr<int> RankDevice(const std::string& device, const std::vector<std::string>& devices, int rank, int ranks,
                         int local_rank) {
  std::string mine = device;
  const char* option = "--device";
  if (!devices.empty()) {
    option = "--devices";
    if (static_cast<int>(devices.size()) != ranks)
      return InvalidArgument("--devices names " + std::to_string(devices.size()) + " device(s) for " +
                             std::to_string(ranks) + " ranks: give one per rank");
    mine = devices[rank];
  }
  if (mine == "cpu") return -1;
  StatusOr<int> count = CudaDeviceCount();
  if (mine == "auto") return count.ok() && local_rank < *count ? local_rank : -1;
  if (!count.ok())
    return count.status().WithContext(std::string(option) + " cuda: no CUDA device for rank " + std::to_string(rank));
  if (*count == 0) return Unavailable(std::string(option) + " cuda: no CUDA device for rank " + std::to_string(rank));
  return local_rank % *count;
}

std::string DeviceName(int device) { return device < 0 ? "cpu" : "cuda:" + std::to_string(device); }

}  // namespace hoop::train
