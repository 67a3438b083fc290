// The Stage API. A stage kind is a class plus a Contract; the registry builds one instance
// per YAML stage with its validated parameters and the resources it names.
//
// Transform stages are synchronous (`SyncStage::process`, run on graph threads; keep them
// short) or asynchronous (`AsyncStage::submit`: hand the item to your own worker pool or
// engine and call the Completion exactly once, from any thread; graph threads never wait for
// external work). Either way a stage returns the output port the item leaves through; before
// returning a port wired to a back edge it may attach feedback with Item::add_feedback.
// Sources produce tasks; sinks consume finished items.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "graph/contract.h"
#include "graph/item.h"
#include "graph/params.h"
#include "graph/resource.h"

namespace vsynth::graph {

using Port = uint32_t;

struct StageContext {
  std::string name;  // the stage's name in the pipeline ("prune")
  const Contract& contract;
  Params params;
  const ResourceSet& resources;

  // Index of a port declared in the contract; throws when the name is not declared.
  Port port(std::string_view port_name) const;
};

class StageBase {
 public:
  virtual ~StageBase() = default;
};

// Thrown (or passed to Completion::fail as its message) by a stage that stopped its work
// because Item::stop_requested(): the runner does not count it as the stage's error. Any
// failure of a stage whose item was asked to stop is taken as this.
class Cancelled : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class SyncStage : public StageBase {
 public:
  // Processes one item and names the port it leaves through. An exception fails the item
  // (it leaves the graph with the stage's name and the message), never the run.
  virtual Port process(Item& item) = 0;
};

// The way an async stage hands an item back: call it exactly once, with a port or with an
// error message, from any thread. A second call throws std::logic_error; a Completion dropped
// without being called fails the item ("completed by no one"), so every item gets exactly one
// result even when a stage forgets it. Copies share one state.
class Completion {
 public:
  using Fn = std::function<void(ItemPtr, std::optional<Port>, std::string)>;
  Completion(ItemPtr item, std::shared_ptr<const Fn> fn);
  void operator()(Port port) const;
  void fail(std::string message) const;
  Item& item() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

class AsyncStage : public StageBase {
 public:
  // Starts work on the item and returns at once; `done` is called later from any thread.
  // Throwing from submit() fails the item like a failed completion.
  virtual void submit(ItemPtr item, Completion done) = 0;
};

class Source : public StageBase {
 public:
  // The next task, or nullopt at the end. Called from the runner's feeding thread only.
  virtual std::optional<Task> next() = 0;
  // How many tasks there are in all, when known up front (for progress and ETA).
  virtual std::optional<std::size_t> total() const { return std::nullopt; }
};

class Sink : public StageBase {
 public:
  // Writes one finished item. Called from one thread at a time.
  virtual void write(const Item& item) = 0;
  // Tasks already in the output (resume): the runner does not admit them again.
  virtual bool contains(std::string_view task_id) const = 0;
  virtual std::size_t already_done() const { return 0; }
  virtual void flush() {}
};

}  // namespace vsynth::graph
