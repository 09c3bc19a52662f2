// libFuzzer target: what a peer says about an operation. Two halves:
//  - the operation description word every message carries (collectives/core/op_desc.h): any 64-bit
//    word a peer sends must unpack, explain a difference in words ("count 1000 here, 999 on rank
//    1"), and pack back to itself;
//  - the tensor fusion runtime's negotiation lists (tensorfusion/request.h), decoded from bytes
//    another rank sent: malformed lists are refused, well-formed ones re-encode to the same bytes.
#include <cstdint>
#include <cstring>
#include <vector>

#include "collectives/core/op_desc.h"
#include "tensorfusion/request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  ++data;
  --size;
  if (mode & 1) {
    uint64_t words[2] = {0, 0};
    std::memcpy(words, data, std::min(size, sizeof words));
    for (uint64_t w : words) {
      hoop::OpDesc d = hoop::OpDesc::Unpack(w);
      if (d.Pack() != w) __builtin_trap();  // every field round-trips
    }
    hoop::OpDesc a = hoop::OpDesc::Unpack(words[0]), b = hoop::OpDesc::Unpack(words[1]);
    std::string diff = a.DescribeDifference(b, 5);
    if (diff.empty() || (words[0] != words[1] && diff.find("rank 5") == std::string::npos)) __builtin_trap();
    return 0;
  }
  const char* bytes = reinterpret_cast<const char*>(data);
  if (mode & 2) {
    auto list = hoop::fusion::DecodeRequests(bytes, size);
    if (list.ok()) {
      std::vector<char> again;
      hoop::fusion::EncodeRequests(*list, &again);
      if (again.size() != size || std::memcmp(again.data(), bytes, size) != 0) __builtin_trap();
      for (auto& r : *list) (void)hoop::fusion::DescribeParams(r.params);
    }
  } else {
    auto list = hoop::fusion::DecodeResponses(bytes, size);
    if (list.ok()) {
      std::vector<char> again;
      hoop::fusion::EncodeResponses(*list, &again);
      if (again.size() != size || std::memcmp(again.data(), bytes, size) != 0) __builtin_trap();
    }
  }
  return 0;
}
