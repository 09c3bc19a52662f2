#include "tensorfusion/request.h"

#include <cstring>
#include <sstream>

#include "collectives/kernels/wire.h"

namespace hoop::fusion {

uint64_t TensorParams::FusedBytes(int nranks) const {
  uint64_t b = count * DTypeSize(dtype);
  return kind == CollKind::kAllgather ? b * static_cast<uint64_t>(nranks) : b;
}

std::string DescribeParams(const TensorParams& p) {
  std::ostringstream os;
  os << CollKindName(p.kind) << " " << p.count << " x " << DTypeName(p.dtype);
  if (p.kind == CollKind::kAllreduce) os << " " << ReduceOpName(p.op);
  if (p.kind == CollKind::kBroadcast) os << " root " << p.root;
  if (p.compression != kDefaultCompression) os << " " << CompressionName(static_cast<Compression>(p.compression));
  if (p.mem != MemKind::kHost) os << " " << MemKindName(p.mem);
  if (p.prescale != 1) os << " prescale " << p.prescale;
  if (p.postscale != 1) os << " postscale " << p.postscale;
  if (p.unfused) os << " unfused";
  return os.str();
}

namespace {

class Writer {
 public:
  explicit Writer(std::vector<char>* out) : out_(out) { out_->clear(); }
  template <class T>
  void Put(T v) {
    size_t at = out_->size();
    out_->resize(at + sizeof(T));
    std::memcpy(out_->data() + at, &v, sizeof(T));
  }
  void PutString(const std::string& s) {
    Put<uint32_t>(static_cast<uint32_t>(s.size()));
    out_->insert(out_->end(), s.begin(), s.end());
  }
  void PutParams(const TensorParams& p) {
    Put<uint8_t>(static_cast<uint8_t>(p.kind));
    Put<uint8_t>(static_cast<uint8_t>(p.dtype));
    Put<uint8_t>(static_cast<uint8_t>(p.op));
    Put<uint8_t>(p.compression);
    Put<uint8_t>(static_cast<uint8_t>(p.mem));
    Put<int32_t>(p.root);
    Put<uint64_t>(p.count);
    Put<double>(p.prescale);
    Put<double>(p.postscale);
    Put<uint8_t>(p.unfused ? 1 : 0);
  }

 private:
  std::vector<char>* out_;
};

class Reader {
 public:
  Reader(const char* p, size_t n) : p_(p), end_(p + n) {}
  template <class T>
  bool Get(T* v) {
    if (static_cast<size_t>(end_ - p_) < sizeof(T)) return false;
    std::memcpy(v, p_, sizeof(T));
    p_ += sizeof(T);
    return true;
  }
  bool GetString(std::string* s) {
    uint32_t n = 0;
    if (!Get(&n) || static_cast<size_t>(end_ - p_) < n) return false;
    s->assign(p_, n);
    p_ += n;
    return true;
  }
  bool GetParams(TensorParams* p) {
    uint8_t kind, dtype, op, mem, unfused;
    if (!Get(&kind) || !Get(&dtype) || !Get(&op) || !Get(&p->compression) || !Get(&mem) || !Get(&p->root) ||
        !Get(&p->count) || !Get(&p->prescale) || !Get(&p->postscale) || !Get(&unfused) || unfused > 1)
      return false;
    p->unfused = unfused == 1;
    if (kind < static_cast<uint8_t>(CollKind::kAllreduce) || kind > static_cast<uint8_t>(CollKind::kAllgather) ||
        dtype > static_cast<uint8_t>(kLastDType) || op > static_cast<uint8_t>(kLastReduceOp) ||
        mem > static_cast<uint8_t>(kLastMemKind) ||
        (p->compression != kDefaultCompression && p->compression > static_cast<uint8_t>(Compression::kAuto)))
      return false;
    p->kind = static_cast<CollKind>(kind);
    p->dtype = static_cast<DType>(dtype);
    p->op = static_cast<ReduceOp>(op);
    p->mem = static_cast<MemKind>(mem);
    return true;
  }
  bool done() const { return p_ == end_; }

 private:
  const char* p_;
  const char* end_;
};

template <class T, class ReadOne>
StatusOr<std::vector<T>> DecodeList(const char* data, size_t size, const char* what, ReadOne read_one) {
  Reader r(data, size);
  uint32_t n = 0;
  std::vector<T> list;
  bool ok = r.Get(&n);
  for (uint32_t i = 0; ok && i < n; ++i) {
    T item;
    ok = read_one(r, &item);
    if (ok) list.push_back(std::move(item));
  }
  if (!ok || !r.done()) return Internal(std::string("tensor fusion: a malformed ") + what + " list arrived");
  return list;
}

}  // namespace

void EncodeRequests(const std::vector<Request>& list, std::vector<char>* out) {
  Writer w(out);
  w.Put<uint32_t>(static_cast<uint32_t>(list.size()));
  for (const Request& r : list) {
    w.PutString(r.name);
    w.PutParams(r.params);
    w.Put<uint32_t>(r.age_ms);
    w.Put<uint8_t>(r.join ? 1 : 0);
  }
}

StatusOr<std::vector<Request>> DecodeRequests(const char* data, size_t size) {
  return DecodeList<Request>(data, size, "request", [](Reader& r, Request* q) {
    uint8_t join = 0;
    if (!(r.GetString(&q->name) && r.GetParams(&q->params) && r.Get(&q->age_ms) && r.Get(&join)) || join > 1)
      return false;
    q->join = join == 1;
    return true;
  });
}

void EncodeResponses(const std::vector<Response>& list, std::vector<char>* out) {
  Writer w(out);
  w.Put<uint32_t>(static_cast<uint32_t>(list.size()));
  for (const Response& r : list) {
    w.PutString(r.name);
    w.PutParams(r.params);
    w.PutString(r.error);
    w.Put<uint8_t>(r.timed_out ? 1 : 0);
    w.Put<int32_t>(r.join_last);
  }
}

StatusOr<std::vector<Response>> DecodeResponses(const char* data, size_t size) {
  return DecodeList<Response>(data, size, "response", [](Reader& r, Response* q) {
    uint8_t timed_out = 0;
    if (!(r.GetString(&q->name) && r.GetParams(&q->params) && r.GetString(&q->error) && r.Get(&timed_out) &&
          r.Get(&q->join_last)) ||
        timed_out > 1 || q->join_last < -1)
      return false;
    q->timed_out = timed_out == 1;
    return true;
  });
}

}  // namespace hoop::fusion
