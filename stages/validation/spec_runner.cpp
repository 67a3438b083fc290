#include "stages/validation/spec_runner.h"

#include <string>

#include "stages/validation/python_harness.h"

namespace vsynth::stages::validation {

// Runs inside the sandbox; spec_runner.h describes its protocol. Standard library only (the
// interpreter runs with -I -S: no site-packages, no environment, no user directory).
namespace {

constexpr std::string_view kHead =
    R"PY(# vsynth spec-test runner (stages/validation/spec_runner.h describes the protocol).
import json
import os
import signal
import sys
import time
import types

_write = os.write
_dumps = json.dumps
_monotonic = time.monotonic
_REPORT_FD = 3
_LIMIT = 200
_INT_LIMIT = 1 << 127  # the C++ side evaluates ints up to 128 bits
_LIST_LIMIT = 256
_SOURCE = ""
)PY";

constexpr std::string_view kBody = R"PY(
def _int_text(v):
    # "?" (not evaluable) past 128 bits: a factorial's digits would fill the report.
    return str(v) if -_INT_LIMIT <= v < _INT_LIMIT else "?"


def _decode(arg):
    kind = arg["t"]
    if kind == "int":
        return int(arg["v"])
    if kind == "bool":
        return bool(arg["v"])
    if kind == "list":
        return [int(x) for x in arg["v"]]
    if kind == "str":
        return str(arg["v"])
    raise ValueError("unknown argument kind %r" % (kind,))


def _encode(value):
    # bool before int: True is an int in Python, and the judge must know which it got.
    if type(value) is bool:
        return {"t": "bool", "v": value}
    if type(value) is int:
        return {"t": "int", "v": _int_text(value)}
    if type(value) in (list, tuple):
        bad = [x for x in value if type(x) is not int]
        if not bad:
            if len(value) > _LIST_LIMIT:  # "?": too long to report, not evaluable
                return {"t": "list", "v": "?", "len": len(value)}
            return {"t": "list", "v": [_int_text(x) for x in value]}
        return {"t": "other", "type": "%s holding a %s" % (type(value).__name__, type(bad[0]).__name__),
                "repr": _repr(value)}
    return {"t": "other", "type": type(value).__name__, "repr": _repr(value)}


def _where(tb):
    """The deepest frame of candidate.py in a traceback: 'candidate.py:5 (`return a / b`)'."""
    where = None
    lines = _SOURCE.splitlines()
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "candidate.py":
            n = tb.tb_lineno
            text = lines[n - 1].strip() if 0 < n <= len(lines) else ""
            where = "candidate.py:%d (`%s`)" % (n, _short(text, 120)) if text else "candidate.py:%d" % n
        tb = tb.tb_next
    return where


def _describe(e):
    try:
        text = "%s: %s" % (type(e).__name__, _short(e)) if str(e) else type(e).__name__
    except BaseException:
        text = type(e).__name__
    where = _where(e.__traceback__)
    return text + (" at " + where if where else "")


class _CallTimeout(BaseException):
    pass


def _alarm(signum, frame):
    raise _CallTimeout()


def _fail(kind, message):
    _report({"event": "fail", "kind": kind, "message": message})
    os._exit(0)


def main():
    global _SOURCE
    _report({"event": "start"})
    with open("inputs.json", encoding="utf-8") as f:
        spec = json.load(f)
    with open("candidate.py", encoding="utf-8", errors="replace") as f:
        _SOURCE = f.read()
    try:
        code = compile(_SOURCE, "candidate.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as e:
        _fail("candidate_syntax", "the candidate does not compile: " + _short(e))
    module = types.ModuleType("candidate")
    module.__file__ = "candidate.py"
    sys.modules["candidate"] = module
    ns = module.__dict__
    try:
        exec(code, ns)
    except BaseException as e:
        _fail("candidate_error", "loading the candidate raised " + _describe(e))
    entry = spec["entry_point"]
    fn = ns.get(entry)
    if not callable(fn):
        _fail("missing_entry_point", "the candidate does not define `%s`" % entry)
    _report({"event": "loaded"})

    deadline = _monotonic() + spec["budget_ms"] / 1000.0
    per_call = spec["call_ms"] / 1000.0
    # CPU time (ITIMER_PROF), not wall time: a loaded machine that preempts a quick call does
    # not time it out; a call that sleeps instead of spinning meets the sandbox's wall limit.
    signal.signal(signal.SIGPROF, _alarm)
    for i, args in enumerate(spec["inputs"]):
        if _monotonic() > deadline:
            _report({"event": "stopped", "at": i})
            os._exit(0)
        _report({"event": "call", "i": i})
        try:
            signal.setitimer(signal.ITIMER_PROF, per_call)
            value = fn(*[_decode(a) for a in args])
            signal.setitimer(signal.ITIMER_PROF, 0)
        except _CallTimeout:  # also when it fired just after the return: the call took that long
            signal.setitimer(signal.ITIMER_PROF, 0)
            _report({"event": "timeout", "i": i, "args": args})
            continue
        except BaseException as e:
            signal.setitimer(signal.ITIMER_PROF, 0)
            _report({"event": "raised", "i": i, "args": args, "error": _describe(e)})
            continue
        _report({"event": "result", "i": i, "args": args, "value": _encode(value)})
    _report({"event": "done"})
    os._exit(0)


main()
)PY";

}  // namespace

const std::string& spec_runner_script() {
  static const std::string script = harness_script(kHead, kBody);  // helpers: python_harness.h
  return script;
}

}  // namespace vsynth::stages::validation
