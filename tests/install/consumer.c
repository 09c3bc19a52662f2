/* Built against an installed hoop (CMake or pkg-config) by the install test: every rank adds
 * rank + 1 with an allreduce and checks the sum, then says which library version it loaded. */
#include <hoop/hoop.h>
#include <stdio.h>

int main(void) {
  hoop_comm_t comm;
  if (hoop_init_from_env(&comm) != HOOP_SUCCESS) {
    fprintf(stderr, "consumer-c: init: %s\n", hoop_last_error());
    return 1;
  }
  int rank = 0, size = 0, version = 0;
  hoop_rank(comm, &rank);
  hoop_size(comm, &size);
  hoop_get_version(&version);
  long long mine[3] = {rank + 1, rank + 1, rank + 1}, sum[3];
  if (hoop_allreduce(comm, mine, sum, 3, HOOP_I64, HOOP_SUM) != HOOP_SUCCESS) {
    fprintf(stderr, "consumer-c: allreduce: %s\n", hoop_last_error());
    return 1;
  }
  long long want = (long long)size * (size + 1) / 2;
  int ok = sum[0] == want && sum[2] == want &&
           version == HOOP_VERSION_CODE(HOOP_VERSION_MAJOR, HOOP_VERSION_MINOR, HOOP_VERSION_PATCH);
  printf("consumer-c rank %d of %d: sum %lld (want %lld), version %d: %s\n", rank, size, sum[0], want, version,
         ok ? "ok" : "WRONG");
  hoop_finalize(comm);
  return ok ? 0 : 1;
}
