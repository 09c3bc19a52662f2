// The batched scaled copy kernel (collectives/kernels/device_copy.h) against the host's
// fusion::ScaledCopy, bit for bit: every float dtype, factors 1, 0.5 and 3, counts 0, 1, 7, 1000
// and a large odd count, more items than one launch takes, an item copied onto itself. Inputs are
// random bits with the NaNs taken out (a NaN's payload after a multiply is the hardware's);
// infinities and subnormals stay. Integers copy their bits and refuse a factor.
#include "tests/gpu/gpu_support.h"

#include "collectives/kernels/device_copy.h"
#include "tensorfusion/scale.h"

using namespace hoop;

namespace {

// Random bits of `count` values of `t`, every NaN replaced by zero.
std::vector<char> RandomValues(DType t, size_t count, uint64_t seed) {
  const size_t es = DTypeSize(t);
  std::vector<char> v = test::RandomBytes(count * es, seed);
  for (size_t i = 0; i < count; ++i) {
    char* p = v.data() + i * es;
    bool nan = false;
    if (t == DType::kF16 || t == DType::kBF16) {
      uint16_t h;
      std::memcpy(&h, p, 2);
      nan =
          t == DType::kF16 ? ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0) : ((h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0);
    } else if (t == DType::kF32) {
      float f;
      std::memcpy(&f, p, 4);
      nan = f != f;
    } else if (t == DType::kF64) {
      double d;
      std::memcpy(&d, p, 8);
      nan = d != d;
    }
    if (nan) std::memset(p, 0, es);
  }
  return v;
}

}  // namespace

TEST_CASE("gpu: the batched copy kernel gives the host's scaled copy's bits", "[gpu]") {
  if (!test::HaveGpu()) return;
  const std::vector<size_t> counts = {0, 1, 7, 1000, 100003};
  const std::vector<double> factors = {1, 0.5, 3};
  for (DType t : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    const size_t es = DTypeSize(t);
    // 45 items (two launches): every count with every factor, three times over.
    std::vector<size_t> at;
    std::vector<DeviceCopyItem> items;
    size_t total = 0;
    for (int rep = 0; rep < 3; ++rep)
      for (size_t c : counts)
        for (double f : factors) {
          at.push_back(total);
          items.push_back({nullptr, nullptr, c, f});
          total += c;
        }
    const std::vector<char> src = RandomValues(t, total, 7 + static_cast<uint64_t>(t));
    test::DeviceBuf dsrc(total * es + 1), ddst(total * es + 1);
    dsrc.Upload(src.data(), total * es);
    std::vector<char> want(total * es);
    for (size_t j = 0; j < items.size(); ++j) {
      items[j].src = dsrc.get() + at[j] * es;
      items[j].dst = ddst.get() + at[j] * es;
      fusion::ScaledCopy(t, want.data() + at[j] * es, src.data() + at[j] * es, items[j].count, items[j].factor);
    }
    REQUIRE(DeviceBatchedScaledCopy(t, items.data(), items.size(), nullptr).ok());
    const std::vector<char> got = ddst.Download(total * es);
    for (size_t j = 0; j < items.size(); ++j) {
      INFO(DTypeName(t) << " item " << j << ": " << items[j].count << " values, factor " << items[j].factor);
      CHECK(std::memcmp(got.data() + at[j] * es, want.data() + at[j] * es, items[j].count * es) == 0);
    }
    // Onto itself: the source buffer scaled in place.
    for (auto& it : items) it.dst = const_cast<void*>(it.src);
    REQUIRE(DeviceBatchedScaledCopy(t, items.data(), items.size(), nullptr).ok());
    CHECK(dsrc.Download(total * es) == want);
  }
  // Integers: bits copied as they are, a factor refused.
  const std::vector<char> ints = test::RandomBytes(4 * 1001, 3);
  test::DeviceBuf a(ints.size()), b(ints.size());
  a.Upload(ints.data(), ints.size());
  DeviceCopyItem it{b.get(), a.get(), 1001, 1};
  REQUIRE(DeviceBatchedScaledCopy(DType::kI32, &it, 1, nullptr).ok());
  CHECK(b.Download(ints.size()) == ints);
  it.factor = 2;
  Status s = DeviceBatchedScaledCopy(DType::kI32, &it, 1, nullptr);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("cannot scale"));
}
