// FileStore: a Store in a directory, for jobs whose ranks share a file system and have no store
// server (mpirun or Slurm launches). Set writes a temporary file and renames it into place, so a
// reader never sees half a value; Get polls with backoff until the deadline; Add holds an flock.
#pragma once

#include "transport/store.h"

namespace hoop {

class FileStore : public Store {
 public:
  static StatusOr<std::unique_ptr<FileStore>> Open(const std::string& dir);
  Status Set(const std::string& key, const std::string& value) override;
  StatusOr<std::string> Get(const std::string& key, Deadline deadline) override;
  StatusOr<int64_t> Add(const std::string& key, int64_t delta) override;

 private:
  explicit FileStore(std::string dir) : dir_(std::move(dir)) {}
  std::string PathOf(const std::string& key) const;
  std::string dir_;
};

}  // namespace hoop
