#include "stages/validation/python_runner.h"

#include <nlohmann/json.hpp>
#include <string>

#include "stages/validation/python_harness.h"

namespace vsynth::stages::validation {

// Runs inside the sandbox; python_runner.h describes its protocol. Standard library only (the
// interpreter runs with -I -S: no site-packages, no environment, no user directory).
namespace {

constexpr std::string_view kHead =
    R"PY(# vsynth test runner (stages/validation/python_runner.h describes the protocol).
import ast
import json
import os
import sys
import types

_write = os.write
_dumps = json.dumps
_REPORT_FD = 3
_LIMIT = 300
)PY";

constexpr std::string_view kBody = R"PY(
class _TestFailure(AssertionError):
    pass


def _vsynth_fail(source, values, msg):
    lines = ["assertion failed: " + _short(source)]
    for expr, value in values:
        lines.append("  %s = %s" % (_short(expr, 120), _repr(value)))
    if msg is not None:
        lines.append("  message: " + _short(msg))
    raise _TestFailure("\n".join(lines))


def _is_literal(node):
    try:
        ast.literal_eval(node)
        return True
    except Exception:
        return False


class _AssertRewriter(ast.NodeTransformer):
    """assert L op R, msg  ->  l = L; r = R; if not (l op R): _vsynth_fail(src, values, msg)"""

    def __init__(self, source):
        self.source = source
        self.count = 0

    def _segment(self, node):
        text = ast.get_source_segment(self.source, node)
        return text if text is not None else ast.unparse(node)

    def visit_Assert(self, node):
        self.count += 1
        tmp = "_vsynth_v%d_" % self.count
        test = node.test
        stmts = []
        shown = []  # (expression text, ast.Name holding its value)
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            sides = [test.left, test.comparators[0]]
            names = []
            for i, side in enumerate(sides):
                name = tmp + str(i)
                stmts.append(ast.Assign(targets=[ast.Name(name, ast.Store())], value=side))
                names.append(ast.Name(name, ast.Load()))
                if not _is_literal(side):
                    shown.append((self._segment(side), name))
            cond = ast.Compare(left=names[0], ops=test.ops, comparators=[names[1]])
        else:
            stmts.append(ast.Assign(targets=[ast.Name(tmp, ast.Store())], value=test))
            cond = ast.Name(tmp, ast.Load())
            inner = test.operand if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) else test
            if isinstance(inner, (ast.Call, ast.Name, ast.Attribute, ast.Subscript)) and inner is test:
                shown.append((self._segment(test), tmp))
        values = ast.List(
            elts=[ast.Tuple(elts=[ast.Constant(text), ast.Name(name, ast.Load())], ctx=ast.Load())
                  for text, name in shown],
            ctx=ast.Load())
        call = ast.Call(func=ast.Name("_vsynth_fail", ast.Load()),
                        args=[ast.Constant(self._segment(node)), values,
                              node.msg if node.msg is not None else ast.Constant(None)],
                        keywords=[])
        stmts.append(ast.If(test=ast.UnaryOp(op=ast.Not(), operand=cond),
                            body=[ast.Expr(call)], orelse=[]))
        for s in stmts:
            ast.copy_location(s, node)
        return stmts


def _compile_test(source, filename, mode="exec"):
    tree = ast.parse(source, filename, mode)
    tree = _AssertRewriter(source).visit(tree)
    ast.fix_missing_locations(tree)
    return tree, compile(tree, filename, mode, dont_inherit=True)


def _candidate_frame(tb):
    """The deepest frame of candidate.py in a traceback: 'candidate.py:5 (`return a / b`)'."""
    where = None
    lines = _CANDIDATE_SOURCE.splitlines()
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename == "candidate.py":
            n = tb.tb_lineno
            text = lines[n - 1].strip() if 0 < n <= len(lines) else ""
            where = "candidate.py:%d (`%s`)" % (n, _short(text, 120)) if text else "candidate.py:%d" % n
        tb = tb.tb_next
    return where


def _describe_exception(e):
    text = "%s: %s" % (type(e).__name__, _short(e)) if str(e) else type(e).__name__
    where = _candidate_frame(e.__traceback__)
    return text + (" at " + where if where else "")


def _fail(kind, name, message, **extra):
    obj = {"event": "fail", "kind": kind, "name": name, "message": message}
    obj.update(extra)
    _report(obj)
    sys.stdout.flush()
    os._exit(0)


def _run_one(name, source, code, ns):
    _report({"event": "test", "name": name, "source": _short(source, 200)})
    try:
        exec(code, ns)
    except _TestFailure as e:
        _fail("assertion", name, str(e))
    except AssertionError as e:
        # Raised by the candidate itself, or by an assert this runner did not rewrite.
        where = _candidate_frame(e.__traceback__)
        if where:
            _fail("exception", name, "candidate raised " + _describe_exception(e) + " in " + _short(source, 200))
        _fail("assertion", name, "assertion failed: %s%s" % (_short(source, 200), (": " + _short(e)) if str(e) else ""))
    except SystemExit as e:
        _fail("exit", name, "candidate called exit(%r) during %s" % (e.code, _short(source, 200)))
    except BaseException as e:
        _fail("exception", name, "%s raised %s" % (_short(source, 200), _describe_exception(e)))


def _run_call(name, fn, arg_list, ns):
    source = name
    _report({"event": "test", "name": name, "source": source})
    try:
        fn(*arg_list)
    except _TestFailure as e:
        _fail("assertion", name, str(e))
    except AssertionError as e:
        where = _candidate_frame(e.__traceback__)
        if where:
            _fail("exception", name, "candidate raised " + _describe_exception(e) + " in " + name)
        _fail("assertion", name, "assertion failed in %s%s" % (name, (": " + _short(e)) if str(e) else ""))
    except SystemExit as e:
        _fail("exit", name, "candidate called exit(%r) during %s" % (e.code, name))
    except BaseException as e:
        _fail("exception", name, "%s raised %s" % (name, _describe_exception(e)))


def _docstrings(prompt):
    """The docstrings of the prompt (module, classes, functions), dedented, in source order."""
    try:
        tree = ast.parse(prompt)
    except SyntaxError:
        # A prompt cut inside a body: take its triple-quoted blocks.
        import inspect
        import re

        return [inspect.cleandoc(m.group(2)) for m in re.finditer(r"(\"\"\"|''')(.*?)\1", prompt, re.S)]
    docs = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=True)
            if doc:
                docs.append((node.lineno if hasattr(node, "lineno") else 0, doc))
    return [d for _, d in sorted(docs, key=lambda x: x[0])]


def _doctest(prompt, ns):
    import doctest

    examples = []
    try:
        for doc in _docstrings(prompt):
            examples.extend(doctest.DocTestParser().get_examples(doc, "prompt"))
    except ValueError as e:
        _fail("test_error", "docstring", "cannot parse the prompt's >>> examples: " + _short(e))
    first = []

    class Runner(doctest.DocTestRunner):
        def report_start(self, out, test, example):
            _report({"event": "test", "name": "example", "source": _short(example.source.strip(), 200)})

        def report_success(self, out, test, example, got):
            pass

        def report_failure(self, out, test, example, got):
            if not first:
                first.append("example failed: %s\n  expected: %s\n  got: %s" % (
                    _short(example.source.strip()), _short(example.want.strip()), _short(got.strip())))

        def report_unexpected_exception(self, out, test, example, exc_info):
            if not first:
                e = exc_info[1]
                if isinstance(e, SystemExit):
                    first.append("candidate called exit(%r) in example %s" % (e.code, _short(example.source.strip())))
                else:
                    first.append("example %s raised %s" % (_short(example.source.strip()), _describe_exception(e)))

    test = doctest.DocTest(examples, dict(ns), "prompt", "prompt", 0, prompt)
    runner = Runner(verbose=False, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.FAIL_FAST)
    result = runner.run(test, out=lambda s: None, clear_globs=False)
    if first:
        _fail("assertion", "example", first[0])
    return result.attempted


def main():
    global _CANDIDATE_SOURCE
    _report({"event": "start"})
    with open("tests.json", encoding="utf-8") as f:
        spec = json.load(f)
    with open("candidate.py", encoding="utf-8", errors="replace") as f:
        _CANDIDATE_SOURCE = f.read()
    try:
        code = compile(_CANDIDATE_SOURCE, "candidate.py", "exec", dont_inherit=True)
    except SyntaxError as e:
        _fail("candidate_syntax", "compile", "candidate.py:%s:%s: SyntaxError: %s" % (e.lineno, e.offset, e.msg))
    except ValueError as e:  # null bytes
        _fail("candidate_syntax", "compile", "candidate.py: " + _short(e))

    module = types.ModuleType("candidate")
    module.__file__ = "candidate.py"
    sys.modules["candidate"] = module
    ns = module.__dict__
    try:
        exec(code, ns)
    except SystemExit as e:
        _fail("exit", "load", "candidate called exit(%r) while loading" % (e.code,))
    except BaseException as e:
        _fail("candidate_error", "load", "loading the candidate raised " + _describe_exception(e))
    _report({"event": "loaded"})
    ns["_vsynth_fail"] = _vsynth_fail

    kind = spec.get("kind")
    entry = spec.get("entry_point")
    tests = 0
    if kind == "statements":
        for i, source in enumerate(spec.get("statements", [])):
            name = "test %d" % (i + 1)
            try:
                _, test_code = _compile_test(source, "<%s>" % name)
            except SyntaxError as e:
                _fail("test_error", name, "the test does not compile: %s: %s" % (e.msg, _short(source, 200)))
            _run_one(name, source, test_code, ns)
            tests += 1
    elif kind == "script":
        source = spec.get("script", "")
        try:
            tree, test_code = _compile_test(source, "<tests>")
        except SyntaxError as e:
            _fail("test_error", "tests", "the tests do not compile: line %s: %s" % (e.lineno, e.msg))
        defined = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        _run_one("tests", "the test script", test_code, ns)
        tests += 1
        if "check" in defined and entry:
            if entry not in ns or not callable(ns[entry]):
                _fail("missing_entry_point", "check", "the candidate does not define `%s`" % entry)
            _run_call("check(%s)" % entry, ns["check"], [ns[entry]], ns)
            tests += 1
        for name in defined:
            if name.startswith("test"):
                _run_call(name + "()", ns[name], [], ns)
                tests += 1
    elif kind == "doctest":
        if entry and entry not in ns:
            _fail("missing_entry_point", "docstring", "the candidate does not define `%s`" % entry)
        tests = _doctest(spec.get("prompt", ""), ns)
    else:
        _fail("test_error", "tests", "unknown tests kind %r" % (kind,))
    sys.stdout.flush()
    _report({"event": "pass", "tests": tests})
    os._exit(0)


_CANDIDATE_SOURCE = ""
main()
)PY";

}  // namespace

const std::string& python_runner_script() {
  static const std::string script = harness_script(kHead, kBody);  // helpers: python_harness.h
  return script;
}

std::string python_tests_json(std::string_view kind, std::string_view entry_point,
                              const std::vector<std::string_view>& statements,
                              std::string_view script_or_prompt) {
  nlohmann::json j;
  j["kind"] = kind;
  j["entry_point"] = entry_point.empty() ? nlohmann::json() : nlohmann::json(entry_point);
  if (kind == "statements") {
    j["statements"] = nlohmann::json::array();
    for (std::string_view s : statements) j["statements"].push_back(s);
  } else if (kind == "script") {
    j["script"] = script_or_prompt;
  } else {
    j["prompt"] = script_or_prompt;
  }
  // Invalid UTF-8 in a task becomes U+FFFD rather than an exception.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace vsynth::stages::validation
