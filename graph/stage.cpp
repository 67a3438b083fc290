#include "graph/stage.h"

#include <atomic>
#include <stdexcept>

namespace vsynth::graph {

struct Completion::State {
  ItemPtr item;
  std::shared_ptr<const Fn> fn;
  std::atomic<bool> called{false};

  void complete(std::optional<Port> port, std::string message) {
    if (called.exchange(true)) {
      throw std::logic_error("async stage completed item `" + item->id() + "` twice");
    }
    (*fn)(item, port, std::move(message));
  }
  ~State() {
    if (!called.load() && item) {
      called = true;
      try {
        (*fn)(item, std::nullopt, "the stage dropped the item without completing it");
      } catch (...) {
        // Routing never throws; nothing sensible can be done in a destructor if it did.
      }
    }
  }
};

Completion::Completion(ItemPtr item, std::shared_ptr<const Fn> fn)
    : state_(std::make_shared<State>()) {
  state_->item = std::move(item);
  state_->fn = std::move(fn);
}

void Completion::operator()(Port port) const {
  state_->complete(port, {});
}
void Completion::fail(std::string message) const {
  state_->complete(std::nullopt, std::move(message));
}
Item& Completion::item() const {
  return *state_->item;
}

}  // namespace vsynth::graph
