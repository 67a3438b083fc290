"""vsynth.Pipeline: records as `vsynth run` writes them, tasks from dicts or a JSONL file, runs
again, early exit, and bad input as Python errors."""
import json

import pytest

import vsynth
from conftest import run_cli


def without_timings(x):
    """A record without its wall-clock figures (keys ending in _ms, tokens_per_s)."""
    if isinstance(x, dict):
        return {k: without_timings(v) for k, v in x.items()
                if not (k.endswith("_ms") or k.endswith("_per_s"))}
    if isinstance(x, list):
        return [without_timings(v) for v in x]
    return x


@pytest.fixture
def anchor(root):
    return vsynth.Pipeline(str(root / "pipelines" / "anchor.yaml"))


@pytest.fixture
def tasks_file(root):
    return root / "examples" / "tasks" / "completion.jsonl"


def test_records_equal_the_cli_run(anchor, tasks_file, root, vsynth_bin, tmp_path):
    tasks = [json.loads(line) for line in tasks_file.read_text().splitlines() if line.strip()]
    got = {r["id"]: r for r in anchor.run(tasks)}
    out = tmp_path / "results.jsonl"
    run_cli(vsynth_bin, "run", str(root / "pipelines" / "anchor.yaml"), "--input",
            str(tasks_file), "--output", str(out), "--quiet")
    cli = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(got) == set(cli) == {t["id"] for t in tasks}
    for k in got:
        assert without_timings(got[k]) == without_timings(cli[k]), k
    assert all("anchor" in r["facets"] for r in got.values())


def test_a_jsonl_path_and_a_second_run_give_the_same_records(anchor, tasks_file):
    first = sorted((without_timings(r) for r in anchor.run(str(tasks_file))), key=lambda r: r["id"])
    second = sorted((without_timings(r) for r in anchor.run(tasks_file)), key=lambda r: r["id"])
    assert first and first == second


def test_dropping_the_iterator_early_leaves_the_pipeline_usable(anchor, tasks_file):
    run = anchor.run(tasks_file)
    next(run)
    del run  # cancels and waits
    assert len(list(anchor.run(tasks_file))) == len(tasks_file.read_text().splitlines())


def test_one_run_at_a_time(anchor, tasks_file):
    run = anchor.run(tasks_file)
    with pytest.raises(RuntimeError, match="already running"):
        anchor.run(tasks_file)
    list(run)
    assert list(anchor.run(tasks_file))


def test_bad_tasks_are_named(anchor):
    with pytest.raises(ValueError, match=r"tasks\[1\]: no task id"):
        anchor.run([{"id": "a", "source": ""}, {"source": ""}])
    with pytest.raises(ValueError, match=r"tasks\[1\]: id `a` repeats"):
        anchor.run([{"id": "a"}, {"id": "a"}])
    with pytest.raises(TypeError, match=r"tasks\[0\]: a task is a dict"):
        anchor.run([["not", "a", "dict"]])


def test_a_bad_pipeline_lists_its_problems_with_positions(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("pipeline: bad\nstages:\n  a: { use: ast.anchr }\nedges:\n  - a -> out\n")
    with pytest.raises(ValueError, match=r"bad.yaml:3:\d+.*ast\.anchr"):
        vsynth.Pipeline(str(bad))


def test_kinds_lists_hook_python():
    kinds = vsynth.kinds()
    assert "hook.python" in kinds["resources"] and "generate.llm" in kinds["stages"]
