#include "trainer/hogwild.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hoop::train {

StatusOr<std::unique_ptr<SharedParams>> SharedParams::Open(const std::string& name, const std::vector<Param*>& params,
                                                           bool create) {
  std::unique_ptr<SharedParams> s(new SharedParams);
  s->name_ = name;
  s->params_ = params;
  for (const Param* p : params) s->floats_ += p->value.size();
  const size_t bytes = s->floats_ * sizeof(float);
  const int fd = shm_open(name.c_str(), create ? O_RDWR | O_CREAT | O_EXCL : O_RDWR, 0600);
  if (fd < 0) return ErrnoStatus(Code::kUnavailable, "hogwild: shm_open " + name, errno);
  if (create && ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int err = errno;
    close(fd);
    shm_unlink(name.c_str());
    return ErrnoStatus(Code::kUnavailable, "hogwild: sizing " + name, err);
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int err = errno;
  close(fd);
  if (p == MAP_FAILED) return ErrnoStatus(Code::kUnavailable, "hogwild: mapping " + name, err);
  s->shared_ = static_cast<float*>(p);
  s->start_.resize(s->floats_);
  return s;
}

SharedParams::~SharedParams() {
  if (shared_) munmap(shared_, floats_ * sizeof(float));
}

void SharedParams::Unlink() { shm_unlink(name_.c_str()); }

void SharedParams::Publish() {
  size_t at = 0;
  for (const Param* p : params_) {
    std::memcpy(shared_ + at, p->value.ptr(), p->value.size() * sizeof(float));
    at += p->value.size();
  }
}

void SharedParams::Read() {
  size_t at = 0;
  for (Param* p : params_) {
    // Plain loads of memory others are writing: a torn read of a weight mid-update is a weight
    // from one update or the other, which Hogwild! accepts.
    std::memcpy(p->value.ptr(), shared_ + at, p->value.size() * sizeof(float));
    std::memcpy(start_.data() + at, p->value.ptr(), p->value.size() * sizeof(float));
    at += p->value.size();
  }
}

void SharedParams::AddChange() {
  size_t at = 0;
  for (const Param* p : params_) {
    const float* w = p->value.ptr();
    float* shared = shared_ + at;
    const float* start = start_.data() + at;
    for (size_t i = 0; i < p->value.size(); ++i) shared[i] += w[i] - start[i];
    at += p->value.size();
  }
}

}  // namespace hoop::train
