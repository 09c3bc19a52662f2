#include "trainer/ps_server.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace hoop::train {

std::vector<std::vector<int>> ShardParams(const std::vector<Param*>& params, int servers) {
  std::vector<int> order(params.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return params[a]->value.size() > params[b]->value.size(); });
  std::vector<size_t> load(servers, 0);
  std::vector<std::vector<int>> shards(servers);
  for (int i : order) {
    const int s = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    load[s] += params[i]->value.size();
    shards[s].push_back(i);
  }
  for (auto& s : shards) std::sort(s.begin(), s.end());
  return shards;
}

PsServer::PsServer(std::vector<Param*> shard, const Settings& settings, PsLinks& links, int rank)
    : shard_(std::move(shard)),
      sgd_(shard_, settings.momentum, settings.weight_decay),
      set_(settings),
      links_(links),
      rank_(rank) {
  for (const Param* p : shard_) floats_ += p->value.size();
  const size_t workers = links_.peers.size();
  state_.assign(workers, State::kActive);
  clock_.assign(workers, 0);
  pulled_version_.assign(workers, 0);
  reported_.assign(workers, 0);
}

PsServer::~PsServer() { Join(); }

void PsServer::LoadMomentum(const std::vector<const Tensor*>& momentum) {
  auto mine = sgd_.State();
  for (size_t i = 0; i < mine.size() && i < momentum.size(); ++i) mine[i].second->data = momentum[i]->data;
}

void PsServer::Start() {
  for (size_t w = 0; w < links_.peers.size(); ++w) threads_.emplace_back([this, w] { Serve(static_cast<int>(w)); });
}

void PsServer::Join() {
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

void PsServer::Serve(int w) {
  Communicator& link = *links_.peers[w];
  std::vector<int64_t> h(4);
  std::vector<float> grad(floats_), reply(floats_), buffers(set_.buffer_floats);
  std::vector<double> sums(set_.report_doubles);
  auto buf = [](void* p, size_t n, DType t) { return Buffer{p, n, t, MemKind::kHost}; };
  for (;;) {
    Status st = link.RecvNow(buf(h.data(), h.size(), DType::kI64), 1, kPsHeaderTag);
    if (st.ok() && h[0] == kPsPull) {
      {
        // Stale-synchronous: step t waits until every live worker has pushed t - S steps.
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] {
          if (set_.staleness < 0) return true;
          for (size_t j = 0; j < state_.size(); ++j)
            if (state_[j] == State::kActive && clock_[j] < h[1] - set_.staleness) return false;
          return true;
        });
        size_t at = 0;
        for (const Param* p : shard_) {
          std::copy(p->value.data.begin(), p->value.data.end(), reply.begin() + at);
          at += p->value.size();
        }
        pulled_version_[w] = version_;
      }
      st = link.SendNow(buf(reply.data(), reply.size(), DType::kF32), 1, kPsReplyTag);
    } else if (st.ok() && h[0] == kPsPush) {
      st = link.RecvNow(buf(grad.data(), grad.size(), DType::kF32), 1, kPsPayloadTag);
      if (st.ok()) Apply(w, h[2], h[1], h[3], grad);
    } else if (st.ok() && h[0] == kPsNext) {
      int64_t batch = -1;
      {
        std::lock_guard<std::mutex> lock(mu_);
        int64_t& dealt = dealt_[h[1]];
        if (dealt < set_.batches) batch = dealt++;
      }
      st = link.SendNow(buf(&batch, 1, DType::kI64), 1, kPsReplyTag);
    } else if (st.ok() && h[0] == kPsEpoch) {
      st = link.RecvNow(buf(sums.data(), sums.size(), DType::kF64), 1, kPsPayloadTag);
      if (st.ok() && !buffers.empty())
        st = link.RecvNow(buf(buffers.data(), buffers.size(), DType::kF32), 1, kPsPayloadTag);
      if (st.ok()) {
        std::lock_guard<std::mutex> lock(mu_);
        Report& r = reports_[static_cast<int>(h[1])];
        r.sums.resize(sums.size(), 0.0);
        r.buffers.resize(buffers.size(), 0.0);
        r.images.resize(state_.size(), 0);
        r.images[w] = h[2];
        for (size_t i = 0; i < sums.size(); ++i) r.sums[i] += sums[i];
        for (size_t i = 0; i < buffers.size(); ++i) r.buffers[i] += buffers[i];
        ++r.count;
        reported_[w] = static_cast<int>(h[1]) + 1;
        cv_.notify_all();
      }
    } else if (st.ok() && h[0] == kPsDone) {
      std::lock_guard<std::mutex> lock(mu_);
      if (h[1] > 0 && !signal_) signal_ = static_cast<int>(h[1]);
      Retire(w, State::kDone, "");
      return;
    } else if (st.ok()) {
      st = Internal("unknown message kind " + std::to_string(h[0]));
    }
    if (!st.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      Retire(w, State::kGone, st.message());
      return;
    }
  }
}

void PsServer::Step(const float* grad, double images, double lr) {
  const float scale = static_cast<float>(1.0 / images);
  size_t at = 0;
  for (Param* p : shard_) {
    for (size_t i = 0; i < p->grad.size(); ++i) p->grad.ptr()[i] = grad[at + i] * scale;
    at += p->grad.size();
  }
  sgd_.Step(lr);
  ++version_;
}

void PsServer::Apply(int w, int64_t step_in_run, int64_t clock, int64_t images, const std::vector<float>& grad) {
  std::lock_guard<std::mutex> lock(mu_);
  clock_[w] = clock + 1;
  if (set_.staleness == 0) {  // summed with the other workers' same step
    if (sum_clock_ != clock) {
      sum_.assign(floats_, 0.0);
      sum_images_ = 0;
      sum_clock_ = clock;
      sum_step_ = step_in_run;
    }
    for (size_t i = 0; i < floats_; ++i) sum_[i] += grad[i];
    sum_images_ += static_cast<double>(images);
    ApplySum();
  } else {
    const int64_t lag = version_ - pulled_version_[w];
    lag_sum_ += static_cast<double>(lag);
    lag_max_ = std::max(lag_max_, lag);
    ++lags_;
    if (images > 0) Step(grad.data(), static_cast<double>(images), set_.schedule.At(step_in_run));
  }
  cv_.notify_all();
}

void PsServer::ApplySum() {
  if (sum_clock_ < 0) return;
  for (size_t j = 0; j < state_.size(); ++j)
    if (state_[j] == State::kActive && clock_[j] <= sum_clock_) return;  // still owes this step
  if (sum_images_ > 0) {
    std::vector<float> g(sum_.begin(), sum_.end());
    Step(g.data(), sum_images_, set_.schedule.At(sum_step_));
  }
  ++lags_;  // one synchronous step, lag 0
  sum_clock_ = -1;
}

void PsServer::Retire(int w, State why, const std::string& cause) {
  state_[w] = why;
  if (why == State::kGone) {
    if (gone_why_.empty()) gone_why_ = cause;
    int live = 0, done = 0;
    for (State s : state_) {
      live += s == State::kActive;
      done += s == State::kDone;
    }
    if (set_.announce) {
      // The cause is the link's words, and the link is a communicator of two ranks of its own: in
      // it this server is rank 0 and the worker rank 1, whatever their ranks in the job.
      std::printf(
          "hoop-train: rank %d: worker rank %d is gone (its link: %s; on the link, ranks are the link's: "
          "the worker is its rank 1, this server its rank 0); the parameter servers go on: %d worker(s) "
          "training, %d finished\n",
          rank_, links_.servers + w, cause.c_str(), live, done);
      std::fflush(stdout);
    }
  }
  if (set_.staleness == 0) ApplySum();
  cv_.notify_all();
}

bool PsServer::WaitEpoch(int epoch, std::vector<double>* sums, std::vector<float>* buffers, int* reporters,
                         std::vector<int64_t>* images) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] {
    for (size_t j = 0; j < state_.size(); ++j)
      if (state_[j] == State::kActive && reported_[j] <= epoch) return false;
    return true;
  });
  auto it = reports_.find(epoch);
  if (it == reports_.end() || it->second.count == 0) return false;
  *sums = it->second.sums;
  *reporters = it->second.count;
  *images = it->second.images;
  buffers->resize(it->second.buffers.size());
  for (size_t i = 0; i < buffers->size(); ++i)
    (*buffers)[i] = static_cast<float>(it->second.buffers[i] / it->second.count);
  reports_.erase(it);
  return true;
}

std::vector<float> PsServer::Snapshot() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<float> out;
  out.reserve(2 * floats_);
  for (const Param* p : shard_) out.insert(out.end(), p->value.data.begin(), p->value.data.end());
  for (auto& [name, t] : sgd_.State()) out.insert(out.end(), t->data.begin(), t->data.end());
  return out;
}

PsServer::Stats PsServer::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s;
  s.updates = version_;
  s.mean_lag = lags_ ? lag_sum_ / static_cast<double>(lags_) : 0;
  s.max_lag = lag_max_;
  for (State st : state_) {
    s.live += st == State::kActive;
    s.done += st == State::kDone;
    s.gone += st == State::kGone;
  }
  s.gone_why = gone_why_;
  return s;
}

}  // namespace hoop::train
