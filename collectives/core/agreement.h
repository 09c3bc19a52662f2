// What a shrink (shrink.cc) and a grow (grow.cc) agree on through the job's store, never
// through connections a loss may have broken: the store keeps the first proposal under a key
// (Store::SetIfAbsent) and every rank takes that one, whoever proposed it and whoever died
// meanwhile.
//
// AgreeOutcome is the last step of both: each member, having tried to make the new
// communicator, writes whether that worked (made/RANK); the verdict is "commit" once every member
// made it, "abort" once one failed or is gone (as `gone` says: those this rank knows to be lost),
// or once `wait` passed without every member's word. So either every live member keeps the new
// communicator or none does. WatchfulStore is the store a new communicator meets through while
// such a verdict may come: a wait for a key a gone member will never write gives up at once.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "transport/store/store.h"

namespace hoop {

std::string ListText(const std::vector<int>& v);  // "1,2,5"
std::vector<int> ParseList(const std::string& text);
bool Has(const std::vector<int>& v, int x);
// The value under `key` now, without waiting.
std::optional<std::string> Peek(Store& store, const std::string& key);
Deadline Earlier(Deadline a, Deadline b);

// The verdict of round `at` ("commit": true). `me`: this rank's number among `members`' kind.
StatusOr<bool> AgreeOutcome(Store& store, const std::string& at, int me, const std::vector<int>& members, bool made,
                            Deadline wait, Deadline deadline, const std::function<std::vector<int>()>& gone);

// A wait for a key asks every 20 ms whether to give up (a member is gone, the round was given
// up), and if so fails at once, instead of waiting out the round for a key never written.
class WatchfulStore : public Store {
 public:
  WatchfulStore(Store& store, std::function<Status()> give_up) : store_(store), give_up_(std::move(give_up)) {}
  Status Set(const std::string& key, const std::string& value) override { return store_.Set(key, value); }
  StatusOr<int64_t> Add(const std::string& key, int64_t delta) override { return store_.Add(key, delta); }
  StatusOr<std::string> SetIfAbsent(const std::string& key, const std::string& value, Deadline deadline) override {
    return store_.SetIfAbsent(key, value, deadline);
  }
  StatusOr<std::string> Get(const std::string& key, Deadline deadline) override;

 private:
  Store& store_;
  std::function<Status()> give_up_;
};

}  // namespace hoop
