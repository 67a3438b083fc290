"""hook.python: a Python constraint inside generate.llm from a pipeline's YAML, in a Python host
(vsynth.Pipeline) and in `vsynth run` (embedded interpreter); a hook that raises ends its
candidate with the traceback, never the item or the run."""
import json
import textwrap

import vsynth
from conftest import run_cli

# A constraint in 20 lines: the generated text never contains BANNED (a tool's output, say).
BAN_HOOK = '''
import vsynth

BANNED = {banned!r}


class BanText(vsynth.DecodingHook):
    """Rejects any token that would make the text contain BANNED."""

    def __init__(self):
        super().__init__()
        self.rejected = 0

    def after_sample(self, view, token, piece):
        if BANNED in view.text + piece:
            self.rejected += 1
            return vsynth.Verdict.reject("banned: " + BANNED)
        return vsynth.Verdict.accept()
'''

RAISING_HOOK = '''
import vsynth


class Flaky(vsynth.DecodingHook):
    def after_sample(self, view, token, piece):
        if view.n_generated == 2:
            {}["missing"]  # KeyError on the third token
        return None
'''

TASKS = [{"id": "t1", "language": "python", "prompt": "def add(a, b):\n    return"},
         {"id": "t2", "language": "python", "prompt": "def sub(a, b):\n    return"}]


def pipeline_yaml(tmp_path, golden_path, hook_dir, hook):
    hooks_line = "" if hook is None else (
        f"  py: {{ use: hook.python, with: {{ module: {hook[0]}, class: {hook[1]}, "
        f"path: '{hook_dir}' }} }}\n")
    text = (
        "pipeline: py-hook\n"
        "resources:\n"
        f"  coder: {{ use: model.gguf, with: {{ path: '{golden_path}', device: cpu, threads: 1 }} }}\n"
        + hooks_line +
        "stages:\n"
        "  generate:\n"
        "    use: generate.llm\n"
        "    with: { model: coder, max_new_tokens: 24, temperature: 1.0, seed: 11, n_candidates: 2"
        + ("" if hook is None else ", hooks: [py]") + " }\n"
        "edges:\n"
        "  - generate -> out\n")
    path = tmp_path / f"pipeline-{hook[1] if hook else 'free'}.yaml"
    path.write_text(text)
    return path


def candidates(records):
    return {r["id"]: r["facets"]["candidates"]["candidates"] for r in records}


def cli_records(vsynth_bin, pipeline, tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    out = tmp_path / f"out-{pipeline.stem}.jsonl"
    run_cli(vsynth_bin, "run", str(pipeline), "--input", str(tasks), "--output", str(out),
            "--quiet")
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_a_python_constraint_runs_inside_generate_llm(tmp_path, golden_path, hook_dir, vsynth_bin):
    free_yaml = pipeline_yaml(tmp_path, golden_path, hook_dir, None)
    free = candidates(vsynth.Pipeline(str(free_yaml)).run(TASKS))
    texts = "".join(c["text"] for cs in free.values() for c in cs)
    banned = max(set(texts) - {" "}, key=texts.count)  # the character the model writes most
    (hook_dir / "bans.py").write_text(BAN_HOOK.format(banned=banned))
    held_yaml = pipeline_yaml(tmp_path, golden_path, hook_dir, ("bans", "BanText"))

    hosted = candidates(vsynth.Pipeline(str(held_yaml)).run(TASKS))  # this interpreter
    embedded = candidates(cli_records(vsynth_bin, held_yaml, tmp_path))  # vsynth run's own
    for got in (hosted, embedded):
        assert set(got) == {"t1", "t2"}
        for cs in got.values():
            assert len(cs) == 2 and all(banned not in c["text"] for c in cs)
        assert sum(c["rejections"] for cs in got.values() for c in cs) > 0
    assert {k: [c["text"] for c in v] for k, v in hosted.items()} == \
        {k: [c["text"] for c in v] for k, v in embedded.items()}


def test_a_raising_hook_ends_its_candidate_not_the_run(tmp_path, golden_path, hook_dir,
                                                        vsynth_bin):
    (hook_dir / "flaky.py").write_text(textwrap.dedent(RAISING_HOOK))
    yaml = pipeline_yaml(tmp_path, golden_path, hook_dir, ("flaky", "Flaky"))
    for records in (list(vsynth.Pipeline(str(yaml)).run(TASKS)),
                    cli_records(vsynth_bin, yaml, tmp_path)):
        assert sorted(r["id"] for r in records) == ["t1", "t2"]
        for r in records:
            assert r["status"] != "error" and "error" not in r
            for c in r["facets"]["candidates"]["candidates"]:
                assert c["finish"] == "hook" and c["tokens"] == 2
                detail = c["finish_detail"]
                assert "hook.python `flaky.Flaky`: after_sample raised" in detail
                assert "Traceback (most recent call last)" in detail
                assert "flaky.py" in detail and "KeyError: 'missing'" in detail


def test_a_missing_class_or_module_fails_before_the_run(tmp_path, golden_path, hook_dir):
    (hook_dir / "empty.py").write_text("x = 1\n")
    for hook, message in ((("empty", "Nope"), "has no `Nope`"),
                          (("no_such_module", "X"), "cannot import Python module `no_such_module`")):
        yaml = pipeline_yaml(tmp_path, golden_path, hook_dir, hook)
        try:
            vsynth.Pipeline(str(yaml))
        except RuntimeError as e:
            assert message in str(e) and "py" in str(e)
        else:
            raise AssertionError(f"{hook} built")


BEGIN_HOOK = '''
import vsynth


class Told(vsynth.DecodingHook):
    """Stops at once, saying what begin() was told about its candidate."""

    def begin(self, info):
        self.info = info

    def after_sample(self, view, token, piece):
        i = self.info
        return vsynth.Verdict.stop(f"{i['task_id']} {i['language']} {i['mode']} "
                                   f"c{i['candidate']} a{i['attempt']} {i['prefix'][:8]!r}")
'''


def test_begin_is_told_about_the_candidate(tmp_path, golden_path, hook_dir):
    (hook_dir / "told.py").write_text(BEGIN_HOOK)
    yaml = pipeline_yaml(tmp_path, golden_path, hook_dir, ("told", "Told"))
    got = candidates(vsynth.Pipeline(str(yaml)).run(TASKS))
    for task in TASKS:
        for c, cand in enumerate(got[task["id"]]):
            assert cand["finish"] == "hook" and cand["tokens"] == 0
            assert cand["finish_detail"].startswith(f"{task['id']} python complete c{c} a1 ")


def test_records_do_not_depend_on_items_in_flight(tmp_path, golden_path, hook_dir):
    # The hook runs on generate.llm's workers, one GIL for all: one item at a time or all at
    # once, every candidate's text and verdicts are the same.
    (hook_dir / "bans.py").write_text(BAN_HOOK.format(banned="c"))
    yaml = pipeline_yaml(tmp_path, golden_path, hook_dir, ("bans", "BanText"))
    serial = tmp_path / "serial.yaml"
    serial.write_text(yaml.read_text() + "max_in_flight: 1\n")
    tasks = [{"id": f"t{i}", "language": "python", "prompt": f"def f{i}(x):\n    return"}
             for i in range(8)]

    def texts(path):
        got = candidates(vsynth.Pipeline(str(path)).run(tasks))
        return {k: [(c["text"], c["rejections"], c["finish"]) for c in v] for k, v in got.items()}

    many = texts(yaml)
    assert len(many) == 8 and many == texts(serial)
