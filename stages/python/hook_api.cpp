#include "stages/python/hook_api.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <stdexcept>
#include <utility>
#include <vector>

namespace vsynth::stages::python {

namespace py = pybind11;
using kernels::DecodeView;
using kernels::HookVerdict;
using kernels::TokenId;
using kernels::TokenMask;

namespace {

// The Python objects handed to a hook point at the loop's own view and mask, which live only
// for the call: the adapter clears the pointer afterwards, so a hook that keeps one gets an
// error instead of reading freed memory.
struct ViewHandle {
  const DecodeView* view = nullptr;
  const DecodeView& get() const {
    if (!view) {
      throw std::runtime_error(
          "a DecodeView is valid only during the call it was passed to; copy what you need "
          "(view.text, list(view.generated)) instead of keeping the view");
    }
    return *view;
  }
};
struct MaskHandle {
  TokenMask* mask = nullptr;
  TokenMask& get() const {
    if (!mask) throw std::runtime_error("a TokenMask is valid only during before_sample");
    return *mask;
  }
};

// The base class DecodingHook: its methods do nothing, and the adapter skips a method that a
// subclass leaves as the base's.
struct HookBase {};

// UTF-8 bytes as a str; a view may end inside a character spelled as byte tokens, so invalid
// sequences become U+FFFD instead of an exception.
py::str utf8_text(std::string_view s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
  if (!o) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

template <class T>
py::list to_list(std::span<const T> xs) {
  py::list out(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) out[i] = py::int_(xs[i]);
  return out;
}

const char* kind_name(HookVerdict::Kind k) {
  switch (k) {
    case HookVerdict::Kind::Accept:
      return "accept";
    case HookVerdict::Kind::Reject:
      return "reject";
    case HookVerdict::Kind::Rollback:
      return "rollback";
    case HookVerdict::Kind::Stop:
      return "stop";
  }
  return "?";
}

// The base type, once the API is bound (for the "overridden?" test); owned by the module.
PyObject* g_base_type = nullptr;

void bind_types(py::module_& m) {
  py::class_<ViewHandle>(m, "DecodeView",
                         "The sequence a hook judges; valid only during the call it is passed to.")
      .def_property_readonly(
          "text", [](const ViewHandle& v) { return utf8_text(v.get().text); },
          "generated text so far (str; bytes that are not UTF-8 yet shown as U+FFFD)")
      .def_property_readonly(
          "text_bytes", [](const ViewHandle& v) { return py::bytes(v.get().text); },
          "generated text so far, as bytes")
      .def_property_readonly(
          "generated", [](const ViewHandle& v) { return to_list(v.get().generated); },
          "accepted generated token ids")
      .def_property_readonly(
          "prompt", [](const ViewHandle& v) { return to_list(v.get().prompt); },
          "the prompt's token ids (BOS included)")
      .def_property_readonly(
          "token_ends", [](const ViewHandle& v) { return to_list(v.get().token_ends); },
          "byte offset in text_bytes where each generated token ends")
      .def_property_readonly(
          "n_generated", [](const ViewHandle& v) { return v.get().generated.size(); },
          "number of accepted generated tokens (the position of the token being judged)")
      .def(
          "piece",
          [](const ViewHandle& v, TokenId t) {
            const DecodeView& d = v.get();
            if (!d.tokenizer) throw std::runtime_error("this view carries no tokenizer");
            return utf8_text(d.tokenizer->piece(t));
          },
          py::arg("token"), "the text of one token");

  py::class_<MaskHandle>(m, "TokenMask", "Restricts the next token; valid during before_sample.")
      .def(
          "ban", [](const MaskHandle& h, TokenId t) { h.get().ban(t); }, py::arg("token"),
          "never sample this token at this step")
      .def(
          "ban_all",
          [](const MaskHandle& h, const std::vector<TokenId>& ts) {
            TokenMask& mask = h.get();
            mask.banned.insert(mask.banned.end(), ts.begin(), ts.end());
          },
          py::arg("tokens"), "ban every token of the list")
      .def(
          "allow_only",
          [](const MaskHandle& h, std::vector<TokenId> ts) { h.get().allow_only(std::move(ts)); },
          py::arg("tokens"), "sample only among these tokens (minus banned ones)");

  py::class_<HookVerdict>(m, "Verdict", "What after_sample says of the token the sampler picked.")
      .def_static("accept", &HookVerdict::accept, "keep the token")
      .def_static("reject", &HookVerdict::reject, py::arg("why") = "",
                  "ban the token at this position and sample again")
      .def_static(
          "rollback",
          [](std::size_t position, TokenId ban, std::string why) {
            return HookVerdict::rollback(position, ban, std::move(why));
          },
          py::arg("position"), py::arg("ban") = kernels::kNoToken, py::arg("why") = "",
          "keep the first `position` generated tokens, ban `ban` there (-1: none), continue")
      .def_static("stop", &HookVerdict::stop, py::arg("why") = "",
                  "end the generation (finish reason `hook`)")
      .def_property_readonly("kind", [](const HookVerdict& v) { return kind_name(v.kind); })
      .def_readonly("position", &HookVerdict::position)
      .def_readonly("ban", &HookVerdict::ban)
      .def_readonly("reason", &HookVerdict::reason)
      .def("__repr__", [](const HookVerdict& v) {
        return fmt::format("Verdict.{}(position={}, ban={}, reason={:?})", kind_name(v.kind),
                           v.position, v.ban, v.reason);
      });

  auto base =
      py::class_<HookBase>(m, "DecodingHook",
                           "Subclass and override any of before_sample(view, mask), "
                           "after_sample(view, token, piece) -> Verdict | None and "
                           "on_rollback(kept). One instance serves one generated sequence.",
                           py::dynamic_attr())
          .def(py::init<>())
          .def(
              "before_sample", [](HookBase&, py::object, py::object) {}, py::arg("view"),
              py::arg("mask"))
          .def(
              "after_sample",
              [](HookBase&, py::object, TokenId, py::object) { return HookVerdict::accept(); },
              py::arg("view"), py::arg("token"), py::arg("piece"))
          .def(
              "on_rollback", [](HookBase&, std::size_t) {}, py::arg("kept"));
  g_base_type = base.ptr();
}

// Drives one Python hook object for one sequence (see the header for the error rule).
class PythonMaskHook final : public kernels::MaskHook {
 public:
  PythonMaskHook(py::object hook, std::string name) : name_(std::move(name)) {
    keep_thread_state();
    py::gil_scoped_acquire gil;
    hook_ = std::move(hook);
    before_ = method("before_sample");
    after_ = method("after_sample");
    rollback_ = method("on_rollback");
  }
  ~PythonMaskHook() override {
    keep_thread_state();
    py::gil_scoped_acquire gil;
    before_ = after_ = rollback_ = hook_ = py::object();
  }
  PythonMaskHook(const PythonMaskHook&) = delete;
  PythonMaskHook& operator=(const PythonMaskHook&) = delete;

  void before_sample(const DecodeView& view, TokenMask& mask) override {
    if (!before_ || !error_.empty()) return;
    py::gil_scoped_acquire gil;
    py::object v = py::cast(ViewHandle{&view});
    py::object m = py::cast(MaskHandle{&mask});
    try {
      before_(v, m);
    } catch (py::error_already_set& e) {
      fail(fmt::format("before_sample raised:\n{}", format_python_error(e)));
    }
    v.cast<ViewHandle&>().view = nullptr;
    m.cast<MaskHandle&>().mask = nullptr;
  }

  HookVerdict after_sample(const DecodeView& view, TokenId token, std::string_view piece) override {
    if (!error_.empty()) return HookVerdict::stop(error_);
    if (!after_) return HookVerdict::accept();
    py::gil_scoped_acquire gil;
    py::object v = py::cast(ViewHandle{&view});
    HookVerdict verdict;
    try {
      verdict = to_verdict(after_(v, token, utf8_text(piece)));
    } catch (py::error_already_set& e) {
      fail(fmt::format("after_sample raised:\n{}", format_python_error(e)));
      verdict = HookVerdict::stop(error_);
    }
    v.cast<ViewHandle&>().view = nullptr;
    return verdict;
  }

  void on_rollback(std::size_t kept) override {
    if (!rollback_ || !error_.empty()) return;
    py::gil_scoped_acquire gil;
    try {
      rollback_(kept);
    } catch (py::error_already_set& e) {
      fail(fmt::format("on_rollback raised:\n{}", format_python_error(e)));
    }
  }

 private:
  // The bound method `name` when the object has it and it is not DecodingHook's no-op.
  py::object method(const char* name) {
    py::object own = py::getattr(py::type::of(hook_), name, py::none());
    if (own.is_none()) return py::object();
    if (g_base_type && own.is(py::getattr(py::handle(g_base_type), name))) return py::object();
    return py::getattr(hook_, name);
  }

  HookVerdict to_verdict(const py::object& r) {
    if (r.is_none()) return HookVerdict::accept();
    if (py::isinstance<HookVerdict>(r)) return r.cast<HookVerdict>();
    const std::string what = py::str(py::type::of(r).attr("__name__"));
    fail(fmt::format("after_sample returned a {}, not a vsynth.Verdict (or None to accept)", what));
    return HookVerdict::stop(error_);
  }

  // `what` went wrong, e.g. "after_sample raised:\n<traceback>".
  void fail(const std::string& what) { error_ = fmt::format("hook.python {}: {}", name_, what); }

  std::string name_;
  py::object hook_, before_, after_, rollback_;
  std::string error_;  // set once a call failed: the candidate ends with it
};

}  // namespace

void bind_hook_api(py::module_& m) {
  // pybind11 binds a C++ type once per process: a second module (the embedded interpreter's
  // `vsynth` after the real one, say) gets the same type objects.
  static PyObject* first = nullptr;
  if (first) {
    py::handle from(first);
    for (const char* name : {"DecodeView", "TokenMask", "Verdict", "DecodingHook"}) {
      m.attr(name) = from.attr(name);
    }
    return;
  }
  bind_types(m);
  first = m.ptr();
  Py_INCREF(first);  // the types live as long as the process
}

std::unique_ptr<kernels::MaskHook> make_python_mask_hook(py::object hook, std::string name) {
  return std::make_unique<PythonMaskHook>(std::move(hook), std::move(name));
}

void keep_thread_state() {
  thread_local bool done = false;
  if (done) return;
  done = true;
  if (PyGILState_GetThisThreadState() != nullptr) return;  // Python's own thread
  // A thread state that is never released (its count stays at one), then the GIL given back.
  PyGILState_Ensure();
  PyEval_SaveThread();
}

std::string format_python_error(py::error_already_set& e) {
  try {
    py::object tb = py::module_::import("traceback");
    py::list lines = tb.attr("format_exception")(e.type(), e.value(), e.trace());
    std::string out;
    for (py::handle l : lines) out += l.cast<std::string>();
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  } catch (const std::exception&) {
    return e.what();
  }
}

}  // namespace vsynth::stages::python
