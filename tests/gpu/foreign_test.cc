// A device pointer from another process, passed as if it were this process's memory (the C API
// takes what cudaPointerGetAttributes does not know for host memory): refused with a message
// naming rank, call and cause, not crashed on. The other process is this test binary run again
// for a hidden helper case that allocates device memory and prints its address. Also an address
// CUDA only reserved in this process, in a collective and in sends and receives.
#include "tests/gpu/gpu_support.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>

#include "tests/support/thread_ranks.h"

using namespace hoop;

namespace {

// Allreduce of `count` floats at `p`, its kind found from the pointer as the C API does.
Status AllreduceAt(void* p, size_t count) {
  auto ranks = test::ThreadRanks::Start(1, "shm");
  if (!ranks.ok()) return ranks.status();
  const Buffer b{p, count, DType::kF32, QueryMemory(p).kind};
  return (*ranks)->comm(0).Allreduce(b, b, ReduceOp::kSum).Wait();
}

}  // namespace

TEST_CASE("gpu helper: print a device pointer of this process", "[.][gpu-helper]") {
  if (!test::HaveGpu()) return;
  auto p = CudaAlloc(0, 1 << 20);
  REQUIRE(p.ok());
  std::printf("device pointer %p\n", *p);
  std::fflush(stdout);
  CudaFree(*p, MemKind::kCuda);
}

TEST_CASE("gpu: device pointers from another process are refused, naming the cause", "[gpu]") {
  if (!test::HaveGpu()) return;
  // Another process's device memory.
  char self[4096] = {0};
  REQUIRE(readlink("/proc/self/exe", self, sizeof self - 1) > 0);
  FILE* child = popen((std::string("'") + self + "' '[gpu-helper]' 2>&1").c_str(), "r");
  REQUIRE(child != nullptr);
  void* foreign = nullptr;
  char line[512];
  std::string said;
  while (std::fgets(line, sizeof line, child)) {
    said += line;
    std::sscanf(line, "device pointer %p", &foreign);
  }
  pclose(child);
  INFO("the helper said: " << said);
  REQUIRE(foreign != nullptr);
  if (QueryMemory(foreign).kind == MemKind::kCuda) {
    WARN("the other process's address is device memory of this process too: nothing to refuse");
  } else {
    Status s = AllreduceAt(foreign, 1000);
    INFO(s.ToString());
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK_THAT(s.message(), Catch::StartsWith("rank 0: allreduce: input at ") &&
                                Catch::Contains("a CUDA device pointer from another process"));
  }
  // Addresses reserved but not mapped readable, as CUDA reserves its range.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* reserved = mmap(nullptr, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  REQUIRE(reserved != MAP_FAILED);
  Status s = AllreduceAt(reserved, 16);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("is not memory this process can read"));
  // A send and a receive too, the blocking ones (their fast path) and the queued ones.
  auto ranks = test::ThreadRanks::Start(1, "shm");
  REQUIRE(ranks.ok());
  Communicator& c = (*ranks)->comm(0);
  const Buffer b{reserved, 16, DType::kF32, MemKind::kHost};
  for (const Status& p2p : {c.SendNow(b, 0, 1), c.Send(b, 0, 1).Wait(), c.RecvNow(b, 0, 1), c.Recv(b, 0, 1).Wait()}) {
    INFO(p2p.ToString());
    CHECK(p2p.code() == Code::kInvalidArgument);
    CHECK_THAT(p2p.message(), Catch::Contains("buffer at ") && Catch::Contains("is not memory this process can read"));
  }
  munmap(reserved, page);
}
