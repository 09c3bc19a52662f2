// What the C API's handle holds, shared by the collectives' C API (c_api.cc) and the tensor
// fusion runtime's (tensorfusion/c_api.cc). Not a public header.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "collectives/bootstrap.h"
#include "common/config.h"
#include "common/status.h"
#include "hoop/hoop.h"

struct hoop_comm {
  std::unique_ptr<hoop::Job> job;
  hoop::Config config;  // what the job was joined with (the fusion runtime's settings too)
  // A tensor fusion runtime drives this communicator: direct collectives are refused meanwhile.
  std::atomic<bool> fusion_active{false};
  hoop::Communicator* operator->() const { return job->comm.get(); }
};

namespace hoop::capi {

// Records s as the calling thread's last error and maps it to a status code.
hoop_status_t Report(const hoop::Status& s);

// Runs f, turning any exception into HOOP_ERR_INTERNAL: none crosses the C API.
template <class F>
hoop_status_t Guard(F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    return Report(hoop::Internal(std::string("unexpected exception: ") + e.what()));
  } catch (...) {
    return Report(hoop::Internal("unexpected exception"));
  }
}

}  // namespace hoop::capi
