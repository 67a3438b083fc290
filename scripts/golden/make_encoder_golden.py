#!/usr/bin/env python3
"""Golden embeddings for the BERT sentence encoder (kernels/encoder/bert.h).

Regenerate (from the repository root; needs models/all-MiniLM-L6-v2 from
scripts/setup-embedder.sh and `tokenizers` + numpy in .venv-golden):

    .venv-golden/bin/pip install tokenizers==0.23.3   # once (requirements-encoder.txt pins it)
    .venv-golden/bin/python scripts/golden/make_encoder_golden.py

or `scripts/golden/regen.sh --encoder`. Writes tests/data/golden/encoder_minilm.json (111 cases,
~0.55 MB, ~30 s on one core).

What it computes: a float64 numpy forward pass of all-MiniLM-L6-v2 read straight from
model.safetensors (struct + json, no torch), the same formula as bert.h:
    x = word[ids] + pos[0..n) + type[0];  x = LN(x)
    per layer: x = LN(x + Wo . MHA(x));  x = LN(x + W2 . gelu_erf(W1 x))
    e = mean over tokens of x;  e /= |e|
on >= 100 snippets: pieces of the code files in tests/data/golden/corpus/ and prose lines. The
token ids come from HF `tokenizers` on the model's own tokenizer.json (no padding; truncated at
256 tokens, what sentence-transformers uses for this model, and a few pieces at the model's 512
positions), so the golden pins the forward pass alone; the WordPiece tokenizer has its own
golden. Embeddings are stored with 7 significant digits (float32 precision).
"""

import argparse
import hashlib
import json
import math
import struct
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "models" / "all-MiniLM-L6-v2"
CORPUS = ROOT / "tests" / "data" / "golden" / "corpus"
OUT = ROOT / "tests" / "data" / "golden" / "encoder_minilm.json"

# Code files cut into pieces of these many lines, in turn (varied lengths: 3 to 40 lines).
PIECE_LINES = [6, 12, 3, 20, 9, 40, 15, 5]
CODE_FILES = [
    "RateLimiter.java",
    "event_bus.js",
    "interval_tree.py",
    "lru_cache.cpp",
    "result_pipeline.ts",
    "ring_buffer.c",
    "tokenizer_trie.rs",
    "worker_pool.go",
]
# Whole files encoded at the model's full 512 positions (the positions past 256 are covered).
LONG_FILES = ["tokenizer_trie.rs", "RateLimiter.java"]

PROSE = [
    "Returns the number of elements currently stored in the buffer.",
    "Find the function that parses the configuration file and reports errors with line numbers.",
    "A least-recently-used cache evicts the entry that has not been read for the longest time.",
    "The worker pool shuts down gracefully once every queued job has finished.",
    "How do I split a camelCase identifier into words?",
    "Compute the intersection of two sorted interval lists.",
    "retry the HTTP request with exponential backoff and jitter",
    "Thread-safe ring buffer with a fixed capacity; writers block when it is full.",
    "This module tokenizes source code for the search index.",
    "The quick brown fox jumps over the lazy dog.",
    "Normalise the vector to unit length before computing cosine similarity.",
    "Élève café naïve résumé — accents are stripped by the BERT normalizer.",
    "Emit an event to every subscriber registered for its topic, in subscription order.",
    "Read a JSON lines file and yield one record per line, skipping blank lines.",
    "Rate limiter: token bucket refilled at a steady rate, with bursts up to the capacity.",
    "Merge overlapping ranges and return them sorted by start.",
    "A trie maps string prefixes to the longest matching vocabulary entry.",
    "Validate the user's input and raise a ValueError naming the bad field.",
    "The result type carries either a value or an error, never both.",
    "Sort the records by timestamp, then by id to break ties deterministically.",
    "open the file, read it line by line, and count the words",
    "Binary search over a sorted array; returns the insertion point when absent.",
    "Database connection pooling reduces the latency of short queries.",
    "Serialize the index to disk so the next run starts warm.",
    "Convert a temperature from Celsius to Fahrenheit.",
    "Wait for all goroutines to finish, then close the results channel.",
    "中文分词 and 日本語 text mixed with English words.",
    "TODO: handle the empty input case before dividing by the length!",
    "x",
    "Why does the cache return stale values after an update?",
    "Parse command-line flags: --threads N, --verbose, and a positional path.",
    "The embeddings of similar functions lie close together in vector space.",
    "Look up the user's profile by email address and cache the result for five minutes.",
    "Tokens are counted with the model's own tokenizer when one is given.",
    "Split long functions into pieces and repeat the signature in each one.",
    "A heap-allocated node is freed when its reference count drops to zero.",
    "Schedule the task on the thread pool and return a future for its result.",
    "Escape HTML special characters before inserting user text into the page.",
    "Checks that the checksum of the downloaded archive matches the pinned sha256.",
    "Iterate over the dictionary's keys in sorted order.",
    "The garbage collector pauses every thread while it marks reachable objects.",
    "Compress the log files older than seven days and delete those older than thirty.",
    "Which function handles the websocket reconnect after a timeout?",
    "Matrix multiplication with tiling so that each block stays in the L2 cache.",
    "Return early when the list is empty; otherwise take the first element.",
    "Unicode: naïve façade coöperate Ångström — and emoji 🙂 too.",
    "Deduplicate near-identical code blocks by comparing their shingles.",
    "An inverted index maps each term to the list of documents containing it.",
    "Reciprocal rank fusion adds one over the rank plus sixty for every list.",
    "The parser reports file:line:col and what would have been valid.",
    "Graceful degradation: fall back to lexical search if the encoder cannot load.",
    "Lock the mutex, push the item onto the queue, and notify one waiting consumer.",
]


def read_safetensors(path):
    """name -> float64 array (F32 tensors; the I64 position_ids is skipped)."""
    data = path.read_bytes()
    (n,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, t in header.items():
        if name == "__metadata__" or t["dtype"] != "F32":
            continue
        b, e = t["data_offsets"]
        arr = np.frombuffer(data, dtype="<f4", count=(e - b) // 4, offset=base + b)
        out[name] = arr.reshape(t["shape"]).astype(np.float64)
    return out, hashlib.sha256(data).hexdigest()


def layer_norm(x, w, b, eps):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def gelu_erf(x):
    erf = np.array([math.erf(v) for v in (x.ravel() / math.sqrt(2.0))]).reshape(x.shape)
    return 0.5 * x * (1.0 + erf)


def linear(x, W, name):
    return x @ W[name + ".weight"].T + W[name + ".bias"]


def embed(W, cfg, ids):
    eps = cfg["layer_norm_eps"]
    heads = cfg["num_attention_heads"]
    n = len(ids)
    x = (
        W["embeddings.word_embeddings.weight"][ids]
        + W["embeddings.position_embeddings.weight"][:n]
        + W["embeddings.token_type_embeddings.weight"][0]
    )
    x = layer_norm(x, W["embeddings.LayerNorm.weight"], W["embeddings.LayerNorm.bias"], eps)
    hd = x.shape[1] // heads
    for layer in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{layer}."
        q = linear(x, W, p + "attention.self.query").reshape(n, heads, hd).transpose(1, 0, 2)
        k = linear(x, W, p + "attention.self.key").reshape(n, heads, hd).transpose(1, 0, 2)
        v = linear(x, W, p + "attention.self.value").reshape(n, heads, hd).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1) / math.sqrt(hd)  # [heads, n, n]
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        s /= s.sum(axis=-1, keepdims=True)
        ctx = (s @ v).transpose(1, 0, 2).reshape(n, heads * hd)
        a = linear(ctx, W, p + "attention.output.dense")
        x = layer_norm(
            x + a,
            W[p + "attention.output.LayerNorm.weight"],
            W[p + "attention.output.LayerNorm.bias"],
            eps,
        )
        h = gelu_erf(linear(x, W, p + "intermediate.dense"))
        o = linear(h, W, p + "output.dense")
        x = layer_norm(
            x + o, W[p + "output.LayerNorm.weight"], W[p + "output.LayerNorm.bias"], eps
        )
    e = x.mean(axis=0)
    return e / np.linalg.norm(e)


def snippets():
    """(name, text, max_length) for every case, in a fixed order."""
    out = []
    for fname in CODE_FILES:
        lines = (CORPUS / fname).read_text(encoding="utf-8").splitlines(keepends=True)
        i, j = 0, 0
        while i < len(lines):
            count = PIECE_LINES[j % len(PIECE_LINES)]
            piece = "".join(lines[i : i + count])
            if piece.strip():
                out.append((f"{fname}:{i + 1}-{min(i + count, len(lines))}", piece, 256))
            i += count
            j += 1
    for fname in LONG_FILES:
        out.append((f"{fname}:whole", (CORPUS / fname).read_text(encoding="utf-8"), 512))
    for k, line in enumerate(PROSE):
        out.append((f"prose:{k}", line, 256))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()

    import tokenizers

    cfg = json.loads((MODEL / "config.json").read_text())
    W, sha = read_safetensors(MODEL / "model.safetensors")
    tok = tokenizers.Tokenizer.from_file(str(MODEL / "tokenizer.json"))
    tok.no_padding()

    cases = []
    for name, text, max_len in snippets():
        tok.enable_truncation(max_length=max_len)
        ids = tok.encode(text).ids
        e = embed(W, cfg, ids)
        cases.append(
            {
                "name": name,
                "max_length": max_len,
                "ids": ids,
                "embedding": [float(f"{v:.7g}") for v in e],
            }
        )
        print(f"{name}: {len(ids)} tokens", file=sys.stderr)

    doc = {
        "description": (
            "float64 numpy reference embeddings of all-MiniLM-L6-v2 (mean pooling, L2 "
            "normalised) for token ids from HF tokenizers; made by "
            "scripts/golden/make_encoder_golden.py"
        ),
        "model": "all-MiniLM-L6-v2",
        "model_safetensors_sha256": sha,
        "tokenizers_version": tokenizers.__version__,
        "numpy_version": np.__version__,
        "dim": cfg["hidden_size"],
        "cases": cases,
    }
    args.out.write_text(json.dumps(doc, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} cases to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
