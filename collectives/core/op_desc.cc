#include "collectives/core/op_desc.h"

#include "collectives/core/algo.h"
#include "collectives/kernels/wire.h"

namespace hoop {
namespace {
constexpr uint64_t kCountMask = 0x3fffffffull;  // the count's 30 bits in the word
}  // namespace

// Layout: kind 4 | dtype 4 | op 4 | algo 4 | root+1 16 | compression 2 | count 30 (low bits;
// larger differences also show up as a length mismatch).
uint64_t OpDesc::Pack() const {
  return (uint64_t(static_cast<uint8_t>(kind)) << 60) | (uint64_t(static_cast<uint8_t>(dtype)) << 56) |
         (uint64_t(static_cast<uint8_t>(op)) << 52) | (uint64_t(algo & 0xf) << 48) |
         (uint64_t((root + 1) & 0xffff) << 32) | (uint64_t(compression & 3) << 30) | (count & kCountMask);
}

OpDesc OpDesc::Unpack(uint64_t w) {
  OpDesc d;
  d.kind = static_cast<CollKind>((w >> 60) & 0xf);
  d.dtype = static_cast<DType>((w >> 56) & 0xf);
  d.op = static_cast<ReduceOp>((w >> 52) & 0xf);
  d.algo = static_cast<uint8_t>((w >> 48) & 0xf);
  d.root = static_cast<int>((w >> 32) & 0xffff) - 1;
  d.compression = static_cast<uint8_t>((w >> 30) & 3);
  d.count = w & kCountMask;
  return d;
}

std::string OpDesc::DescribeDifference(const OpDesc& t, int peer) const {
  std::string on = " on rank " + std::to_string(peer);
  std::string out;
  auto add = [&](const std::string& what, const std::string& mine, const std::string& theirs) {
    if (mine == theirs) return;
    if (!out.empty()) out += "; ";
    out += what + " " + mine + " here, " + theirs + on;
  };
  auto name = [](const OpDesc& d) -> std::string {
    return d.kind == CollKind::kAllgather && d.root == kSplitRoot ? "split" : CollKindName(d.kind);
  };
  add("collective", name(*this), name(t));
  if (kind == t.kind && name(*this) == name(t)) {
    add("count", std::to_string(count & kCountMask), std::to_string(t.count));
    add("dtype", DTypeName(dtype), DTypeName(t.dtype));
    if (Reduces(kind)) add("op", ReduceOpName(op), ReduceOpName(t.op));
    if (Rooted(kind)) add("root", std::to_string(root), std::to_string(t.root));
    add("algorithm", AlgoName(static_cast<Algo>(algo)), AlgoName(static_cast<Algo>(t.algo)));
    add("compression", CompressionName(static_cast<Compression>(compression)),
        CompressionName(static_cast<Compression>(t.compression)));
  }
  return out.empty() ? "operation description differs" + on : out;
}

}  // namespace hoop
