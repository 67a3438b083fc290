// vsynth.Pipeline: a pipeline file validated and built once (resources loaded, stages made),
// run any number of times over tasks given as dicts or a JSONL file; each run yields the
// result records `vsynth run` writes, as dicts, while the graph runs on its own thread.
//
// The pipeline's own `source:` / `sink:` are not used: tasks come from run()'s argument and
// records go to the caller. Records come in the order items finish (input order when the
// pipeline says `ordered: true`). Dropping the iterator early cancels the run: admission stops,
// items inside finish, and the call returns once the graph is idle.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "graph/pipeline.h"
#include "graph/validate.h"
#include "python/bindings.h"
#include "stages/io/jsonl_source.h"
#include "stages/register_all.h"

namespace vsynth::python {

namespace py = pybind11;
using namespace pybind11::literals;

namespace {

// Every kind this build has, registered once per process.
const graph::Registry& registry() {
  static const graph::Registry* r = [] {
    auto* reg = new graph::Registry();
    stages::register_all(*reg);
    return reg;
  }();
  return *r;
}

// Tasks from a list of dicts, checked up front like io.jsonl_source checks lines: an object
// with a non-empty string `id` (else `task_id`), unique.
class ListSource final : public graph::Source {
 public:
  explicit ListSource(std::vector<graph::Task> tasks) : tasks_(std::move(tasks)) {}
  std::optional<graph::Task> next() override {
    if (next_ >= tasks_.size()) return std::nullopt;
    return std::move(tasks_[next_++]);
  }
  std::optional<std::size_t> total() const override { return tasks_.size(); }

 private:
  std::vector<graph::Task> tasks_;
  std::size_t next_ = 0;
};

std::vector<graph::Task> tasks_from_list(const py::handle& tasks) {
  py::object dumps = py::module_::import("json").attr("dumps");
  std::vector<graph::Task> out;
  std::set<std::string, std::less<>> seen;
  std::size_t i = 0;
  for (py::handle t : py::iter(tasks)) {
    if (!py::isinstance<py::dict>(t)) {
      throw py::type_error(
          fmt::format("tasks[{}]: a task is a dict, not a {}", i,
                      py::str(py::type::of(t).attr("__name__")).cast<std::string>()));
    }
    graph::Task task;
    task.data = nlohmann::json::parse(dumps(t, "ensure_ascii"_a = false).cast<std::string>());
    for (const char* key : {"id", "task_id"}) {
      const auto it = task.data.find(key);
      if (it != task.data.end() && it->is_string() && !it->get<std::string>().empty()) {
        task.id = it->get<std::string>();
        break;
      }
    }
    if (task.id.empty()) {
      throw py::value_error(
          fmt::format("tasks[{}]: no task id: give it a non-empty string `id` (or `task_id`)", i));
    }
    if (!seen.insert(task.id).second) {
      throw py::value_error(
          fmt::format("tasks[{}]: id `{}` repeats an earlier task's", i, task.id));
    }
    out.push_back(std::move(task));
    ++i;
  }
  return out;
}

// What the run thread hands the iterator: records as JSON text, then the end.
struct RunState {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> records;
  bool done = false;
  std::string error;  // the run threw, or stopped on a fatal error
  graph::RunResult result;
  graph::RunControl control;
};

class QueueSink final : public graph::Sink {
 public:
  explicit QueueSink(std::shared_ptr<RunState> s) : s_(std::move(s)) {}
  void write(const graph::Item& item) override {
    std::string rec =
        item.to_record().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    {
      std::lock_guard lock(s_->mu);
      s_->records.push_back(std::move(rec));
    }
    s_->cv.notify_one();
  }
  bool contains(std::string_view) const override { return false; }

 private:
  std::shared_ptr<RunState> s_;
};

struct Built {
  std::unique_ptr<graph::Pipeline> pipeline;
  std::atomic<bool> running{false};  // one run at a time (re-entrant across calls, not concurrent)
};

// One run: the graph on a thread, records pulled by Python.
class Run {
 public:
  Run(std::shared_ptr<Built> built, std::unique_ptr<graph::Source> source)
      : built_(std::move(built)), state_(std::make_shared<RunState>()) {
    if (built_->running.exchange(true)) {
      throw std::runtime_error("this Pipeline is already running; finish or drop that run first");
    }
    auto sink = std::make_unique<QueueSink>(state_);
    thread_ = std::thread(
        [b = built_, s = state_, src = std::move(source), snk = std::move(sink)]() mutable {
          try {
            s->result = b->pipeline->run(*src, *snk, s->control);
            if (!s->result.fatal.empty()) s->error = s->result.fatal;
          } catch (const std::exception& e) {
            s->error = e.what();
          }
          {
            std::lock_guard lock(s->mu);
            s->done = true;
          }
          s->cv.notify_all();
        });
  }
  ~Run() { finish(/*cancel=*/true); }
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  py::object next() {
    std::string rec;
    bool have = false;
    {
      py::gil_scoped_release nogil;  // hooks in the graph need it meanwhile
      std::unique_lock lock(state_->mu);
      state_->cv.wait(lock, [&] { return !state_->records.empty() || state_->done; });
      if (!state_->records.empty()) {
        rec = std::move(state_->records.front());
        state_->records.pop_front();
        have = true;
      }
    }
    if (have) return py::module_::import("json").attr("loads")(rec);
    finish(/*cancel=*/false);
    if (!state_->error.empty()) throw std::runtime_error("pipeline run failed: " + state_->error);
    throw py::stop_iteration();
  }

  py::dict summary() const {
    py::dict d;
    const graph::RunResult& r = state_->result;
    d["written"] = r.written;
    d["passed"] = r.passed;
    d["failed"] = r.failed;
    d["errors"] = r.errors;
    d["cancelled"] = r.cancelled;
    d["statuses"] = r.statuses;
    d["elapsed_s"] = r.elapsed_s;
    return d;
  }

 private:
  void finish(bool cancel) {
    if (!thread_.joinable()) return;
    if (cancel) state_->control.cancel();
    {
      std::optional<py::gil_scoped_release> nogil;
      if (PyGILState_Check()) nogil.emplace();
      thread_.join();
    }
    built_->running.store(false);
  }

  std::shared_ptr<Built> built_;
  std::shared_ptr<RunState> state_;
  std::thread thread_;
};

class Pipeline {
 public:
  explicit Pipeline(const std::string& path) : built_(std::make_shared<Built>()) {
    std::optional<graph::ValidatedPipeline> spec;
    try {
      spec.emplace(graph::load_pipeline(path, registry()));
    } catch (const graph::SpecError& e) {
      throw py::value_error(e.what());
    }
    py::gil_scoped_release nogil;  // resources load models; hook.python takes the GIL itself
    built_->pipeline = std::make_unique<graph::Pipeline>(std::move(*spec), registry());
  }

  std::unique_ptr<Run> run(const py::object& tasks) {
    std::unique_ptr<graph::Source> source;
    if (py::isinstance<py::str>(tasks) || py::hasattr(tasks, "__fspath__")) {
      const std::string path = py::module_::import("os").attr("fspath")(tasks).cast<std::string>();
      py::gil_scoped_release nogil;
      source = std::make_unique<stages::io::JsonlSource>(path);
    } else {
      source = std::make_unique<ListSource>(tasks_from_list(tasks));
    }
    return std::make_unique<Run>(built_, std::move(source));
  }

  std::string name() const { return built_->pipeline->spec().name; }

 private:
  std::shared_ptr<Built> built_;
};

}  // namespace

void bind_pipeline(py::module_& m) {
  py::class_<Run>(m, "Run", "The records of one Pipeline.run, as they finish (an iterator).")
      .def("__iter__", [](Run& r) -> Run& { return r; })
      .def("__next__", &Run::next)
      .def_property_readonly("summary", &Run::summary,
                             "counts of the finished run: written, passed, failed, errors, "
                             "cancelled, statuses, elapsed_s");
  py::class_<Pipeline>(m, "Pipeline",
                       "A pipeline file, validated (ValueError lists every problem with "
                       "file:line:col) and built once (resources loaded).")
      .def(py::init<const std::string&>(), "path"_a)
      .def("run", &Pipeline::run, "tasks"_a,
           "Runs tasks (a list of dicts, or the path of a JSONL file) and yields each result "
           "record (a dict, as `vsynth run` writes it) as its item finishes.")
      .def_property_readonly("name", &Pipeline::name);
  m.def(
      "kinds",
      [] {
        py::dict d;
        d["stages"] = registry().stage_kinds();
        d["resources"] = registry().resource_kinds();
        return d;
      },
      "the stage and resource kinds this build registers");
}

}  // namespace vsynth::python
