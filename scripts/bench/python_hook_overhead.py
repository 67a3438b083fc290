#!/usr/bin/env python3
"""Per-token cost of a Python decoding hook (hook_api.h's adapter): the same greedy generation
with no hook and with no-op Python hooks, interleaved, reported per generated token.

  PYTHONPATH=build/python .venv-python/bin/python scripts/bench/python_hook_overhead.py \
      [--model models/gemma-3-270m-q4_k_m.gguf] [--tokens 128] [--repeats 5] [--threads 2] \
      [--out python_hook_overhead.json]

Configurations (greedy, so every one generates the same tokens):
  none            no hook
  base_only       a DecodingHook subclass overriding nothing (the adapter skips every call)
  after_sample    a no-op after_sample (one GIL hand-over and one Python call per token)
  both            no-op before_sample and after_sample (two of each per token)
  reads_text      after_sample reading view.text (the usual constraint's first line)
Each repeat runs every configuration once, in turn; the figure kept is the median over repeats
of decode_ms / steps. The table gives us/token and the difference to `none`.
"""
import argparse
import json
import statistics
import sys

import vsynth


class BaseOnly(vsynth.DecodingHook):
    pass


class AfterOnly(vsynth.DecodingHook):
    def after_sample(self, view, token, piece):
        return None


class Both(vsynth.DecodingHook):
    def before_sample(self, view, mask):
        pass

    def after_sample(self, view, token, piece):
        return None


class ReadsText(vsynth.DecodingHook):
    def after_sample(self, view, token, piece):
        if "\x00" in view.text:
            return vsynth.Verdict.reject("nul")
        return None


CONFIGS = {"none": None, "base_only": BaseOnly, "after_sample": AfterOnly, "both": Both,
           "reads_text": ReadsText}
PROMPT = "def fibonacci(n: int) -> int:\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="")
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="python_hook_overhead.json")
    args = ap.parse_args()

    model = vsynth.Model(args.model, device="cpu", threads=args.threads)
    per_token = {name: [] for name in CONFIGS}
    texts = {}
    model.generate(PROMPT, max_tokens=8, temperature=0.0, chat=False)  # warm-up
    for _ in range(args.repeats):
        for name, cls in CONFIGS.items():
            hooks = [] if cls is None else [cls()]
            r = model.generate(PROMPT, max_tokens=args.tokens, temperature=0.0, chat=False,
                               stop=[], hooks=hooks)
            per_token[name].append(1000.0 * r["decode_ms"] / max(1, r["steps"]))
            texts.setdefault(name, r["text"])
    if len(set(texts.values())) != 1:
        print("error: the configurations generated different text", file=sys.stderr)
        return 1

    base = statistics.median(per_token["none"])
    rows = []
    print(f"model {model.info['path']} ({model.info['backend']}), {args.tokens} tokens, "
          f"{args.repeats} repeats, median us/token")
    print(f"{'config':<14}{'us/token':>12}{'overhead us':>14}{'ratio':>9}")
    for name in CONFIGS:
        med = statistics.median(per_token[name])
        rows.append({"config": name, "us_per_token": round(med, 2),
                     "overhead_us": round(med - base, 2), "ratio": round(med / base, 4),
                     "samples_us": [round(x, 2) for x in per_token[name]]})
        print(f"{name:<14}{med:>12.1f}{med - base:>14.1f}{med / base:>9.3f}")
    with open(args.out, "w") as f:
        json.dump({"model": model.info, "tokens": args.tokens, "repeats": args.repeats,
                   "threads": args.threads, "configs": rows}, f, indent=2)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
