// ReadableHere (common/device.h): what a collective checks host buffers with where CUDA devices
// are, so that a device pointer from another process is refused instead of crashed on.
#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <vector>

#include "common/host_memory.h"

using namespace hoop;

TEST_CASE("ReadableHere: mapped memory is, reserved and unmapped addresses are not", "[device]") {
  std::vector<char> heap(1000);
  CHECK(ReadableHere(heap.data(), heap.size()));
  int local = 0;
  CHECK(ReadableHere(&local, sizeof local));
  CHECK(ReadableHere(nullptr, 0));
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  // Reserved (PROT_NONE), as CUDA reserves its address range in every process.
  void* reserved = mmap(nullptr, 4 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  REQUIRE(reserved != MAP_FAILED);
  CHECK_FALSE(ReadableHere(reserved, page));
  // Unmapped: a readable page, then the range freed.
  void* gone = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(gone != MAP_FAILED);
  CHECK(ReadableHere(gone, 2 * page));
  REQUIRE(munmap(static_cast<char*>(gone) + page, page) == 0);
  CHECK(ReadableHere(gone, page));
  CHECK_FALSE(ReadableHere(gone, 2 * page));  // its last byte is gone
  REQUIRE(munmap(gone, page) == 0);
  CHECK_FALSE(ReadableHere(gone, 1));
  // The cache answers a range it found readable without asking again, and never caches a no.
  ReadableCache cache;
  CHECK(cache.Readable(heap.data(), heap.size()));
  CHECK(cache.Readable(heap.data(), 10));
  CHECK_FALSE(cache.Readable(reserved, page));
  CHECK_FALSE(cache.Readable(reserved, page));
  REQUIRE(munmap(reserved, 4 * page) == 0);
}
