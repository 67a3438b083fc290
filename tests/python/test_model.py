"""vsynth.Model: tokenizer, generation (determinism, equality with `vsynth generate`), logits,
Python decoding hooks passed to generate(), and the GIL released while the engine works."""
import threading
import time

import pytest

import vsynth
from conftest import run_cli

PROMPT = "def add(a, b):\n    return"


def test_tokenize_round_trips_and_adds_bos_as_asked(default_model):
    ids = default_model.tokenize(PROMPT, add_special=False)
    assert ids and all(isinstance(t, int) for t in ids)
    assert default_model.detokenize(ids) == PROMPT
    with_bos = default_model.tokenize(PROMPT)
    assert len(with_bos) == len(ids) + 1 and with_bos[1:] == ids


def test_same_seed_same_text_other_seeds_differ(model):
    a = model.generate(PROMPT, max_tokens=24, temperature=1.0, seed=7, chat=False)
    b = model.generate(PROMPT, max_tokens=24, temperature=1.0, seed=7, chat=False)
    assert a["tokens"], "the model generated nothing"
    assert (a["text"], a["tokens"]) == (b["text"], b["tokens"])
    others = {model.generate(PROMPT, max_tokens=24, temperature=1.0, seed=s, chat=False)["text"]
              for s in (8, 9, 10)}
    assert others != {a["text"]}


def test_generate_equals_the_cli(default_model, vsynth_bin):
    # The default model writes text (the synthetic one writes bytes that are not UTF-8).
    r = default_model.generate(PROMPT, max_tokens=20, temperature=0.7, seed=3, chat=False)
    assert r["tokens"]
    cli = run_cli(vsynth_bin, "generate", "--model", default_model.info["path"], "--device", "cpu",
                  "--threads",
                  "1", "--raw", "--seed", "3", "--temperature", "0.7", "-n", "20", "--quiet",
                  "--prompt", PROMPT)
    assert cli.stdout == r["text"] + "\n"


def test_logits_are_a_numpy_row_whose_argmax_is_the_greedy_token(model):
    np = pytest.importorskip("numpy")
    logits = model.logits(PROMPT)
    assert isinstance(logits, np.ndarray) and logits.dtype == np.float32
    assert logits.shape == (model.info["vocab_size"],)
    g = model.generate(PROMPT, max_tokens=1, temperature=0.0, chat=False)
    assert g["tokens"] == [int(np.argmax(logits))]


def test_bad_arguments_are_python_errors(model):
    with pytest.raises(ValueError, match="max_tokens"):
        model.generate(PROMPT, max_tokens=0)
    with pytest.raises(ValueError, match="top_p"):
        model.generate(PROMPT, top_p=2.0)
    with pytest.raises(RuntimeError, match="no-such.gguf"):
        vsynth.Model("/nonexistent/no-such.gguf")


class BanText(vsynth.DecodingHook):
    """A 10-line constraint: the generated text never contains `banned`."""

    def __init__(self, banned):
        super().__init__()
        self.banned = banned
        self.calls = 0

    def after_sample(self, view, token, piece):
        self.calls += 1
        if self.banned in view.text + piece:
            return vsynth.Verdict.reject(f"{self.banned!r} is banned")
        return None


def test_a_python_hook_bans_a_substring(model):
    free = model.generate(PROMPT, max_tokens=32, temperature=1.0, seed=5, chat=False)
    banned = max(set(free["text"]) - {" "}, key=free["text"].count)  # its most used character
    hook = BanText(banned)
    held = model.generate(PROMPT, max_tokens=32, temperature=1.0, seed=5, chat=False,
                          hooks=[hook])
    assert banned in free["text"] and banned not in held["text"]
    assert held["rejections"] > 0 and hook.calls >= len(held["tokens"])


def test_a_mask_hook_bans_the_greedy_token(model):
    first = model.generate(PROMPT, max_tokens=1, temperature=0.0, chat=False)["tokens"][0]

    class NoFirst(vsynth.DecodingHook):
        def before_sample(self, view, mask):
            if view.n_generated == 0:
                mask.ban(first)

    other = model.generate(PROMPT, max_tokens=1, temperature=0.0, chat=False, hooks=[NoFirst()])
    assert other["tokens"] and other["tokens"][0] != first


def test_a_rollback_verdict_rolls_back_and_on_rollback_is_told(model):
    class RollOnce(vsynth.DecodingHook):
        def __init__(self):
            super().__init__()
            self.kept = []

        def after_sample(self, view, token, piece):
            if view.n_generated == 4 and not self.kept:
                return vsynth.Verdict.rollback(2, view.generated[2], "try again from 2")
            return vsynth.Verdict.accept()

        def on_rollback(self, kept):
            self.kept.append(kept)

    hook = RollOnce()
    r = model.generate(PROMPT, max_tokens=8, temperature=0.0, chat=False, hooks=[hook])
    assert hook.kept == [2] and r["rollbacks"] == 1


def test_a_raising_hook_ends_the_candidate_with_its_traceback(model):
    class Boom(vsynth.DecodingHook):
        def after_sample(self, view, token, piece):
            if view.n_generated == 3:
                raise ValueError("boom at token 3")

    r = model.generate(PROMPT, max_tokens=16, temperature=0.0, chat=False, hooks=[Boom()])
    assert r["finish"] == "hook" and len(r["tokens"]) == 3
    detail = r["finish_detail"]
    assert "Boom" in detail and "after_sample raised" in detail
    assert "Traceback (most recent call last)" in detail and "ValueError: boom at token 3" in detail
    # The model is fine afterwards.
    assert model.generate(PROMPT, max_tokens=4, temperature=0.0, chat=False)["tokens"]


def test_a_hook_returning_a_non_verdict_or_keeping_the_view_is_reported(model):
    class Wrong(vsynth.DecodingHook):
        def after_sample(self, view, token, piece):
            return "yes"

    r = model.generate(PROMPT, max_tokens=8, chat=False, hooks=[Wrong()])
    assert r["finish"] == "hook" and "returned a str, not a vsynth.Verdict" in r["finish_detail"]

    class Keeper(vsynth.DecodingHook):
        def __init__(self):
            super().__init__()
            self.view = None

        def after_sample(self, view, token, piece):
            if self.view is not None:
                self.view.text  # the previous call's view: no longer valid
            self.view = view

    r = model.generate(PROMPT, max_tokens=8, chat=False, hooks=[Keeper()])
    assert r["finish"] == "hook" and "valid only during the call" in r["finish_detail"]


def test_the_gil_is_released_while_the_engine_works(model):
    # A Python thread counts while generate() runs; with the GIL held by generate it could not
    # run at all between the call's start and end (pure C++ work, no hooks).
    stamps = []
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            stamps.append(time.perf_counter())
            time.sleep(0)

    t = threading.Thread(target=spin)
    t.start()
    try:
        t0 = time.perf_counter()
        r = model.generate(PROMPT * 4, max_tokens=400, temperature=1.0, seed=1, chat=False)
        t1 = time.perf_counter()
    finally:
        stop.set()
        t.join()
    assert t1 - t0 > 0.02, f"generate took {t1 - t0:.4f} s: too short to tell"
    middle = [s for s in stamps if t0 + 0.25 * (t1 - t0) < s < t0 + 0.75 * (t1 - t0)]
    assert len(middle) > 10, (len(middle), r["decode_ms"])
