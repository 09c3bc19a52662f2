// A collective ordered on a caller's CUDA stream, the way ncclAllReduce is: it starts after the
// work queued before it on that stream, and work queued after it waits for it, while the calling
// thread returns at once.
//
// At the call (Enter, on the caller's thread, in the communicator's queue order) two things are
// queued on the stream: a host function that, when the stream reaches it (its earlier work done:
// the input is ready), tells the worker so and returns; then a wait of the stream itself, on the
// device, for the call's release word in pinned host memory to reach the call's value
// (cuStreamWaitValue32). The worker waits for the input, runs the operation and, when it is over,
// failed or not, Release stores the value and the stream goes on. No thread of CUDA's is held:
// CUDA may run the host functions of every stream on one thread, so a host function that waited
// for the release (the first design) would keep every other stream's host function, and so
// every other call's input, waiting behind it: ranks sharing a process, or calls on two streams
// whose completions depend on each other, would deadlock.
//
// Each call has its own word: a send or receive completes when its peer does its part, so calls
// on different streams end in any order, and one stream must never wait for another's call (a
// receive on one stream while the sends that feed the peer's receives go on another). A word is
// reused once its call was released, with a higher value (a wait for a lower one is then met
// already). A failure poisons the communicator, as for any call: the next call says why (the
// stream is released all the same; what it then reads of the output is undefined, as after a
// failed NCCL call).
//
// The worker makes no CUDA call between the hold and the release that could wait for the held
// stream. The GPU runs showed two such hangs: pinned memory allocated for the call's staging
// (allocation synchronises the device), and a copy through pageable memory, which queued behind a
// lock of the driver's held by the caller's own pageable copy, itself queued behind the hold.
// Device buffers are therefore staged by copies the caller's thread queues on its stream around
// the hold (stream_staging.h). The words' memory is shared with the tickets, so that a release
// after the communicator is gone (a send's completion in a mailbox that outlives it) still finds
// it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "common/deadline.h"
#include "common/status.h"

namespace hoop {

// What StreamOrder does to a stream: CUDA's calls (null StreamOps), or a unit test's fake stream.
struct StreamOps {
  // Queues fn(arg) on the stream; fn returns promptly.
  Status (*launch)(void* stream, void (*fn)(void*), void* arg);
  // Queues a wait of the stream until *word >= value (wrapping 32-bit comparison).
  Status (*wait_word)(void* stream, const uint32_t* word, uint32_t value);
  // Zeroed words the stream can read while it runs, and their freeing.
  StatusOr<uint32_t*> (*alloc_words)(size_t n);
  void (*free_words)(uint32_t* words);
};

// Between the host function on the caller's stream and hoop's worker.
struct StreamSignal {
  std::mutex mu;
  std::condition_variable cv;
  bool input_ready = false;
  std::atomic<uint32_t> released{0};  // 1: Release has run
};

// A slab of release words, freed when the last ticket using it is gone.
struct StreamWords {
  uint32_t* words = nullptr;
  size_t n = 0;
  void (*free_words)(uint32_t*) = nullptr;
  ~StreamWords() {
    if (free_words) free_words(words);
  }
};

struct StreamTicket {
  uint64_t seq = 0;  // the call's number on this communicator's streams (0: not on a stream)
  std::shared_ptr<StreamSignal> signal;
  std::shared_ptr<StreamWords> slab;  // the release word: slab->words[word], released at `value`
  size_t word = 0;
  uint32_t value = 0;
  size_t at = 0;  // the word's number among its StreamOrder's (to reuse it)
};

class StreamOrder {
 public:
  static constexpr size_t kSlabWords = 1024;
  explicit StreamOrder(const StreamOps* ops = nullptr);  // null: CUDA's
  // Releases every stream still held.
  ~StreamOrder();
  StreamOrder(const StreamOrder&) = delete;
  StreamOrder& operator=(const StreamOrder&) = delete;

  // At the call: holds `stream` from here until Release, once its earlier work is done.
  StatusOr<StreamTicket> Enter(void* stream);
  // On the worker: waits (no CUDA call) until the stream's work before the call is done.
  Status WaitInput(const StreamTicket& t, Deadline deadline);
  // Whether it is, without waiting.
  static bool InputReady(const StreamTicket& t);
  // When the operation is over (whatever its result): the stream goes on. Any thread, any order;
  // needs only the ticket (a send or receive completes in the mailbox, which may outlive this).
  static void Release(const StreamTicket& t);

 private:
  static void SignalInput(void* signal);  // the host function, on CUDA's thread
  // A free word (growing the slabs), with the value its next hold waits for.
  StatusOr<StreamTicket> TakeWord();

  const StreamOps ops_;
  std::mutex mu_;
  std::vector<std::shared_ptr<StreamWords>> slabs_;
  std::vector<uint32_t> values_;    // per word (slab-major): the last value handed out
  std::vector<size_t> free_;        // words whose last call was released
  std::vector<StreamTicket> held_;  // entered, perhaps released since (pruned at Enter)
  uint64_t next_ = 0;
};

}  // namespace hoop
