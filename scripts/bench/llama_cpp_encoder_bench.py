#!/usr/bin/env python3
"""llama.cpp's side of tests/bench/bench_encoder.cpp: BERT sentence embeddings (all-MiniLM-L6-v2
as a GGUF made by the converter of llama-cpp-python's sdist, scripts/bench/setup-encoder-gguf.sh)
through llama-cpp-python's embedding path, on the token ids the bench gives.

  .venv-bench/bin/python scripts/bench/llama_cpp_encoder_bench.py MODEL.gguf CHUNKS.json OUT.json \
      [--threads 2] [--repeats 3] [--n-batch 2048] [--golden tests/data/golden/encoder_minilm.json]

CHUNKS.json holds {"chunks": [[ids...], ...]}: the WordPiece ids (with [CLS]/[SEP]) our encoder
embeds, so both sides run the same tokens (llama.cpp's own tokenizer is not involved).
`embed_ids` is Llama.embed (llama_cpp/llama.py) with the tokenizing step removed: sequences are
packed into one llama_batch until the next would pass n_batch tokens, each batch decoded in one
llama_decode (n_ubatch = n_batch: BERT is non-causal, so a batch must fit one ubatch), pooled
by llama.cpp (mean, as the model's sentence-transformers config says) and L2-normalised.
Timing: the best of `--repeats` passes over all chunks (seconds). OUT.json gets the seconds,
the embeddings of the last pass and, with --golden, the cosine of llama.cpp's embedding to the
float64 golden on every golden snippet (min and mean).
"""
from __future__ import annotations

import argparse
import json
import math
import time


def embed_ids(llm, llama_cpp, seqs: list[list[int]], n_batch: int) -> list[list[float]]:
    """Llama.embed over token id lists (pooled, L2-normalised), as llama-cpp-python batches."""
    n_embd = llm.n_embd()
    n_seq_max = llm.context_params.n_seq_max
    out: list[list[float]] = []
    batch = llm._batch
    batch.reset()

    def decode(count: int) -> None:
        llm._ctx.kv_cache_clear()
        llm._ctx.decode(batch)
        batch.reset()
        for i in range(count):
            e = llama_cpp.llama_get_embeddings_seq(llm._ctx.ctx, i)[:n_embd]
            norm = math.sqrt(sum(v * v for v in e)) or 1.0
            out.append([v / norm for v in e])

    tokens_in, seqs_in = 0, 0
    for ids in seqs:
        if len(ids) > n_batch:
            raise ValueError(f"a sequence of {len(ids)} tokens exceeds n_batch {n_batch}")
        if tokens_in + len(ids) > n_batch or seqs_in >= n_seq_max:
            decode(seqs_in)
            tokens_in, seqs_in = 0, 0
        batch.add_sequence(ids, seqs_in, True)
        tokens_in += len(ids)
        seqs_in += 1
    if seqs_in:
        decode(seqs_in)
    return out


def cosine(a, b) -> float:
    ab = sum(x * y for x, y in zip(a, b))
    aa = sum(x * x for x in a)
    bb = sum(y * y for y in b)
    return ab / math.sqrt(aa * bb)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("chunks")
    ap.add_argument("out")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--n-batch", type=int, default=2048)
    ap.add_argument("--golden", default="")
    args = ap.parse_args()

    import llama_cpp
    from llama_cpp import Llama

    chunks = json.load(open(args.chunks))["chunks"]
    t0 = time.perf_counter()
    llm = Llama(model_path=args.model, embedding=True, n_ctx=args.n_batch, n_batch=args.n_batch,
                n_ubatch=args.n_batch, n_threads=args.threads, n_threads_batch=args.threads,
                pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN, verbose=False)
    load_s = time.perf_counter() - t0
    result = {"llama_cpp_python": llama_cpp.__version__, "model": args.model,
              "threads": args.threads, "n_batch": args.n_batch, "load_s": load_s,
              "chunks": len(chunks), "tokens": sum(len(c) for c in chunks)}

    if args.golden:
        cases = json.load(open(args.golden))["cases"]
        got = embed_ids(llm, llama_cpp, [c["ids"] for c in cases], args.n_batch)
        cos = [cosine(g, c["embedding"]) for g, c in zip(got, cases)]
        result["golden_cosine"] = {"cases": len(cos), "min": min(cos),
                                   "mean": sum(cos) / len(cos)}

    best, emb = math.inf, []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        emb = embed_ids(llm, llama_cpp, chunks, args.n_batch)
        best = min(best, time.perf_counter() - t0)
    result["seconds"] = best
    result["chunks_per_s"] = len(chunks) / best
    result["embeddings"] = emb
    json.dump(result, open(args.out, "w"))
    msg = f"llama.cpp {args.threads} thread(s): {len(chunks) / best:.2f} chunks/s"
    if "golden_cosine" in result:
        g = result["golden_cosine"]
        msg += f"; golden cosine min {g['min']:.6f} mean {g['mean']:.6f} ({g['cases']} snippets)"
    print(msg, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
