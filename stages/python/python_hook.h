// hook.python: a decoding hook written in Python, run inside generate.llm's sampling loop.
//
//   resources:
//     no_eval: { use: hook.python, with: { module: bans, class: NoEval, path: examples/hooks } }
//   stages:
//     generate: { use: generate.llm, with: { model: coder, hooks: [no_eval] } }
//
// The module is imported once when the resource is built (`path`, when set, goes first on
// sys.path), in the host's interpreter when vsynth runs inside Python, else in one embedded
// into the process (interpreter.h). Each candidate gets a fresh instance of the class (a
// vsynth.DecodingHook subclass, or any class with its methods; hook_api.h), so a hook may keep
// per-sequence state in `self`. When the instance has a `begin(info)` method it is called
// first with a dict: language, mode, prompt, prefix, given_code, entry_point, candidate,
// attempt, task_id. Calls take the GIL; the engine never holds it.
//
// Errors: a module that does not import or a class that is not there fails the resource (the
// run does not start; the message holds the traceback). A constructor, `begin` or a hook method
// that raises ends that candidate only: its finish is `hook` and its finish_detail says which
// method raised, with the traceback.
#pragma once

#include <memory>

#include "graph/contract.h"
#include "graph/resource.h"

namespace vsynth::stages::python {

graph::ResourceContract python_hook_contract();
std::shared_ptr<graph::Resource> make_python_hook_resource(const graph::ResourceContext& ctx);

}  // namespace vsynth::stages::python
