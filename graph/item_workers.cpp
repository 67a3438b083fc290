#include "graph/item_workers.h"

#include <algorithm>
#include <exception>

namespace vsynth::graph {

ItemWorkers::ItemWorkers(Work work) : work_(std::move(work)) {}

ItemWorkers::~ItemWorkers() {
  {
    std::lock_guard l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ItemWorkers::start(int workers) {
  for (int i = 0; i < std::max(1, workers); ++i) threads_.emplace_back([this] { loop(); });
}

void ItemWorkers::submit(ItemPtr item, Completion done) {
  {
    std::lock_guard l(mu_);
    queue_.emplace_back(std::move(item), std::move(done));
  }
  cv_.notify_one();
}

void ItemWorkers::loop() {
  std::unique_lock l(mu_);
  for (;;) {
    cv_.wait(l, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    auto [item, done] = std::move(queue_.front());
    queue_.pop_front();
    l.unlock();
    try {
      done(work_(*item));
    } catch (const std::exception& e) {
      done.fail(e.what());
    } catch (...) {
      done.fail("an exception that is not a std::exception");
    }
    l.lock();
  }
}

}  // namespace vsynth::graph
