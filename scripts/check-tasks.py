#!/usr/bin/env python3
"""Checks the example synthesis task sets in examples/tasks.

For examples/tasks/synthesize.jsonl (our schema, see examples/tasks/README.md):
  - every line is a JSON object with exactly the known fields, of the right types and sizes;
    ids are unique; a test never appears both visible and hidden;
  - Python: prompt starts with the signature, parses, and defines entry_point with a docstring;
    the reference defines entry_point with exactly that signature line; the reference passes
    every visible and hidden test (run in a subprocess with a timeout); constant and identity
    stubs fail at least one test (so the tests can tell a wrong answer from a right one);
  - C: prompt ends with the prototype (signature + ';'); the reference compiles with
    `cc -std=c11 -Wall -Werror` (plus UBSan where the compiler has it) together with a
    generated main that assert()s each test, and every assert holds;
  - spec: requires/ensures use only the Python subset that solvers/spec_parser.h models and only
    parameters whose types it models; for every test of the form `f(args) == expected`, each
    requires holds on args and each ensures holds on args + result (result computed by the
    reference for Python, taken from `expected` for C, whose run has proven them equal).
For examples/tasks/humaneval-style.jsonl (HumanEval schema): exactly the HumanEval fields; the
prompt has `>>>` examples, which pass as doctests against prompt + canonical_solution; the test
defines check(candidate), which passes for the canonical solution and fails for a stub.

Exit status 0 only when everything passes. Usage:
  scripts/check-tasks.py [--synthesize PATH] [--humaneval PATH] [--only ID] [--jobs N] [-v]
"""

import argparse
import ast
import collections
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_SYNTH = os.path.join(ROOT, "examples", "tasks", "synthesize.jsonl")
DEFAULT_HUMANEVAL = os.path.join(ROOT, "examples", "tasks", "humaneval-style.jsonl")

REQUIRED = {"id", "language", "difficulty", "prompt", "entry_point", "signature", "tests",
            "hidden_tests", "reference"}
OPTIONAL = {"spec"}
LANGUAGES = ("python", "c")
DIFFICULTIES = ("trivial", "easy", "moderate")
VISIBLE_RANGE = (2, 4)
HIDDEN_RANGE = (5, 15)
HUMANEVAL_FIELDS = {"task_id", "prompt", "entry_point", "canonical_solution", "test"}

# Seconds per task for running its tests (Python subprocess, or C compile + each run).
TIMEOUT_S = 60

# --------------------------------------------------------------------------- spec subset
# What solvers/spec_parser.h models: calls to these names, generators only inside all/any.
SPEC_FUNCTIONS = {"abs", "min", "max", "len", "sum", "all", "any", "range", "int", "float", "bool"}
SPEC_NODES = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub,
              ast.UAdd, ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod,
              ast.Pow, ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In,
              ast.NotIn, ast.Call, ast.Name, ast.Load, ast.Store, ast.Constant, ast.Subscript,
              ast.List, ast.Tuple, ast.IfExp, ast.GeneratorExp, ast.comprehension)
# Python annotations the spec parser gives a sort (solvers/signature.h sort_from_annotation).
MODELLED_ANNOTATIONS = {"int", "bool", "float", "list[int]", "List[int]", "typing.List[int]",
                        "Sequence[int]", "tuple[int, ...]"}
C_SCALAR_WORDS = {"int", "unsigned", "signed", "long", "short", "size_t", "bool", "_Bool",
                  "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t",
                  "uint64_t", "const"}


def spec_subset_errors(text, known, allow_result):
    """Problems with one spec expression: syntax, nodes or names outside the modelled subset."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        return ["does not parse as a Python expression (%s)" % e.msg]
    errors = []
    bound = set()
    called = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            called.add(id(node.func))
        if isinstance(node, ast.comprehension):
            if not isinstance(node.target, ast.Name) or node.is_async:
                errors.append("generator target must be a single name")
            else:
                bound.add(node.target.id)
    for node in ast.walk(tree):
        if not isinstance(node, SPEC_NODES):
            errors.append("%s is outside the spec subset" % type(node).__name__)
        elif isinstance(node, ast.Constant) and type(node.value) not in (int, bool, float):
            errors.append("constant %r is not an int, bool or float" % (node.value,))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and not (
                isinstance(node.right, ast.Constant) and type(node.right.value) is int
                and 0 <= node.right.value <= 64):
            errors.append("'**' needs a literal exponent 0..64 (%s)" % ast.unparse(node))
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in SPEC_FUNCTIONS:
                errors.append("call of %s: only %s" % (ast.unparse(node.func),
                                                       ", ".join(sorted(SPEC_FUNCTIONS))))
            if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
                errors.append("keyword or starred arguments in %s" % ast.unparse(node))
            fname = node.func.id if isinstance(node.func, ast.Name) else ""
            for a in node.args:
                if isinstance(a, ast.GeneratorExp):
                    if fname not in ("all", "any") or len(node.args) != 1:
                        errors.append("a generator may only be the one argument of all/any")
                    if len(a.generators) != 1:
                        errors.append("a generator may have one 'for' only")
        elif isinstance(node, ast.GeneratorExp):
            pass
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            name = node.id
            if name in SPEC_FUNCTIONS or name in bound or id(node) in called:
                continue
            if name == "result":
                if not allow_result:
                    errors.append("'result' is only known in ensures")
                elif "result" not in known:
                    errors.append("'result' has a type the spec parser does not model")
            elif name not in known:
                shown = known if allow_result else known - {"result"}
                errors.append("unknown or unmodelled name '%s' (known: %s)" %
                              (name, ", ".join(sorted(shown)) or "none"))
    # A generator argument of all/any is checked above; any other GeneratorExp is misplaced.
    for node in ast.walk(tree):
        if isinstance(node, ast.GeneratorExp):
            parent_ok = any(isinstance(p, ast.Call) and node in p.args and
                            isinstance(p.func, ast.Name) and p.func.id in ("all", "any")
                            for p in ast.walk(tree))
            if not parent_ok:
                errors.append("generator outside all/any")
    return sorted(set(errors))


# --------------------------------------------------------------------------- signatures
def python_signature(sig):
    """(name, [(param, annotation)], return annotation) of a `def` line."""
    fn = ast.parse(sig + "\n    pass\n").body[0]
    if not isinstance(fn, ast.FunctionDef):
        raise ValueError("not a def line")
    params = [(a.arg, ast.unparse(a.annotation) if a.annotation else "")
              for a in fn.args.posonlyargs + fn.args.args]
    if fn.args.vararg or fn.args.kwarg or fn.args.kwonlyargs:
        raise ValueError("*args, **kwargs and keyword-only parameters are not supported")
    return fn.name, params, ast.unparse(fn.returns) if fn.returns else ""


C_PROTO = re.compile(r"^\s*([A-Za-z_][\w\s\*]*?)\s*\b([A-Za-z_]\w*)\s*\(([^()]*)\)\s*$")


def c_signature(sig):
    """(name, [(param, type)], return type) of a C prototype without the ';'."""
    m = C_PROTO.match(sig)
    if not m:
        raise ValueError("not a C prototype `type name(params)`")
    ret, name, plist = m.group(1).strip(), m.group(2), m.group(3).strip()
    params = []
    if plist and plist != "void":
        for p in plist.split(","):
            pm = re.match(r"^(.*?)([A-Za-z_]\w*)\s*$", p.strip())
            if not pm or not pm.group(1).strip():
                raise ValueError("parameter %r needs a type and a name" % p.strip())
            params.append((pm.group(2), pm.group(1).strip()))
    return name, params, ret


def c_is_scalar(ctype):
    return "*" not in ctype and "[" not in ctype and all(
        w in C_SCALAR_WORDS for w in ctype.split())


# --------------------------------------------------------------------------- schema checks
def check_schema(task, where):
    errors = []

    def err(msg):
        errors.append("%s: %s" % (where, msg))

    if not isinstance(task, dict):
        return ["%s: not a JSON object" % where]
    missing = REQUIRED - task.keys()
    unknown = task.keys() - REQUIRED - OPTIONAL
    if missing:
        err("missing field(s) %s" % ", ".join(sorted(missing)))
    if unknown:
        err("unknown field(s) %s (known: %s)" % (", ".join(sorted(unknown)),
                                                 ", ".join(sorted(REQUIRED | OPTIONAL))))
    if missing:
        return errors
    for field in ("id", "language", "difficulty", "prompt", "entry_point", "signature", "reference"):
        if not isinstance(task[field], str) or not task[field].strip():
            err("'%s' must be a non-empty string" % field)
    if errors:
        return errors
    if not re.fullmatch(r"(py|c)-[a-z0-9]+(-[a-z0-9]+)*", task["id"]):
        err("id %r should look like py-name or c-name (lower case, dashes)" % task["id"])
    if task["language"] not in LANGUAGES:
        err("language %r is not one of %s" % (task["language"], ", ".join(LANGUAGES)))
    elif not task["id"].startswith({"python": "py-", "c": "c-"}[task["language"]]):
        err("id %r does not match language %s" % (task["id"], task["language"]))
    if task["difficulty"] not in DIFFICULTIES:
        err("difficulty %r is not one of %s" % (task["difficulty"], ", ".join(DIFFICULTIES)))
    for field, (lo, hi) in (("tests", VISIBLE_RANGE), ("hidden_tests", HIDDEN_RANGE)):
        tests = task[field]
        if not isinstance(tests, list) or not all(isinstance(t, str) and t.strip() for t in tests):
            err("'%s' must be a list of non-empty strings" % field)
        elif not lo <= len(tests) <= hi:
            err("'%s' has %d entries; expected %d to %d" % (field, len(tests), lo, hi))
        elif len(set(tests)) != len(tests):
            err("'%s' repeats a test" % field)
    if errors:
        return errors
    both = set(task["tests"]) & set(task["hidden_tests"])
    if both:
        err("tests both visible and hidden: %s" % "; ".join(sorted(both)))
    if "spec" in task:
        spec = task["spec"]
        if not isinstance(spec, dict) or not spec or spec.keys() - {"requires", "ensures"}:
            err("'spec' must be an object with 'requires' and/or 'ensures'")
            return errors
        for k, v in spec.items():
            if not isinstance(v, list) or not v or not all(isinstance(e, str) and e.strip() for e in v):
                err("spec.%s must be a non-empty list of expression strings" % k)
    if errors:
        return errors
    entry = task["entry_point"]
    if task["language"] == "python":
        errors += check_python_shape(task, err, entry)
    else:
        errors += check_c_shape(task, err, entry)
    return errors


def check_python_shape(task, err, entry):
    sig = task["signature"]
    try:
        name, params, ret = python_signature(sig)
    except (SyntaxError, ValueError) as e:
        err("signature %r: %s" % (sig, e))
        return []
    if name != entry:
        err("signature defines %s, entry_point is %s" % (name, entry))
    if "\n" in sig or not sig.startswith("def ") or not sig.endswith(":"):
        err("signature must be one `def ...:` line")
    if any(not ann for _, ann in params) or not ret:
        err("signature must annotate every parameter and the result")
    if not task["prompt"].startswith(sig + "\n"):
        err("prompt must start with the signature line")
    try:
        fn = ast.parse(task["prompt"]).body[0]
        if not isinstance(fn, ast.FunctionDef) or fn.name != entry or not ast.get_docstring(fn):
            err("prompt must be `def %s...:` followed by a docstring" % entry)
        elif len(fn.body) != 1:
            err("prompt must hold only the docstring, not a body")
    except SyntaxError as e:
        err("prompt does not parse: %s" % e)
    try:
        ref = ast.parse(task["reference"])
        defs = [n for n in ref.body if isinstance(n, ast.FunctionDef) and n.name == entry]
        if not defs:
            err("reference does not define %s" % entry)
        elif task["reference"].splitlines()[defs[0].lineno - 1] != sig:
            err("reference's def line differs from the signature")
    except SyntaxError as e:
        err("reference does not parse: %s" % e)
    for t in task["tests"] + task["hidden_tests"]:
        try:
            body = ast.parse(t).body
        except SyntaxError as e:
            err("test %r does not parse: %s" % (t, e.msg))
            continue
        if len(body) != 1 or not isinstance(body[0], ast.Assert):
            err("test %r must be one assert statement" % t)
        elif not any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == entry
                     for n in ast.walk(body[0])):
            err("test %r does not call %s" % (t, entry))
    if "spec" in task:
        known = {p for p, ann in params if ann in MODELLED_ANNOTATIONS}
        if ret in MODELLED_ANNOTATIONS:
            known.add("result")
        for kind in ("requires", "ensures"):
            for e in task["spec"].get(kind, []):
                for problem in spec_subset_errors(e, known, kind == "ensures"):
                    err("spec.%s %r: %s" % (kind, e, problem))
    return []


def check_c_shape(task, err, entry):
    sig = task["signature"]
    try:
        name, params, ret = c_signature(sig)
    except ValueError as e:
        err("signature %r: %s" % (sig, e))
        return []
    if name != entry:
        err("signature declares %s, entry_point is %s" % (name, entry))
    if not task["prompt"].endswith(sig + ";\n"):
        err("prompt must end with the prototype: signature followed by ';' and a newline")
    if not task["prompt"].lstrip().startswith(("/*", "//", "#include")):
        err("prompt must start with a comment (after any #include lines)")
    if (sig + " {") not in task["reference"]:
        err("reference must define the function as `%s {`" % sig)
    if re.search(r"\bmain\s*\(", task["reference"]):
        err("reference must not define main; the checker generates it")
    for t in task["tests"] + task["hidden_tests"]:
        if not re.search(r"\b%s\s*\(" % re.escape(entry), t):
            err("test %r does not call %s" % (t, entry))
        if ";" in t or "\n" in t:
            err("test %r must be a single C expression" % t)
    if "spec" in task:
        known = {p for p, ctype in params if c_is_scalar(ctype)}
        if c_is_scalar(ret) and ret != "void":
            known.add("result")
        for kind in ("requires", "ensures"):
            for e in task["spec"].get(kind, []):
                for problem in spec_subset_errors(e, known, kind == "ensures"):
                    err("spec.%s %r: %s" % (kind, e, problem))
    return []


# --------------------------------------------------------------------------- Python runs
# Runs in a fresh interpreter; reads one job as JSON on stdin, writes a JSON report on stdout.
PY_RUNNER = r'''
import ast, copy, json, sys
job = json.load(sys.stdin)
entry = job["entry_point"]
report = {"failures": [], "spec_checked": 0, "spec_skipped": 0, "spec_violations": [],
          "stub_survivors": []}
base = {"__name__": "task_reference"}
exec(compile(job["reference"], "<reference>", "exec"), base)
func = base[entry]

def run(test, ns):
    try:
        exec(compile(test, "<test>", "exec"), dict(ns))
        return None
    except AssertionError:
        return "assertion failed"
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e)

for test in job["tests"]:
    why = run(test, base)
    if why:
        report["failures"].append("%s  [%s]" % (test, why))

if job["stubs"]:
    stubs = [("returns None", lambda *a: None), ("returns 0", lambda *a: 0),
             ("returns 1", lambda *a: 1), ("returns -1", lambda *a: -1),
             ("returns True", lambda *a: True), ("returns False", lambda *a: False),
             ("returns ''", lambda *a: ""), ("returns []", lambda *a: []),
             ("returns {}", lambda *a: {}),
             ("returns its first argument", lambda *a: a[0] if a else None)]
    for label, stub in stubs:
        ns = dict(base)
        ns[entry] = stub
        if all(run(t, ns) is None for t in job["tests"]):
            report["stub_survivors"].append(label)

SPEC_ENV = {"__builtins__": {}, "abs": abs, "min": min, "max": max, "len": len, "sum": sum,
            "all": all, "any": any, "range": range, "int": int, "float": float, "bool": bool}
spec = job.get("spec") or {}
params = job["params"]
for test in job["tests"] if spec else []:
    node = ast.parse(test).body[0].test
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq)
            and isinstance(node.left, ast.Call) and isinstance(node.left.func, ast.Name)
            and node.left.func.id == entry and not node.left.keywords
            and not any(isinstance(a, ast.Starred) for a in node.left.args)
            and len(node.left.args) == len(params)):
        report["spec_skipped"] += 1
        continue
    args = [eval(compile(ast.Expression(a), "<arg>", "eval"), dict(base)) for a in node.left.args]
    expected = eval(compile(ast.Expression(node.comparators[0]), "<expected>", "eval"), dict(base))
    result = func(*copy.deepcopy(args))
    if result != expected:
        report["spec_violations"].append("cannot check the spec on %s: the reference returns %r"
                                         % (test, result))
        continue
    report["spec_checked"] += 1
    env = dict(SPEC_ENV)
    env.update(zip(params, args))
    for kind in ("requires", "ensures"):
        if kind == "ensures":
            env["result"] = result
        for expr in spec.get(kind, []):
            try:
                ok = eval(expr, dict(env))
            except Exception as e:
                ok = "%s: %s" % (type(e).__name__, e)
            if ok is not True:
                report["spec_violations"].append("%s %r on %s -> %r" % (kind, expr, test, ok))
print(json.dumps(report))
'''


def run_python_task(task):
    _, params, _ = python_signature(task["signature"])
    job = {"reference": task["reference"], "entry_point": task["entry_point"],
           "tests": task["tests"] + task["hidden_tests"], "spec": task.get("spec"),
           "params": [p for p, _ in params], "stubs": True}
    return run_python_job(PY_RUNNER, job)


def run_python_job(runner, job):
    try:
        proc = subprocess.run([sys.executable, "-I", "-c", runner], input=json.dumps(job),
                              capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, "timed out after %d s" % TIMEOUT_S
    if proc.returncode != 0:
        return None, "runner failed (exit %d): %s" % (proc.returncode, proc.stderr.strip()[-2000:])
    return json.loads(proc.stdout), None


# --------------------------------------------------------------------------- C runs
C_HEADERS = ["assert.h", "limits.h", "stdbool.h", "stddef.h", "stdint.h", "stdio.h", "stdlib.h",
             "string.h"]
_UBSAN = None


def cc_flags():
    """-std=c11 -Wall -Werror, plus UBSan when this compiler can link it (probed once)."""
    global _UBSAN
    base = ["-std=c11", "-Wall", "-Werror", "-O1", "-g"]
    if _UBSAN is None:
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "probe.c")
            with open(src, "w") as f:
                f.write("int main(void) { return 0; }\n")
            flags = ["-fsanitize=undefined", "-fno-sanitize-recover=all"]
            r = subprocess.run(["cc", *flags, src, "-o", os.path.join(d, "probe")],
                               capture_output=True)
            _UBSAN = flags if r.returncode == 0 else []
    return base + _UBSAN


def c_program(task):
    """Reference + a main that assert()s test number argv[1] (one run per test, so every
    failing test is reported, not only the first)."""
    out = ["#include <%s>" % h for h in C_HEADERS]
    out += ["", "/* reference */", task["reference"].rstrip(), "",
            "int main(int argc, char **argv) {",
            "  int which = argc > 1 ? atoi(argv[1]) : -1;",
            "  switch (which) {"]
    for i, t in enumerate(task["tests"] + task["hidden_tests"]):
        out.append("    case %d: assert(%s); break;" % (i, t))
    out += ["    default: return 2;", "  }", "  return 0;", "}", ""]
    return "\n".join(out)


def run_c_task(task):
    if shutil.which("cc") is None:
        return None, "no C compiler `cc` on PATH"
    tests = task["tests"] + task["hidden_tests"]
    report = {"failures": [], "spec_checked": 0, "spec_skipped": 0, "spec_violations": [],
              "stub_survivors": []}
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "task.c"), os.path.join(d, "task")
        with open(src, "w") as f:
            f.write(c_program(task))
        try:
            r = subprocess.run(["cc", *cc_flags(), src, "-o", exe], capture_output=True, text=True,
                               timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return None, "cc timed out"
        if r.returncode != 0:
            return None, "cc failed:\n" + r.stderr.strip()[-3000:]
        for i, t in enumerate(tests):
            try:
                p = subprocess.run([exe, str(i)], capture_output=True, text=True, timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                report["failures"].append("%s  [timed out]" % t)
                continue
            if p.returncode != 0:
                why = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
                report["failures"].append("%s  [%s]" % (t, why))
    if task.get("spec"):
        c_spec(task, tests, report)
    return report, None


C_CONSTANTS = {"INT_MAX": "2147483647", "INT_MIN": "(-2147483647 - 1)", "UINT_MAX": "4294967295",
               "true": "True", "false": "False", "NULL": "None"}


def c_to_python(expr):
    """A C test expression in Python syntax where that is a plain rewrite, else None."""
    s = re.sub(r"\((?:const\s+)?int\s*\[\d*\]\)\s*\{([^{}]*)\}", r"[\1]", expr)
    s = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]+\b", r"\1", s)
    s = re.sub(r"\b(%s)\b" % "|".join(C_CONSTANTS), lambda m: C_CONSTANTS[m.group(1)], s)
    if re.search(r"'|\"|sizeof|->|&&|\|\||!(?!=)", s):
        return None
    try:
        return ast.parse(s, mode="eval").body
    except SyntaxError:
        return None


def c_spec(task, tests, report):
    _, params, _ = c_signature(task["signature"])
    names = [p for p, _ in params]
    env0 = {"__builtins__": {}, "abs": abs, "min": min, "max": max, "len": len, "sum": sum,
            "all": all, "any": any, "range": range, "int": int, "float": float, "bool": bool}
    for t in tests:
        node = c_to_python(t)
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq)
                and isinstance(node.left, ast.Call) and isinstance(node.left.func, ast.Name)
                and node.left.func.id == task["entry_point"] and len(node.left.args) == len(names)):
            report["spec_skipped"] += 1
            continue
        try:
            args = [eval(compile(ast.Expression(a), "<arg>", "eval"), {"__builtins__": {}})
                    for a in node.left.args]
            result = eval(compile(ast.Expression(node.comparators[0]), "<expected>", "eval"),
                          {"__builtins__": {}})
        except Exception:
            report["spec_skipped"] += 1
            continue
        report["spec_checked"] += 1
        env = dict(env0)
        env.update(zip(names, args))
        for kind in ("requires", "ensures"):
            if kind == "ensures":
                env["result"] = result
            for expr in task["spec"].get(kind, []):
                try:
                    ok = eval(expr, dict(env))
                except Exception as e:
                    ok = "%s: %s" % (type(e).__name__, e)
                if ok is not True:
                    report["spec_violations"].append("%s %r on %s -> %r" % (kind, expr, t, ok))


# --------------------------------------------------------------------------- HumanEval-style
HE_RUNNER = r'''
import doctest, json, sys
job = json.load(sys.stdin)
report = {"failures": [], "doctests": 0, "stub_passes": False}
ns = {"__name__": "humaneval_task"}
exec(compile(job["prompt"] + job["canonical_solution"], "<solution>", "exec"), ns)
func = ns[job["entry_point"]]
finder = doctest.DocTestFinder(recurse=False)
runner = doctest.DocTestRunner(verbose=False, optionflags=doctest.ELLIPSIS)
for t in finder.find(func, job["entry_point"], globs=dict(ns)):
    runner.run(t, out=lambda s: report["failures"].append("doctest: " + s.strip()))
report["doctests"] = runner.tries
exec(compile(job["test"], "<test>", "exec"), ns)
try:
    ns["check"](func)
except Exception as e:
    report["failures"].append("check(candidate) failed: %s" % (repr(e) if str(e) else type(e).__name__))
try:
    ns["check"](lambda *a, **k: None)
    report["stub_passes"] = True
except Exception:
    pass
print(json.dumps(report))
'''


def check_humaneval(path, only, verbose):
    errors, count, doctests = [], 0, 0
    seen = set()
    for where, task in load_jsonl(path, errors):
        if only and task.get("task_id") != only:
            continue
        count += 1
        if not isinstance(task, dict) or set(task) != HUMANEVAL_FIELDS:
            got = sorted(task) if isinstance(task, dict) else type(task).__name__
            errors.append("%s: fields must be exactly %s; got %s" %
                          (where, ", ".join(sorted(HUMANEVAL_FIELDS)), got))
            continue
        if not all(isinstance(task[k], str) and task[k].strip() for k in HUMANEVAL_FIELDS):
            errors.append("%s: every field must be a non-empty string" % where)
            continue
        tid = task["task_id"]
        where = "%s (%s)" % (where, tid)
        if tid in seen:
            errors.append("%s: duplicate task_id" % where)
        seen.add(tid)
        if ">>>" not in task["prompt"]:
            errors.append("%s: prompt has no >>> examples" % where)
        if not re.search(r"^def %s\(" % re.escape(task["entry_point"]), task["prompt"], re.M):
            errors.append("%s: prompt does not define %s" % (where, task["entry_point"]))
        if not re.search(r"^def check\(candidate\):", task["test"], re.M):
            errors.append("%s: test does not define check(candidate)" % where)
        try:
            ast.parse(task["prompt"] + task["canonical_solution"])
            ast.parse(task["test"])
        except SyntaxError as e:
            errors.append("%s: prompt + canonical_solution or test does not parse: %s" % (where, e))
            continue
        report, why = run_python_job(HE_RUNNER, {k: task[k] for k in HUMANEVAL_FIELDS})
        if why:
            errors.append("%s: %s" % (where, why))
            continue
        doctests += report["doctests"]
        if report["doctests"] == 0:
            errors.append("%s: no doctest example was run" % where)
        errors += ["%s: %s" % (where, f) for f in report["failures"]]
        if report["stub_passes"]:
            errors.append("%s: check() passes for a stub returning None" % where)
        if verbose:
            print("  %-24s %d doctests, %s" % (tid, report["doctests"],
                                              "ok" if not report["failures"] else "FAILED"))
    return count, doctests, errors


# --------------------------------------------------------------------------- driver
def show(path):
    """path relative to the repository root when it lies inside it."""
    rel = os.path.relpath(os.path.abspath(path), ROOT)
    return path if rel.startswith("..") else rel


def load_jsonl(path, errors):
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except OSError as e:
        errors.append("%s: cannot read: %s" % (path, e.strerror))
        return []
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = "%s:%d" % (show(path), n)
        try:
            out.append((where, json.loads(line)))
        except json.JSONDecodeError as e:
            errors.append("%s: invalid JSON at column %d: %s" % (where, e.colno, e.msg))
    return out


def check_task(where, task):
    """(report or None, [errors]) for one synthesize.jsonl task."""
    errors = check_schema(task, where)
    if errors:
        return None, errors
    where = "%s (%s)" % (where, task["id"])
    run = run_python_task if task["language"] == "python" else run_c_task
    report, why = run(task)
    if why:
        return None, ["%s: %s" % (where, why)]
    errors += ["%s: reference fails test %s" % (where, f) for f in report["failures"]]
    errors += ["%s: spec: %s" % (where, v) for v in report["spec_violations"]]
    errors += ["%s: the tests cannot tell this stub from a solution: %s" % (where, s)
               for s in report["stub_survivors"]]
    if task.get("spec") and report["spec_checked"] == 0:
        errors.append("%s: has a spec, but no test of the form %s(args) == expected to check it on"
                      % (where, task["entry_point"]))
    return report, errors


def main():
    global TIMEOUT_S
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--synthesize", default=DEFAULT_SYNTH, help="our-schema JSONL (default: %(default)s)")
    ap.add_argument("--humaneval", default=DEFAULT_HUMANEVAL,
                    help="HumanEval-schema JSONL; '' to skip (default: %(default)s)")
    ap.add_argument("--only", help="check only the task with this id / task_id")
    ap.add_argument("--jobs", type=int, default=2, help="tasks checked in parallel (default: 2)")
    ap.add_argument("--timeout", type=int, default=TIMEOUT_S, help="seconds per task (default: 60)")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per task")
    args = ap.parse_args()
    TIMEOUT_S = args.timeout

    errors = []
    tasks = load_jsonl(args.synthesize, errors)
    ids = collections.Counter(t.get("id") for _, t in tasks if isinstance(t, dict))
    errors += ["%s: duplicate id %r (%d times)" % (show(args.synthesize), i, n)
               for i, n in sorted(ids.items(), key=str) if n > 1]
    if args.only:
        tasks = [(w, t) for w, t in tasks if isinstance(t, dict) and t.get("id") == args.only]

    counts = collections.Counter()
    spec_counts = collections.Counter()
    visible = hidden = spec_checked = spec_skipped = passed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [(w, t, pool.submit(check_task, w, t)) for w, t in tasks]
        for where, task, fut in futures:
            report, errs = fut.result()
            errors += errs
            if report is None:
                if args.verbose:
                    print("  %-30s FAILED" % task.get("id", where))
                continue
            passed += not errs
            key = (task["language"], task["difficulty"])
            counts[key] += 1
            spec_counts[key] += "spec" in task
            visible += len(task["tests"])
            hidden += len(task["hidden_tests"])
            spec_checked += report["spec_checked"]
            spec_skipped += report["spec_skipped"]
            if args.verbose:
                spec = ("spec held on %d call(s)" % report["spec_checked"]
                        if "spec" in task else "no spec")
                print("  %-30s %-6s %-8s %2d+%-2d tests  %s%s" % (
                    task["id"], task["language"], task["difficulty"], len(task["tests"]),
                    len(task["hidden_tests"]), spec, "  FAILED" if errs else ""))

    he_count = he_doctests = 0
    if args.humaneval:
        he_count, he_doctests, he_errors = check_humaneval(args.humaneval, args.only, args.verbose)
        errors += he_errors

    print("%s: %d of %d task(s) passed" % (show(args.synthesize), passed, len(tasks)))
    print("  %-8s %8s %8s %9s %7s %10s" % ("language", "trivial", "easy", "moderate", "total",
                                           "with spec"))
    for lang in LANGUAGES:
        row = [counts[(lang, d)] for d in DIFFICULTIES]
        print("  %-8s %8d %8d %9d %7d %10d" % (lang, *row, sum(row),
                                               sum(spec_counts[(lang, d)] for d in DIFFICULTIES)))
    row = [sum(counts[(l, d)] for l in LANGUAGES) for d in DIFFICULTIES]
    print("  %-8s %8d %8d %9d %7d %10d" % ("all", *row, sum(row), sum(spec_counts.values())))
    print("  tests: %d visible, %d hidden; spec evaluated on %d test call(s), %d call(s) not of "
          "the form f(args) == expected" % (visible, hidden, spec_checked, spec_skipped))
    if args.humaneval:
        print("%s: %d task(s) checked, %d doctest example(s)" % (
            show(args.humaneval), he_count, he_doctests))
    if errors:
        print("\n%d problem(s):" % len(errors), file=sys.stderr)
        for e in errors:
            print("  " + e, file=sys.stderr)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
