// Files a killed rank's UCX left in /dev/shm, removed by hooprun (and by its agent on another
// host) after a rank it started there was killed.
//
// UCX's posix shared memory (UCX_TLS=sm or posix, the default on one host) makes each segment as
// /dev/shm/ucx_shm_posix_<id> with shm_open, writes it through to check that there is room, and
// only then unlinks the name (peers open it through /proc/<pid>/fd). A rank killed in between
// leaves the file for good; the failure matrix met one in a rank killed inside a shrink, whose new
// communicator's UCX was making its segments. Its maker holds the file open from the moment it is
// made, so a file no live process holds open or mapped is one whose maker is gone. Removed: names
// with UCX's prefix, owned by this user, modified since the job began, held by no process.
#pragma once

#include <ctime>
#include <set>
#include <string>
#include <vector>

namespace hoop::run {

// A whole /proc file by plain read(2); "" where its process has gone meanwhile (libstdc++'s
// filebuf would turn the ESRCH of a process that exits while it is read into an exception).
std::string ReadProcFile(const std::string& path);
// The names under /dev/shm some live process has open (its fds) or mapped (its maps).
std::set<std::string> HeldInDevShm();
// Removes such files; returns their names.
std::vector<std::string> RemoveUcxLeftovers(std::time_t job_began);

}  // namespace hoop::run
