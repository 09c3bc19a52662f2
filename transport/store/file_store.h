// FileStore: a Store in a directory, for jobs whose ranks share a file system and have no store
// server (mpirun or Slurm launches). Set writes a temporary file and renames it into place, so a
// reader never sees half a value; Get polls with backoff until the deadline; Add holds an flock;
// SetIfAbsent links a written temporary into place, which fails where the key exists.
//
// One directory serves one job. A job's ranks stamp it with their token's fingerprint and their
// pids (Claim), so a second job pointed at a used directory is refused at once, naming it,
// instead of reading the first job's addresses; RemoveAll empties it when the job ends cleanly.
#pragma once

#include "transport/store/store.h"

namespace hoop {

class FileStore : public Store {
 public:
  static StatusOr<std::unique_ptr<FileStore>> Open(const std::string& dir);
  Status Set(const std::string& key, const std::string& value) override;
  StatusOr<std::string> Get(const std::string& key, Deadline deadline) override;
  StatusOr<int64_t> Add(const std::string& key, int64_t delta) override;
  StatusOr<std::string> SetIfAbsent(const std::string& key, const std::string& value, Deadline deadline) override;

  // Rank `rank` (this process) of the job with `token` takes the directory: FailedPrecondition
  // when it holds another job's entries (another token's, or this rank's written by another
  // process). A process may claim again (a job's second communicator).
  Status Claim(const std::string& token, int rank);
  // Removes every entry (the job is over on every rank).
  void RemoveAll();
  const std::string& dir() const { return dir_; }

 private:
  explicit FileStore(std::string dir) : dir_(std::move(dir)) {}
  std::string PathOf(const std::string& key) const;
  std::string dir_;
};

}  // namespace hoop
