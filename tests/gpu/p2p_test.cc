// Point-to-point on CUDA device buffers (collectives/p2p/p2p_device.cc), ranks as threads sharing one
// GPU over shm: blocking and nonblocking sends and receives of every dtype at counts 0, 1, 7,
// 1000 and a large odd one (past the eager limit), device to device, device to host and host to
// device, a receive longer than its message (only the message's bytes land), a send and a
// receive on a CUDA stream ordered with memsets and a copy on it, and the refusal where there is
// no device (the case that runs without a GPU).
#include "tests/gpu/gpu_support.h"

#include "collectives/testing/reference.h"
#include "tests/support/thread_ranks.h"

using namespace hoop;

namespace {

struct Dev {
  void* p = nullptr;
  ~Dev() { CudaFree(p, MemKind::kCuda); }
};

// Rank 0 sends `count` elements to rank 1 from `send_kind` memory, rank 1 receives into
// `recv_kind` memory of count + 5 elements and checks the bytes (no Catch assertions here: the
// ranks' threads run it).
Status Exchange(int rank, Communicator& c, DType d, size_t count, MemKind send_kind, MemKind recv_kind, bool blocking) {
  const size_t es = DTypeSize(d), bytes = count * es, room = (count + 5) * es;
  std::vector<char> data(bytes + 1);
  FillInput(d, ReduceOp::kSum, data.data(), count, count * 31 + es);
  const int tag = static_cast<int>(count % 1000) + 1;
  if (rank == 0) {
    Dev dev;
    void* buf = data.data();
    if (send_kind == MemKind::kCuda) {
      HOOP_ASSIGN_OR_RETURN(dev.p, CudaAlloc(0, bytes + 1));
      HOOP_RETURN_IF_ERROR(CopyMem(dev.p, MemKind::kCuda, data.data(), MemKind::kHost, bytes, nullptr));
      HOOP_RETURN_IF_ERROR(CudaStreamSync(nullptr));
      buf = dev.p;
    }
    Buffer b{buf, count, d, send_kind};
    return blocking ? c.SendNow(b, 1, tag) : c.Send(b, 1, tag).Wait();
  }
  std::vector<char> got(room, 0x5a);
  Dev dev;
  void* buf = got.data();
  if (recv_kind == MemKind::kCuda) {
    HOOP_ASSIGN_OR_RETURN(dev.p, CudaAlloc(0, room));
    HOOP_RETURN_IF_ERROR(CudaMemset(dev.p, 0x5a, room, nullptr));
    buf = dev.p;
  }
  Buffer b{buf, count + 5, d, recv_kind};
  RecvInfo info;
  if (blocking) {
    HOOP_RETURN_IF_ERROR(c.RecvNow(b, 0, tag, &info));
  } else {
    auto at = std::make_shared<RecvInfo>();
    HOOP_RETURN_IF_ERROR(c.Recv(b, 0, tag, at).Wait());
    info = *at;
  }
  if (recv_kind == MemKind::kCuda) {
    HOOP_RETURN_IF_ERROR(CopyMem(got.data(), MemKind::kHost, dev.p, MemKind::kCuda, room, nullptr));
    HOOP_RETURN_IF_ERROR(CudaStreamSync(nullptr));
  }
  const std::string what = std::string(DTypeName(d)) + " count " + std::to_string(count) + " from " +
                           MemKindName(send_kind) + " to " + MemKindName(recv_kind) + (blocking ? " blocking" : "");
  if (info.count != count || info.source != 0 || info.tag != tag) return Internal(what + ": wrong info");
  if (std::memcmp(got.data(), data.data(), bytes) != 0) return Internal(what + ": wrong data");
  for (size_t i = bytes; i < room; ++i)
    if (got[i] != 0x5a) return Internal(what + ": wrote past the message");
  return Status::Ok();
}

}  // namespace

TEST_CASE("gpu: sends and receives of device buffers, every dtype and size class, both ways", "[gpu][p2p]") {
  if (!test::HaveGpu()) return;
  auto ranks = test::ThreadRanks::Start(2, "shm");
  REQUIRE(ranks.ok());
  Status s = (*ranks)->Run(
      [&](int rank, Communicator& c) -> Status {
        HOOP_RETURN_IF_ERROR(CudaSetDevice(0));
        for (DType d : kAllDTypes)
          for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}, size_t{100003}})
            for (auto [from, to] :
                 {std::pair{MemKind::kCuda, MemKind::kCuda}, std::pair{MemKind::kCuda, MemKind::kHost},
                  std::pair{MemKind::kHost, MemKind::kCuda}})
              for (bool blocking : {true, false}) HOOP_RETURN_IF_ERROR(Exchange(rank, c, d, count, from, to, blocking));
        return Status::Ok();
      },
      std::chrono::seconds(300));
  INFO(s.message());
  CHECK(s.ok());
}

TEST_CASE("cuda: a send or receive of device memory where there is no device is refused, naming the reason",
          "[gpu][nodevice][p2p]") {
  auto n = CudaDeviceCount();
  if (n.ok()) return;
  auto ranks = test::ThreadRanks::Start(1, "shm");
  REQUIRE(ranks.ok());
  Communicator& c = (*ranks)->comm(0);
  std::vector<float> a(8, 1.0f);
  Buffer dev{a.data(), a.size(), DType::kF32, MemKind::kCuda};  // claims to be device memory
  const std::string why = ": the buffer is CUDA device memory, but: " + n.status().message();
  Work send = c.Send(dev, 0, 1);
  CHECK(send.Refused());
  CHECK(send.Wait().message() == "rank 0: send" + why);
  Work recv = c.Recv(dev, 0, 1);
  CHECK(recv.Refused());
  CHECK(recv.Wait().message() == "rank 0: receive" + why);
  bool refused = false;
  CHECK(c.SendNow(dev, 0, 1, &refused).message() == "rank 0: send" + why);
  CHECK(refused);
  refused = false;
  CHECK(c.RecvNow(dev, 0, 1, nullptr, &refused).message() == "rank 0: receive" + why);
  CHECK(refused);
  CHECK(a == std::vector<float>(8, 1.0f));
}

TEST_CASE("gpu: a send then a receive on a CUDA stream against a receive then a send, no host wait", "[gpu][p2p]") {
  if (!test::HaveGpu()) return;
  // Each rank: a memset on its stream writes what it sends (rank 1: after its receive, which it
  // answers), the calls go on the same stream, a copy to pinned host memory on the stream reads
  // what came; the host waits once, for the stream, at the end. The receive buffer is longer than
  // the message: its tail must keep the 0x5a it had.
  for (size_t count : {size_t{7}, size_t{1000003}}) {
    auto ranks = test::ThreadRanks::Start(2, "shm");
    REQUIRE(ranks.ok());
    Status s = (*ranks)->Run([&](int rank, Communicator& c) -> Status {
      const size_t room = count + 5;
      HOOP_ASSIGN_OR_RETURN(void* stream, CudaStreamCreate(0));
      Dev send, recv;
      HOOP_ASSIGN_OR_RETURN(send.p, CudaAlloc(0, count));
      HOOP_ASSIGN_OR_RETURN(recv.p, CudaAlloc(0, room));
      HOOP_ASSIGN_OR_RETURN(void* pinned, CudaAllocPinned(room));
      CallOptions o;
      o.stream = stream;
      Status result = Status::Ok();
      auto run = [&]() -> Status {
        HOOP_RETURN_IF_ERROR(CudaMemset(recv.p, 0x5a, room, stream));
        Buffer sb{send.p, count, DType::kU8, MemKind::kCuda}, rb{recv.p, room, DType::kU8, MemKind::kCuda};
        std::vector<Work> calls;
        if (rank == 0) {
          HOOP_RETURN_IF_ERROR(CudaMemset(send.p, 0x11, count, stream));
          calls.push_back(c.Send(sb, 1, 4, o));
          calls.push_back(c.Recv(rb, 1, 5, nullptr, o));
        } else {
          calls.push_back(c.Recv(rb, 0, 4, nullptr, o));
          HOOP_RETURN_IF_ERROR(CudaMemset(send.p, 0x22, count, stream));
          calls.push_back(c.Send(sb, 0, 5, o));
        }
        HOOP_RETURN_IF_ERROR(CopyMem(pinned, MemKind::kCudaPinned, recv.p, MemKind::kCuda, room, stream));
        HOOP_RETURN_IF_ERROR(CudaStreamSync(stream));
        for (Work& w : calls) HOOP_RETURN_IF_ERROR(w.Wait());
        const auto* got = static_cast<const unsigned char*>(pinned);
        const unsigned char want = rank == 0 ? 0x22 : 0x11;
        for (size_t i = 0; i < room; ++i)
          if (got[i] != (i < count ? want : 0x5a))
            return Internal("rank " + std::to_string(rank) + ": byte " + std::to_string(i) + " of " +
                            std::to_string(room) + " is " + std::to_string(got[i]));
        return Status::Ok();
      };
      result = run();
      CudaFree(pinned, MemKind::kCudaPinned);
      CudaStreamDestroy(stream);
      return result;
    });
    INFO("count " << count << ": " << s.message());
    CHECK(s.ok());
  }
}
