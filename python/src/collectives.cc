// Comm's collective and point-to-point methods: each reads its buffers (buffers.h), checks
// that their sizes and dtypes fit the call (so the error names the argument, in Python's terms),
// and makes the blocking or nonblocking C API call (Call, comm.h). Counts are in elements of
// the buffers' dtype; outputs are the caller's (the Python layer, hoop/__init__.py, allocates
// them).
#include <pybind11/stl.h>

#include <numeric>
#include <optional>

#include "python/src/comm.h"

namespace hoop::py {

namespace pyb = pybind11;
using CommRef = std::shared_ptr<Comm>;

namespace {

View In(const Comm& c, const char* call, const pyb::object& o, int dtype, const char* name) {
  return View::Of(o, false, dtype, c.Where(call) + ": " + name);
}
View Out(const Comm& c, const char* call, const pyb::object& o, int dtype, const char* name) {
  return View::Of(o, true, dtype, c.Where(call) + ": " + name);
}

void SameDtype(const Comm& c, const char* call, const View& a, const View& b) {
  if (a.dtype != b.dtype)
    Invalid(c.Where(call) + ": sendbuf holds " + DtypeName(a.dtype) + " and recvbuf " + DtypeName(b.dtype) +
            "; they must agree");
}

void Counts(const Comm& c, const char* call, const char* name, size_t have, size_t need, const std::string& why) {
  if (have != need)
    Invalid(c.Where(call) + ": " + name + " holds " + std::to_string(have) + " elements; it needs " +
            std::to_string(need) + " (" + why + ")");
}

// Whether this rank is `root` (checked as a rank of the communicator by hoop itself).
bool IsRoot(const Comm& c, int root) { return c.Rank() == root; }

// The buffer only the root uses (reduce's and gather's recvbuf, scatter's sendbuf): read and
// checked against `other` there (`need` elements), absent on the other ranks.
std::optional<View> AtRoot(const Comm& c, const char* call, int root, const pyb::object& o, bool writable, int dtype,
                           const char* name, const View& other, size_t need, const std::string& why) {
  if (!IsRoot(c, root)) return std::nullopt;
  if (o.is_none()) Invalid(c.Where(call) + ": the root needs " + name);
  View v = View::Of(o, writable, dtype, c.Where(call) + ": " + name);
  if (v.dtype != other.dtype)
    Invalid(c.Where(call) + ": " + name + " holds " + DtypeName(v.dtype) + " and the other buffer " +
            DtypeName(other.dtype) + "; they must agree");
  Counts(c, call, name, v.count, need, why);
  return v;
}

void* Data(const std::optional<View>& v) { return v ? v->data : nullptr; }

std::vector<size_t> Displacements(const std::vector<size_t>& counts) {
  std::vector<size_t> d(counts.size(), 0);
  if (!counts.empty()) std::exclusive_scan(counts.begin(), counts.end(), d.begin(), size_t{0});
  return d;
}

void PerRank(const Comm& c, const char* call, const char* name, const std::vector<size_t>& v) {
  if (static_cast<int>(v.size()) != c.Size())
    Invalid(c.Where(call) + ": " + name + " has " + std::to_string(v.size()) + " entries; it needs one per rank (" +
            std::to_string(c.Size()) + ")");
}

template <class... V>
std::vector<View> Keep(V&&... views) {  // (an initializer list would copy them)
  std::vector<View> out;
  (out.push_back(std::move(views)), ...);
  return out;
}

size_t Sum(const std::vector<size_t>& v) { return std::accumulate(v.begin(), v.end(), size_t{0}); }

}  // namespace

void RegisterCollectives(pyb::class_<Comm, CommRef>& comm) {
  const auto nb = pyb::arg("nonblocking") = false;
  const auto dt = pyb::arg("dtype") = -1;

  comm.def(
      "allreduce",
      [](const CommRef& c, pyb::object send, pyb::object recv, int op, int compression, int dtype, bool nonblocking) {
        const char* call = "allreduce";
        View s = In(*c, call, send, dtype, "sendbuf"), r = Out(*c, call, recv, dtype, "recvbuf");
        SameDtype(*c, call, s, r);
        Counts(*c, call, "recvbuf", r.count, s.count, "as many as sendbuf");
        hoop_comm_t h = c->get();
        const void* sp = s.data;
        void* rp = r.data;
        size_t n = s.count;
        hoop_dtype_t d = s.dtype;
        hoop_allreduce_opts_t opts{static_cast<hoop_compression_t>(compression), nullptr};
        return Call(c, call, nonblocking, Keep(std::move(s), std::move(r)), recv, [=](Request* q) {
          return q ? hoop_iallreduce_ex(h, sp, rp, n, d, static_cast<hoop_op_t>(op), &opts, q->handle())
                   : hoop_allreduce_ex(h, sp, rp, n, d, static_cast<hoop_op_t>(op), &opts);
        });
      },
      pyb::arg("sendbuf"), pyb::arg("recvbuf"), pyb::arg("op") = 0, pyb::arg("compression") = -1, dt, nb);

  comm.def(
      "broadcast",
      [](const CommRef& c, pyb::object buf, int root, int dtype, bool nonblocking) {
        const char* call = "broadcast";
        View b = Out(*c, call, buf, dtype, "buf");
        hoop_comm_t h = c->get();
        void* p = b.data;
        size_t n = b.count;
        hoop_dtype_t d = b.dtype;
        return Call(c, call, nonblocking, Keep(std::move(b)), buf, [=](Request* q) {
          return q ? hoop_ibroadcast(h, p, p, n, d, root, q->handle()) : hoop_broadcast(h, p, p, n, d, root);
        });
      },
      pyb::arg("buf"), pyb::arg("root") = 0, dt, nb);

  comm.def(
      "allgather",
      [](const CommRef& c, pyb::object send, pyb::object recv, int dtype, bool nonblocking) {
        const char* call = "allgather";
        View s = In(*c, call, send, dtype, "sendbuf"), r = Out(*c, call, recv, dtype, "recvbuf");
        SameDtype(*c, call, s, r);
        Counts(*c, call, "recvbuf", r.count, s.count * static_cast<size_t>(c->Size()), "ranks x sendbuf's");
        hoop_comm_t h = c->get();
        const void* sp = s.data;
        void* rp = r.data;
        size_t n = s.count;
        hoop_dtype_t d = s.dtype;
        return Call(c, call, nonblocking, Keep(std::move(s), std::move(r)), recv, [=](Request* q) {
          return q ? hoop_iallgather(h, sp, rp, n, d, q->handle()) : hoop_allgather(h, sp, rp, n, d);
        });
      },
      pyb::arg("sendbuf"), pyb::arg("recvbuf"), dt, nb);

  comm.def(
      "reduce_scatter",
      [](const CommRef& c, pyb::object send, pyb::object recv, int op, int dtype, bool nonblocking) {
        const char* call = "reduce_scatter";
        View s = In(*c, call, send, dtype, "sendbuf"), r = Out(*c, call, recv, dtype, "recvbuf");
        SameDtype(*c, call, s, r);
        Counts(*c, call, "sendbuf", s.count, r.count * static_cast<size_t>(c->Size()), "ranks x recvbuf's");
        hoop_comm_t h = c->get();
        const void* sp = s.data;
        void* rp = r.data;
        size_t n = r.count;
        hoop_dtype_t d = s.dtype;
        return Call(c, call, nonblocking, Keep(std::move(s), std::move(r)), recv, [=](Request* q) {
          auto o = static_cast<hoop_op_t>(op);
          return q ? hoop_ireduce_scatter(h, sp, rp, n, d, o, q->handle()) : hoop_reduce_scatter(h, sp, rp, n, d, o);
        });
      },
      pyb::arg("sendbuf"), pyb::arg("recvbuf"), pyb::arg("op") = 0, dt, nb);

  comm.def(
      "reduce",
      [](const CommRef& c, pyb::object send, pyb::object recv, int op, int root, int dtype, bool nonblocking) {
        const char* call = "reduce";
        View s = In(*c, call, send, dtype, "sendbuf");
        auto r = AtRoot(*c, call, root, recv, true, dtype, "recvbuf", s, s.count, "as many as sendbuf");
        hoop_comm_t h = c->get();
        const void* sp = s.data;
        void* rp = Data(r);
        size_t n = s.count;
        hoop_dtype_t d = s.dtype;
        auto keep = Keep(std::move(s));
        if (r) keep.push_back(std::move(*r));
        return Call(c, call, nonblocking, std::move(keep), recv, [=](Request* q) {
          auto o = static_cast<hoop_op_t>(op);
          return q ? hoop_ireduce(h, sp, rp, n, d, o, root, q->handle()) : hoop_reduce(h, sp, rp, n, d, o, root);
        });
      },
      pyb::arg("sendbuf"), pyb::arg("recvbuf"), pyb::arg("op") = 0, pyb::arg("root") = 0, dt, nb);

  comm.def(
      "gather",
      [](const CommRef& c, pyb::object send, pyb::object recv, int root, int dtype, bool nonblocking) {
        const char* call = "gather";
        View s = In(*c, call, send, dtype, "sendbuf");
        auto r = AtRoot(*c, call, root, recv, true, dtype, "recvbuf", s, s.count * static_cast<size_t>(c->Size()),
                        "ranks x sendbuf's");
        hoop_comm_t h = c->get();
        const void* sp = s.data;
        void* rp = Data(r);
        size_t n = s.count;
        hoop_dtype_t d = s.dtype;
        auto keep = Keep(std::move(s));
        if (r) keep.push_back(std::move(*r));
        return Call(c, call, nonblocking, std::move(keep), recv, [=](Request* q) {
          return q ? hoop_igather(h, sp, rp, n, d, root, q->handle()) : hoop_gather(h, sp, rp, n, d, root);
        });
      },
      pyb::arg("sendbuf"), pyb::arg("recvbuf"), pyb::arg("root") = 0, dt, nb);

  comm.def(
      "scatter",
      [](const CommRef& c, pyb::object send, pyb::object recv, int root, int dtype, bool nonblocking) {
        const char* call = "scatter";
        View r = Out(*c, call, recv, dtype, "recvbuf");
        auto s = AtRoot(*c, call, root, send, false, dtype, "sendbuf", r, r.count * static_cast<size_t>(c->Size()),
                        "ranks x recvbuf's");
        hoop_comm_t h = c->get();
        const void* sp = Data(s);
        void* rp = r.data;
        size_t n = r.count;
        hoop_dtype_t d = r.dtype;
        auto keep = Keep(std::move(r));
        if (s) keep.push_back(std::move(*s));
        return Call(c, call, nonblocking, std::move(keep), recv, [=](Request* q) {
          return q ? hoop_iscatter(h, sp, rp, n, d, root, q->handle()) : hoop_scatter(h, sp, rp, n, d, root);
        });
      },
      pyb::arg("sendbuf"), pyb::arg("recvbuf"), pyb::arg("root") = 0, dt, nb);

  comm.def(
      "alltoall",
      [](const CommRef& c, pyb::object send, pyb::object recv, int dtype, bool nonblocking) {
        const char* call = "alltoall";
        View s = In(*c, call, send, dtype, "sendbuf"), r = Out(*c, call, recv, dtype, "recvbuf");
        SameDtype(*c, call, s, r);
        Counts(*c, call, "recvbuf", r.count, s.count, "as many as sendbuf");
        const size_t ranks = static_cast<size_t>(c->Size());
        if (s.count % ranks != 0)
          Invalid(c->Where(call) + ": sendbuf's " + std::to_string(s.count) + " elements do not split into " +
                  std::to_string(ranks) + " equal blocks");
        hoop_comm_t h = c->get();
        const void* sp = s.data;
        void* rp = r.data;
        size_t n = s.count / ranks;
        hoop_dtype_t d = s.dtype;
        return Call(c, call, nonblocking, Keep(std::move(s), std::move(r)), recv, [=](Request* q) {
          return q ? hoop_ialltoall(h, sp, rp, n, d, q->handle()) : hoop_alltoall(h, sp, rp, n, d);
        });
      },
      pyb::arg("sendbuf"), pyb::arg("recvbuf"), dt, nb);

  comm.def(
      "allgatherv",
      [](const CommRef& c, pyb::object send, pyb::object recv, std::vector<size_t> counts, int dtype,
         bool nonblocking) {
        const char* call = "allgatherv";
        View s = In(*c, call, send, dtype, "sendbuf"), r = Out(*c, call, recv, dtype, "recvbuf");
        SameDtype(*c, call, s, r);
        PerRank(*c, call, "recvcounts", counts);
        Counts(*c, call, "sendbuf", s.count, counts[static_cast<size_t>(c->Rank())], "recvcounts[rank]");
        Counts(*c, call, "recvbuf", r.count, Sum(counts), "the sum of recvcounts");
        hoop_comm_t h = c->get();
        const void* sp = s.data;
        void* rp = r.data;
        size_t n = s.count;
        hoop_dtype_t d = s.dtype;
        auto displs = Displacements(counts);
        return Call(c, call, nonblocking, Keep(std::move(s), std::move(r)), recv, [=](Request* q) {
          return q ? hoop_iallgatherv(h, sp, n, rp, counts.data(), displs.data(), d, q->handle())
                   : hoop_allgatherv(h, sp, n, rp, counts.data(), displs.data(), d);
        });
      },
      pyb::arg("sendbuf"), pyb::arg("recvbuf"), pyb::arg("recvcounts"), dt, nb);

  comm.def(
      "reduce_scatterv",
      [](const CommRef& c, pyb::object send, pyb::object recv, std::vector<size_t> counts, int op, int dtype,
         bool nonblocking) {
        const char* call = "reduce_scatterv";
        View s = In(*c, call, send, dtype, "sendbuf"), r = Out(*c, call, recv, dtype, "recvbuf");
        SameDtype(*c, call, s, r);
        PerRank(*c, call, "recvcounts", counts);
        Counts(*c, call, "sendbuf", s.count, Sum(counts), "the sum of recvcounts");
        Counts(*c, call, "recvbuf", r.count, counts[static_cast<size_t>(c->Rank())], "recvcounts[rank]");
        hoop_comm_t h = c->get();
        const void* sp = s.data;
        void* rp = r.data;
        hoop_dtype_t d = s.dtype;
        return Call(c, call, nonblocking, Keep(std::move(s), std::move(r)), recv, [=](Request* q) {
          auto o = static_cast<hoop_op_t>(op);
          return q ? hoop_ireduce_scatterv(h, sp, rp, counts.data(), d, o, q->handle())
                   : hoop_reduce_scatterv(h, sp, rp, counts.data(), d, o);
        });
      },
      pyb::arg("sendbuf"), pyb::arg("recvbuf"), pyb::arg("recvcounts"), pyb::arg("op") = 0, dt, nb);

  comm.def(
      "alltoallv",
      [](const CommRef& c, pyb::object send, std::vector<size_t> scounts, pyb::object recv, std::vector<size_t> rcounts,
         int dtype, bool nonblocking) {
        const char* call = "alltoallv";
        View s = In(*c, call, send, dtype, "sendbuf"), r = Out(*c, call, recv, dtype, "recvbuf");
        SameDtype(*c, call, s, r);
        PerRank(*c, call, "sendcounts", scounts);
        PerRank(*c, call, "recvcounts", rcounts);
        Counts(*c, call, "sendbuf", s.count, Sum(scounts), "the sum of sendcounts");
        Counts(*c, call, "recvbuf", r.count, Sum(rcounts), "the sum of recvcounts");
        hoop_comm_t h = c->get();
        const void* sp = s.data;
        void* rp = r.data;
        hoop_dtype_t d = s.dtype;
        auto sd = Displacements(scounts), rd = Displacements(rcounts);
        return Call(c, call, nonblocking, Keep(std::move(s), std::move(r)), recv, [=](Request* q) {
          return q ? hoop_ialltoallv(h, sp, scounts.data(), sd.data(), rp, rcounts.data(), rd.data(), d, q->handle())
                   : hoop_alltoallv(h, sp, scounts.data(), sd.data(), rp, rcounts.data(), rd.data(), d);
        });
      },
      pyb::arg("sendbuf"), pyb::arg("sendcounts"), pyb::arg("recvbuf"), pyb::arg("recvcounts"), dt, nb);

  comm.def(
      "barrier",
      [](const CommRef& c, bool nonblocking) {
        hoop_comm_t h = c->get();
        return Call(c, "barrier", nonblocking, {}, pyb::none(),
                    [=](Request* q) { return q ? hoop_ibarrier(h, q->handle()) : hoop_barrier(h); });
      },
      nb);

  comm.def(
      "send",
      [](const CommRef& c, pyb::object buf, int peer, int tag, int dtype, bool nonblocking) {
        View b = In(*c, "send", buf, dtype, "buf");
        hoop_comm_t h = c->get();
        const void* p = b.data;
        size_t n = b.count;
        hoop_dtype_t d = b.dtype;
        return Call(c, "send", nonblocking, Keep(std::move(b)), pyb::none(), [=](Request* q) {
          return q ? hoop_isend(h, p, n, d, peer, tag, q->handle()) : hoop_send(h, p, n, d, peer, tag);
        });
      },
      pyb::arg("buf"), pyb::arg("peer"), pyb::arg("tag") = 0, dt, nb);

  comm.def(
      "recv",
      [](const CommRef& c, pyb::object buf, int peer, int tag, int dtype, bool nonblocking) -> pyb::object {
        View b = Out(*c, "recv", buf, dtype, "buf");
        hoop_comm_t h = c->get();
        void* p = b.data;
        size_t n = b.count;
        hoop_dtype_t d = b.dtype;
        if (nonblocking)
          return Call(c, "recv", true, Keep(std::move(b)), buf,
                      [=](Request* q) { return hoop_irecv(h, p, n, d, peer, tag, q->recv_info(), q->handle()); });
        hoop_recv_info_t info{};
        Call(c, "recv", false, {}, pyb::none(), [&](Request*) { return hoop_recv(h, p, n, d, peer, tag, &info); });
        return pyb::make_tuple(buf, pyb::make_tuple(info.source, info.tag, info.count));
      },
      pyb::arg("buf"), pyb::arg("peer"), pyb::arg("tag") = 0, dt, nb);
}

}  // namespace hoop::py
