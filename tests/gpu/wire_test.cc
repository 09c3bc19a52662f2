// The wire codec on the GPU (collectives/kernels/device_wire.h) against the host's (wire.h), bit
// for bit: f32 and f64 data, fp16 and bf16, counts 0, 1, 7, 1000 and 2^20+3, mixed magnitudes
// with infinities and NaNs among them; the largest magnitude (with and without an added
// residual), encoding with each of the residual and rounding outputs, decoding with and without
// an added residual and an average's division. A NaN matches any NaN.
#include "tests/gpu/gpu_support.h"

#include <cmath>
#include <limits>

#include "collectives/kernels/device_wire.h"
#include "collectives/testing/reference.h"

using namespace hoop;

namespace {

template <class T>
bool SameBits(const std::vector<char>& a, const std::vector<char>& b, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    T x, y;
    std::memcpy(&x, a.data() + i * sizeof(T), sizeof(T));
    std::memcpy(&y, b.data() + i * sizeof(T), sizeof(T));
    if (std::memcmp(&x, &y, sizeof(T)) != 0 && !(x != x && y != y)) return false;
  }
  return true;
}

bool Same(DType d, const std::vector<char>& a, const std::vector<char>& b, size_t n) {
  return d == DType::kF32 ? SameBits<float>(a, b, n) : SameBits<double>(a, b, n);
}

bool SameHalves(const std::vector<char>& a, const std::vector<char>& b, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint16_t x, y;
    std::memcpy(&x, a.data() + 2 * i, 2);
    std::memcpy(&y, b.data() + 2 * i, 2);
    const bool xn = (x & 0x7fff) > 0x7f80 || ((x & 0x7c00) == 0x7c00 && (x & 0x3ff));  // NaN as bf16 or fp16
    const bool yn = (y & 0x7fff) > 0x7f80 || ((y & 0x7c00) == 0x7c00 && (y & 0x3ff));
    if (x != y && !(xn && yn)) return false;
  }
  return true;
}

std::vector<char> Mixed(DType d, size_t n, uint64_t seed) {
  std::vector<char> v(n * DTypeSize(d) + 8);
  FillMixed(d, v.data(), n, seed);
  // Some infinities and NaNs among them: they travel as themselves.
  for (size_t i = 13; i < n; i += 977) {
    const double special = i % 3 == 0 ? std::numeric_limits<double>::quiet_NaN() : (i % 2 ? 1.0 : -1.0) * HUGE_VAL;
    if (d == DType::kF32) {
      const float f = static_cast<float>(special);
      std::memcpy(v.data() + i * 4, &f, 4);
    } else {
      std::memcpy(v.data() + i * 8, &special, 8);
    }
  }
  return v;
}

struct OnDevice {
  test::DeviceBuf buf;
  explicit OnDevice(const std::vector<char>& host) : buf(host.size() + 8) { buf.Upload(host.data(), host.size()); }
  char* get() const { return buf.get(); }
};

}  // namespace

TEST_CASE("gpu: the wire codec's kernels give the host codec's bits", "[gpu][compression]") {
  if (!test::HaveGpu()) return;
  for (DType d : {DType::kF32, DType::kF64}) {
    const size_t es = DTypeSize(d);
    for (Compression c : {Compression::kFp16, Compression::kBf16}) {
      const WireKernels* host = LookupWire(d, c);
      const DeviceWireKernels* dev = LookupDeviceWire(d, c);
      REQUIRE(host != nullptr);
      REQUIRE(dev != nullptr);
      for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}, (size_t{1} << 20) + 3}) {
        INFO(DTypeName(d) << " " << CompressionName(c) << " n=" << n);
        std::vector<char> x = Mixed(d, n, n + 1), add = Mixed(d, n, n + 2);
        for (size_t i = 0; i < n * es; ++i) add[i] = static_cast<char>(add[i] & 0x8f);  // small residuals
        OnDevice dx(x), dadd(add);
        test::DeviceBuf word(8);
        for (bool with_add : {false, true}) {
          const double want = host->absmax(x.data(), with_add ? add.data() : nullptr, n);
          REQUIRE(dev->absmax(dx.get(), with_add ? dadd.get() : nullptr, n, reinterpret_cast<uint64_t*>(word.get()),
                              nullptr)
                      .ok());
          uint64_t bits = 0;
          std::vector<char> wb = word.Download(8);
          std::memcpy(&bits, wb.data(), 8);
          CHECK(AbsMaxFromBits(d, bits) == want);
        }
        const int e = WireScaleExponent(host->absmax(x.data(), nullptr, n), d);
        const double scale = std::ldexp(1.0, e), inv = std::ldexp(1.0, -e), mult = 0.5;
        // Encode: every combination of the optional inputs and outputs.
        for (int k = 0; k < 8; ++k) {
          const bool a = k & 4, r = k & 2, o = k & 1;
          std::vector<char> hw(2 * n + 2), hres(n * es + 8), hrnd(n * es + 8);
          host->encode(reinterpret_cast<uint16_t*>(hw.data()), o ? hrnd.data() : nullptr, x.data(),
                       a ? add.data() : nullptr, r ? hres.data() : nullptr, n, scale, inv, mult);
          test::DeviceBuf dw(2 * n + 2), dres(n * es + 8), drnd(n * es + 8);
          REQUIRE(dev->encode(reinterpret_cast<uint16_t*>(dw.get()), o ? drnd.get() : nullptr, dx.get(),
                              a ? dadd.get() : nullptr, r ? dres.get() : nullptr, n, scale, inv, mult, nullptr)
                      .ok());
          INFO("encode variant " << k);
          CHECK(SameHalves(hw, dw.Download(2 * n + 2), n));
          if (r) CHECK(Same(d, hres, dres.Download(n * es + 8), n));
          if (o) CHECK(Same(d, hrnd, drnd.Download(n * es + 8), n));
          if (k != 0) continue;
          // Decode what was encoded, alone and added to a source, with and without a residual
          // and the average's division.
          std::vector<char> hout(n * es + 8);
          host->decode(hout.data(), reinterpret_cast<const uint16_t*>(hw.data()), n, inv);
          test::DeviceBuf dout(n * es + 8);
          REQUIRE(dev->decode(dout.get(), reinterpret_cast<const uint16_t*>(dw.get()), n, inv, nullptr).ok());
          CHECK(Same(d, hout, dout.Download(n * es + 8), n));
          for (int divisor : {1, 3})
            for (bool with_add : {false, true}) {
              host->decode_add(hout.data(), x.data(), with_add ? add.data() : nullptr,
                               reinterpret_cast<const uint16_t*>(hw.data()), n, inv, divisor);
              REQUIRE(dev->decode_add(dout.get(), dx.get(), with_add ? dadd.get() : nullptr,
                                      reinterpret_cast<const uint16_t*>(dw.get()), n, inv, divisor, nullptr)
                          .ok());
              INFO("decode_add divisor " << divisor << (with_add ? " with residual" : ""));
              CHECK(Same(d, hout, dout.Download(n * es + 8), n));
            }
        }
      }
    }
  }
}
