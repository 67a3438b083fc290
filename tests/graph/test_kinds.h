// Stage and resource kinds used only by the graph tests: each does one observable thing
// (adds a facet, sleeps, throws, loops back, holds items asynchronously) so the framework's
// semantics can be pinned down without any real capability.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "graph/pipeline.h"
#include "graph/registry.h"

namespace vsynth::test {

// Registers test.* stage kinds and test.model / test.hook resources.
void register_test_kinds(graph::Registry& r);

// A registry holding the real stages (stages/register_all) plus the test kinds.
graph::Registry full_registry();

// In-memory endpoints.
class VectorSource : public graph::Source {
 public:
  explicit VectorSource(std::size_t n, std::string prefix = "t");
  std::optional<graph::Task> next() override;
  std::optional<std::size_t> total() const override { return tasks_.size(); }
  std::atomic<std::size_t> emitted{0};

 private:
  std::vector<graph::Task> tasks_;
};

// Tasks given as JSON objects, each with its id in the field `id_field`.
class JsonTaskSource : public graph::Source {
 public:
  explicit JsonTaskSource(std::vector<nlohmann::json> tasks,
                          const std::string& id_field = "task_id");
  std::optional<graph::Task> next() override;
  std::optional<std::size_t> total() const override { return tasks_.size(); }

 private:
  std::vector<graph::Task> tasks_;
  std::size_t next_ = 0;
};

class VectorSink : public graph::Sink {
 public:
  void write(const graph::Item& item) override;
  bool contains(std::string_view id) const override;
  std::vector<nlohmann::json> records;
  std::vector<std::string> ids;
  std::function<void(const graph::Item&)> on_write;
  std::set<std::string, std::less<>> preloaded;  // pretend these are already in the output
};

// Opens or closes the gate every test.gate stage waits at (closed at start).
void set_gate(bool open);

// Loads a pipeline from text against `registry`; throws SpecError.
graph::ValidatedPipeline load_text(const std::string& yaml, const graph::Registry& registry);

}  // namespace vsynth::test
