// The C API's calls on a CUDA stream (hoop_allreduce_stream ...; include/hoop/hoop.h): the
// blocking form's checks, then the call is queued with the stream (CallOptions::stream,
// stream_order.h) and the function returns. Only a refusal is reported here; what happens later
// shows on the stream and, for a failure, in the communicator's next call.
#include "collectives/api/c_api_internal.h"

using hoop::capi::Guard;
using hoop::capi::Mode;
using hoop::capi::Report;

namespace {

template <class PostFn>
hoop_status_t OnStream(const char* fn, PostFn&& post) {
  return Guard([&] {
    hoop::Work w;
    if (hoop_status_t bad = post(&w)) return bad;
    if (w.Refused()) return Report(w.Wait().WithContext(fn));
    return HOOP_SUCCESS;
  });
}

}  // namespace

extern "C" {

hoop_status_t hoop_allreduce_stream(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                                    hoop_dtype_t dtype, hoop_op_t op, void* cuda_stream) {
  return OnStream("hoop_allreduce_stream", [&](hoop::Work* w) {
    return hoop::capi::PostAllreduce(comm, "hoop_allreduce_stream", sendbuf, recvbuf, count, dtype, op, nullptr,
                                     Mode::OnStream(cuda_stream), w);
  });
}

hoop_status_t hoop_broadcast_stream(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                                    hoop_dtype_t dtype, int root, void* cuda_stream) {
  return OnStream("hoop_broadcast_stream", [&](hoop::Work* w) {
    return hoop::capi::PostBroadcast(comm, "hoop_broadcast_stream", sendbuf, recvbuf, count, dtype, root,
                                     Mode::OnStream(cuda_stream), w);
  });
}

hoop_status_t hoop_allgather_stream(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t sendcount,
                                    hoop_dtype_t dtype, void* cuda_stream) {
  return OnStream("hoop_allgather_stream", [&](hoop::Work* w) {
    return hoop::capi::PostAllgather(comm, "hoop_allgather_stream", sendbuf, recvbuf, sendcount, dtype,
                                     Mode::OnStream(cuda_stream), w);
  });
}

hoop_status_t hoop_reduce_scatter_stream(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t recvcount,
                                         hoop_dtype_t dtype, hoop_op_t op, void* cuda_stream) {
  return OnStream("hoop_reduce_scatter_stream", [&](hoop::Work* w) {
    return hoop::capi::PostReduceScatter(comm, "hoop_reduce_scatter_stream", sendbuf, recvbuf, recvcount, dtype, op,
                                         Mode::OnStream(cuda_stream), w);
  });
}

hoop_status_t hoop_barrier_stream(hoop_comm_t comm, void* cuda_stream) {
  return OnStream("hoop_barrier_stream", [&](hoop::Work* w) {
    return hoop::capi::PostBarrier(comm, "hoop_barrier_stream", Mode::OnStream(cuda_stream), w);
  });
}

hoop_status_t hoop_reduce_stream(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count, hoop_dtype_t dtype,
                                 hoop_op_t op, int root, void* cuda_stream) {
  return OnStream("hoop_reduce_stream", [&](hoop::Work* w) {
    return hoop::capi::PostReduce(comm, "hoop_reduce_stream", sendbuf, recvbuf, count, dtype, op, root,
                                  Mode::OnStream(cuda_stream), w);
  });
}

hoop_status_t hoop_gather_stream(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t sendcount,
                                 hoop_dtype_t dtype, int root, void* cuda_stream) {
  return OnStream("hoop_gather_stream", [&](hoop::Work* w) {
    return hoop::capi::PostGather(comm, "hoop_gather_stream", sendbuf, recvbuf, sendcount, dtype, root,
                                  Mode::OnStream(cuda_stream), w);
  });
}

hoop_status_t hoop_scatter_stream(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t recvcount,
                                  hoop_dtype_t dtype, int root, void* cuda_stream) {
  return OnStream("hoop_scatter_stream", [&](hoop::Work* w) {
    return hoop::capi::PostScatter(comm, "hoop_scatter_stream", sendbuf, recvbuf, recvcount, dtype, root,
                                   Mode::OnStream(cuda_stream), w);
  });
}

hoop_status_t hoop_alltoall_stream(hoop_comm_t comm, const void* sendbuf, void* recvbuf, size_t count_per_rank,
                                   hoop_dtype_t dtype, void* cuda_stream) {
  return OnStream("hoop_alltoall_stream", [&](hoop::Work* w) {
    return hoop::capi::PostAlltoall(comm, "hoop_alltoall_stream", sendbuf, recvbuf, count_per_rank, dtype,
                                    Mode::OnStream(cuda_stream), w);
  });
}

hoop_status_t hoop_allgatherv_stream(hoop_comm_t comm, const void* sendbuf, size_t sendcount, void* recvbuf,
                                     const size_t* recvcounts, const size_t* displs, hoop_dtype_t dtype,
                                     void* cuda_stream) {
  return OnStream("hoop_allgatherv_stream", [&](hoop::Work* w) {
    return hoop::capi::PostAllgatherv(comm, "hoop_allgatherv_stream", sendbuf, sendcount, recvbuf, recvcounts, displs,
                                      dtype, Mode::OnStream(cuda_stream), w);
  });
}

hoop_status_t hoop_reduce_scatterv_stream(hoop_comm_t comm, const void* sendbuf, void* recvbuf,
                                          const size_t* recvcounts, hoop_dtype_t dtype, hoop_op_t op,
                                          void* cuda_stream) {
  return OnStream("hoop_reduce_scatterv_stream", [&](hoop::Work* w) {
    return hoop::capi::PostReduceScatterv(comm, "hoop_reduce_scatterv_stream", sendbuf, recvbuf, recvcounts, dtype, op,
                                          Mode::OnStream(cuda_stream), w);
  });
}

hoop_status_t hoop_alltoallv_stream(hoop_comm_t comm, const void* sendbuf, const size_t* sendcounts,
                                    const size_t* sdispls, void* recvbuf, const size_t* recvcounts,
                                    const size_t* rdispls, hoop_dtype_t dtype, void* cuda_stream) {
  return OnStream("hoop_alltoallv_stream", [&](hoop::Work* w) {
    return hoop::capi::PostAlltoallv(comm, "hoop_alltoallv_stream", sendbuf, sendcounts, sdispls, recvbuf, recvcounts,
                                     rdispls, dtype, Mode::OnStream(cuda_stream), w);
  });
}

hoop_status_t hoop_send_stream(hoop_comm_t comm, const void* buf, size_t count, hoop_dtype_t dtype, int peer, int tag,
                               void* cuda_stream) {
  return OnStream("hoop_send_stream", [&](hoop::Work* w) {
    return hoop::capi::PostSend(comm, "hoop_send_stream", buf, count, dtype, peer, tag, Mode::OnStream(cuda_stream), w);
  });
}

hoop_status_t hoop_recv_stream(hoop_comm_t comm, void* buf, size_t count, hoop_dtype_t dtype, int peer, int tag,
                               void* cuda_stream) {
  return OnStream("hoop_recv_stream", [&](hoop::Work* w) {
    return hoop::capi::PostRecv(comm, "hoop_recv_stream", buf, count, dtype, peer, tag, nullptr,
                                Mode::OnStream(cuda_stream), w);
  });
}

}  // extern "C"
