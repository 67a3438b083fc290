// The Python side of a decoding hook: the types a hook written in Python sees, and the adapter
// that drives such a hook from the C++ decoding loop (kernels/sampler/mask_hook.h).
//
//   import vsynth
//   class NoEval(vsynth.DecodingHook):
//       def after_sample(self, view, token, piece):
//           if "eval(" in view.text + piece:
//               return vsynth.Verdict.reject("eval")
//           return vsynth.Verdict.accept()       # None means accept too
//
// Python API (bind_hook_api adds it to a module):
//   DecodingHook        base class; before_sample(view, mask), after_sample(view, token, piece)
//                       -> Verdict | None, on_rollback(kept). A method the subclass does not
//                       override is never called (no GIL taken for it).
//   DecodeView          the sequence so far, valid only during the call: text (str, invalid
//                       UTF-8 replaced), text_bytes, generated / prompt (lists of token ids),
//                       token_ends (byte offsets), n_generated, piece(token) -> str.
//   TokenMask           ban(token), ban_all(tokens), allow_only(tokens); valid during the call.
//   Verdict             accept(), reject(why), rollback(position, ban=-1, why=""), stop(why);
//                       .kind ("accept", "reject", "rollback", "stop"), .position, .ban, .reason.
//
// A hook that raises (or returns something that is not a Verdict) ends its candidate: the next
// verdict is stop with "hook.python <name>: <method> raised:" and the Python traceback, so the
// candidate's finish is "hook" and its finish_detail holds the traceback. The run and the
// item go on.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "kernels/sampler/mask_hook.h"

// These are called by the Python module, which may link them from libvsynth.so; the library
// is compiled with hidden visibility (pybind11's rule), so they are exported by name.
#define VSYNTH_PYTHON_API __attribute__((visibility("default")))

namespace vsynth::stages::python {

// Adds DecodingHook, DecodeView, TokenMask and Verdict to `m`. Call with the GIL held.
VSYNTH_PYTHON_API void bind_hook_api(pybind11::module_& m);

// A MaskHook that calls the Python object `hook` (a DecodingHook, or any object with the same
// methods). `name` names it in error messages (e.g. "`bans.NoEval`"). Construct, use and destroy
// on any thread without the GIL: every call takes it.
VSYNTH_PYTHON_API std::unique_ptr<kernels::MaskHook> make_python_mask_hook(pybind11::object hook,
                                                                           std::string name);

// Before the first gil_scoped_acquire on a thread Python did not start (generate.llm's workers,
// the graph's): gives the thread a Python thread state for good. Without it every acquisition
// would create a thread state and free it on release, a cost paid at every token.
VSYNTH_PYTHON_API void keep_thread_state();

// The Python traceback of the exception being handled (`e`), as `traceback.format_exception`
// writes it; e.what() when formatting fails. Call with the GIL held.
VSYNTH_PYTHON_API std::string format_python_error(pybind11::error_already_set& e);

}  // namespace vsynth::stages::python
