#include "stages/python/python_hook.h"

#include <fmt/format.h>
#include <pybind11/pybind11.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "stages/facets/hook.h"
#include "stages/python/hook_api.h"
#include "stages/python/interpreter.h"

namespace vsynth::stages::python {

namespace py = pybind11;

namespace {

py::dict begin_info(const graph::Item& item, const facets::HookContext& ctx) {
  auto text = [](std::string_view s) {
    return py::reinterpret_steal<py::str>(
        PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace"));
  };
  py::dict d;
  d["language"] = text(ctx.language);
  d["mode"] = text(ctx.mode);
  d["prompt"] = text(ctx.prompt);
  d["prefix"] = text(ctx.prefix);
  d["given_code"] = text(ctx.given_code);
  d["entry_point"] = text(ctx.entry_point);
  d["candidate"] = ctx.candidate;
  d["attempt"] = ctx.attempt;
  d["task_id"] = text(item.id());
  return d;
}

class PythonHookResource final : public facets::DecodingHook {
 public:
  PythonHookResource(const std::string& module, const std::string& cls, const std::string& path)
      : name_(fmt::format("`{}.{}`", module, cls)) {
    ensure_interpreter();
    keep_thread_state();
    py::gil_scoped_acquire gil;
    if (!path.empty()) add_to_sys_path(path);
    py::module_ mod;
    try {
      mod = py::module_::import(module.c_str());
    } catch (py::error_already_set& e) {
      throw std::runtime_error(fmt::format("cannot import Python module `{}` (sys.path: {}):\n{}",
                                           module, sys_path(), format_python_error(e)));
    }
    if (!py::hasattr(mod, cls.c_str())) {
      throw std::runtime_error(
          fmt::format("Python module `{}` ({}) has no `{}`", module, module_file(mod), cls));
    }
    class_ = mod.attr(cls.c_str());
    if (!py::isinstance<py::type>(class_)) {
      throw std::runtime_error(
          fmt::format("`{}.{}` is a {}, not a class", module, cls,
                      py::str(py::type::of(class_).attr("__name__")).cast<std::string>()));
    }
  }
  ~PythonHookResource() override {
    keep_thread_state();
    py::gil_scoped_acquire gil;
    class_ = py::object();
  }

  std::unique_ptr<kernels::MaskHook> make(graph::Item& item,
                                          const facets::HookContext& ctx) override {
    py::object hook;
    keep_thread_state();
    {
      py::gil_scoped_acquire gil;
      const char* phase = "the constructor";
      try {
        hook = class_();
        if (py::hasattr(hook, "begin")) {
          phase = "begin";
          hook.attr("begin")(begin_info(item, ctx));
        }
      } catch (py::error_already_set& e) {
        return std::make_unique<kernels::StopHook>(
            fmt::format("hook.python {}: {} raised:\n{}", name_, phase, format_python_error(e)));
      }
    }
    return make_python_mask_hook(std::move(hook), name_);
  }

 private:
  static void add_to_sys_path(const std::string& path) {
    const std::string abs = std::filesystem::absolute(path).lexically_normal().string();
    if (!std::filesystem::is_directory(abs)) {
      throw std::runtime_error(fmt::format("path `{}` ({}) is not a directory", path, abs));
    }
    py::list sys_path = py::module_::import("sys").attr("path");
    if (!sys_path.contains(abs)) sys_path.insert(0, abs);
  }
  static std::string sys_path() { return py::str(py::module_::import("sys").attr("path")); }
  static std::string module_file(const py::module_& m) {
    return py::hasattr(m, "__file__") ? py::str(m.attr("__file__")).cast<std::string>()
                                      : std::string("built in");
  }

  std::string name_;
  py::object class_;
};

}  // namespace

graph::ResourceContract python_hook_contract() {
  namespace P = graph::P;
  graph::ResourceContract c;
  c.kind = "hook.python";
  c.interface = "hook";
  c.summary =
      "a decoding hook written in Python (a vsynth.DecodingHook subclass): one instance per "
      "candidate, called at every token to mask, accept, reject, roll back or stop; a hook that "
      "raises ends its candidate with the traceback as finish_detail (docs/python.md)";
  c.params = {
      P::string("module", std::nullopt, "Python module to import (e.g. `bans` or `pkg.hooks`)"),
      P::string("class", std::nullopt,
                "class in the module; instantiated with no arguments for each candidate"),
      P::string("path", "",
                "directory put first on sys.path before the import (relative to the working "
                "directory); empty: sys.path as is (PYTHONPATH applies)"),
  };
  return c;
}

std::shared_ptr<graph::Resource> make_python_hook_resource(const graph::ResourceContext& ctx) {
  return std::make_shared<PythonHookResource>(
      ctx.params.string("module"), ctx.params.string("class"), ctx.params.string("path"));
}

}  // namespace vsynth::stages::python
