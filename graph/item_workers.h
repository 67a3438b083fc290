// The worker threads behind an asynchronous stage (AsyncStage) that does blocking work
// per item (a forward pass, a Z3 proof): submit() queues the item and returns at once, so graph
// threads never wait; each worker takes the oldest queued item, runs `work` on it and completes
// the item through the port `work` returns, or fails it with the exception's message when
// `work` throws (the graph prefixes it with the stage's name and kind: "stage `check`
// (constrain.z3) failed: ...").
//
// A stage owns one as its last member and calls start() at the end of its constructor: the
// workers then stop (and join) first when the stage goes, before anything `work` uses. Items
// still queued at that point are dropped with their Completion: the graph fails them.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "graph/stage.h"

namespace vsynth::graph {

class ItemWorkers {
 public:
  // Processes one item on a worker thread; throws on failure.
  using Work = std::function<Port(Item&)>;

  explicit ItemWorkers(Work work);
  ~ItemWorkers();
  ItemWorkers(const ItemWorkers&) = delete;
  ItemWorkers& operator=(const ItemWorkers&) = delete;

  // Starts max(1, workers) threads.
  void start(int workers);
  void submit(ItemPtr item, Completion done);

 private:
  void loop();

  Work work_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<ItemPtr, Completion>> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace vsynth::graph
