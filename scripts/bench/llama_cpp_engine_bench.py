#!/usr/bin/env python3
"""llama.cpp's side of tests/bench/bench_engine.cpp: decode and prefill tokens/s for one GGUF,
batch 1, through llama-cpp-python (the .venv-bench environment scripts/golden/regen.sh makes).

  .venv-bench/bin/python scripts/bench/llama_cpp_engine_bench.py MODEL TOKENS.json OUT.json \
      [--threads 2] [--contexts 512,1024,2048,4096] [--decode 32] [--repeats 2]

TOKENS.json holds {"tokens": [...]} (the bench writes the same prompt it feeds our engine).
For each context C: prefill = the first C tokens evaluated from an empty cache (n_batch 512,
the llama.cpp default), decode = `--decode` single-token evaluations right after that prefill
(greedy continuation is not needed for timing: the next prompt tokens are fed). The best of
`--repeats` runs is kept for each figure; the machine is shared.
"""
from __future__ import annotations

import argparse
import json
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("tokens")
    ap.add_argument("out")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--contexts", default="512,1024,2048,4096")
    ap.add_argument("--decode", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()

    import llama_cpp
    from llama_cpp import Llama

    tokens = json.load(open(args.tokens))["tokens"]
    contexts = [int(c) for c in args.contexts.split(",")]
    n_ctx = max(contexts) + args.decode
    assert len(tokens) >= n_ctx, "prompt too short"
    llm = Llama(model_path=args.model, n_ctx=n_ctx, n_threads=args.threads,
                n_threads_batch=args.threads, n_batch=512, logits_all=False, verbose=False)
    rows = []
    for c in contexts:
        best_pre, best_dec = 0.0, 0.0
        for _ in range(args.repeats):
            llm.reset()
            llm._ctx.kv_cache_clear() if hasattr(llm._ctx, "kv_cache_clear") else None
            t0 = time.perf_counter()
            llm.eval(tokens[:c])
            t1 = time.perf_counter()
            for i in range(args.decode):
                llm.eval([tokens[c + i]])
            t2 = time.perf_counter()
            best_pre = max(best_pre, c / (t1 - t0))
            best_dec = max(best_dec, args.decode / (t2 - t1))
        rows.append({"context": c, "prefill_tps": best_pre, "decode_tps": best_dec})
        print(f"llama.cpp ctx {c}: prefill {best_pre:.1f} t/s, decode {best_dec:.2f} t/s", flush=True)
    json.dump({"llama_cpp_python": llama_cpp.__version__, "threads": args.threads,
               "decode_tokens": args.decode, "rows": rows}, open(args.out, "w"), indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
