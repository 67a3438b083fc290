#!/usr/bin/env python3
"""Writes the forward-pass golden files: teacher-forced logits from llama.cpp (through
llama-cpp-python) that tests/kernels/engine_golden_test.cpp compares our engine against.

  .cache/golden-logits/logits_gemma3.bin        the default model on >= 2k tokens of the code corpus
  .cache/golden-logits/logits_llama_synth.bin   a tiny random llama GGUF
  .cache/golden-logits/logits_qwen2_synth.bin   a tiny random qwen2 GGUF (tied output, q/k/v biases)
  .cache/golden-logits/logits_golden.json       what each file holds and how it was made

Not committed (llama.cpp's output on a model): scripts/test.sh makes them on each machine
through scripts/golden/setup-logits.sh, with llama-cpp-python from PyPI.

The synthetic models themselves (< 200 KB each) are not committed: this script writes them with
the `gguf` package from fixed numpy seeds, byte for byte the same with the versions pinned in
scripts/golden/requirements-models.txt, and their sha256 is pinned in
scripts/golden/synth_models.sha256 (sha256sum format). scripts/setup.sh runs

  make_logits_golden.py --models-only [--out DIR]

(through scripts/golden/setup-models.sh) to write just the two models into DIR (default
.cache/golden-models/, git-ignored, where the engine tests read them). That mode imports only
`gguf` and numpy and fails, naming the file and both hashes, when a model's sha256 differs from
the pinned one. A full run writes the models there too and rewrites the pinned hashes, since
the logits it writes come from those very models.

Binary layout of a logits file (little-endian, no padding):
  char magic[4] = "VSLG"; u32 version = 2
  u32 n_tokens; u32 vocab; u32 top_k; u32 n_full
  i32 tokens[n_tokens]                       the evaluated sequence (BOS first)
  i32 top_ids[n_tokens][top_k]               llama.cpp's top-k ids at each position, best first
  f32 top_logits[n_tokens][top_k]            their logits
  f32 lse[n_tokens]                          log-sum-exp of each whole row (log-probabilities
                                             of the stored ids are logit - lse)
  f32 next_logit[n_tokens]                   the logit of tokens[i+1] at row i (0 for the last)
  u32 full_pos[n_full]                       positions whose whole logit row is stored
  u16 full_rows[n_full][vocab]               those rows as IEEE fp16

Every position's logits predict the next token (row i is the output after tokens[0..i]).
llama.cpp runs with its defaults otherwise (f16 KV cache, n_batch 512, 2 threads).

Run through scripts/golden/regen.sh (it prepares .venv-bench/); --only synth skips the
default model.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import struct
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "data" / "golden"
CORPUS = GOLDEN / "corpus"
MODELS_DIR = ROOT / ".cache" / "golden-models"
LOGITS_DIR = ROOT / ".cache" / "golden-logits"
SHA256_MANIFEST = Path(__file__).resolve().parent / "synth_models.sha256"
DEFAULT_MODEL = "models/gemma-3-270m-q4_k_m.gguf"
CODE_SUFFIXES = {".py", ".c", ".cpp", ".go", ".java", ".js", ".ts", ".rs"}

GEMMA_TOKENS = 2560  # > 2k, and past the 512-token sliding window several times
TOP_K = 5

# Synthetic models: small enough to commit, big enough to have GQA, several layers and every
# 32-block weight type our kernels and llama.cpp share.
SYNTH = {
    "llama": {"seed": 1234, "vocab": 512, "d": 64, "layers": 2, "heads": 4, "kv_heads": 2,
              "ffn": 128, "tied": False, "bias": False, "tokens": 384, "ctx": 512},
    "qwen2": {"seed": 4321, "vocab": 512, "d": 64, "layers": 2, "heads": 4, "kv_heads": 1,
              "ffn": 128, "tied": True, "bias": True, "tokens": 384, "ctx": 512},
}


# ---------------------------------------------------------------------------------------------
# output


def write_logits(path: Path, tokens: list[int], scores: np.ndarray, full_pos: list[int]) -> dict:
    n, vocab = scores.shape
    assert n == len(tokens)
    top = np.argsort(-scores, axis=1, kind="stable")[:, :TOP_K].astype(np.int32)
    top_logits = np.take_along_axis(scores, top, axis=1).astype(np.float32)
    with path.open("wb") as f:
        f.write(b"VSLG")
        f.write(struct.pack("<5I", 2, n, vocab, TOP_K, len(full_pos)))
        f.write(np.asarray(tokens, dtype="<i4").tobytes())
        f.write(top.astype("<i4").tobytes())
        f.write(top_logits.astype("<f4").tobytes())
        mx = scores.max(axis=1, keepdims=True).astype(np.float64)
        lse = (mx[:, 0] + np.log(np.exp(scores - mx).sum(axis=1))).astype("<f4")
        f.write(lse.tobytes())
        nxt = np.zeros(n, dtype="<f4")
        nxt[:-1] = scores[np.arange(n - 1), np.asarray(tokens[1:])]
        f.write(nxt.tobytes())
        f.write(np.asarray(full_pos, dtype="<u4").tobytes())
        for p in full_pos:
            f.write(scores[p].astype("<f2").tobytes())
    # How decided llama.cpp is at each position (its top-1 vs top-2 gap), for the record.
    gap = top_logits[:, 0] - top_logits[:, 1]
    nll = (lse[:-1] - nxt[:-1]).astype(np.float64)
    return {"file": path.name, "n_tokens": n, "vocab": vocab, "top_k": TOP_K,
            "full_positions": full_pos, "bytes": path.stat().st_size,
            "top1_top2_gap_below_0.05": int((gap < 0.05).sum()),
            "perplexity": float(np.exp(nll.mean()))}


def teacher_forced(model: Path, tokens: list[int], n_ctx: int) -> np.ndarray:
    from llama_cpp import Llama

    llm = Llama(model_path=str(model), logits_all=True, n_ctx=n_ctx, n_threads=2, n_batch=512,
                verbose=False)
    llm.eval(tokens)
    scores = np.array(llm.scores[: len(tokens)], dtype=np.float32)
    assert np.isfinite(scores).all()
    return scores


# ---------------------------------------------------------------------------------------------
# the default model


def gemma_case(model: Path) -> dict:
    from llama_cpp import Llama

    text = "\n".join(p.read_text(encoding="utf-8")
                     for p in sorted(CORPUS.iterdir()) if p.suffix in CODE_SUFFIXES)
    vocab = Llama(model_path=str(model), vocab_only=True, verbose=False)
    ids = vocab.tokenize(text.encode("utf-8"), add_bos=True, special=False)
    if len(ids) < GEMMA_TOKENS:
        sys.exit(f"corpus gives only {len(ids)} tokens; need {GEMMA_TOKENS}")
    tokens = ids[:GEMMA_TOKENS]
    scores = teacher_forced(model, tokens, n_ctx=GEMMA_TOKENS)
    rec = write_logits(LOGITS_DIR / "logits_gemma3.bin", tokens, scores,
                       full_pos=[700, GEMMA_TOKENS - 1])
    rec.update({"model": DEFAULT_MODEL, "n_ctx": GEMMA_TOKENS,
                "text": "code files of tests/data/golden/corpus/ in name order joined by '\\n', "
                        "tokenized by llama.cpp with BOS, first %d tokens" % GEMMA_TOKENS})
    return rec


# ---------------------------------------------------------------------------------------------
# synthetic models


def spm_vocab(n: int) -> tuple[list[str], list[float], list[int]]:
    """<unk> <s> </s>, the 256 byte tokens, then made-up pieces up to n entries."""
    toks, scores, types = ["<unk>", "<s>", "</s>"], [0.0, 0.0, 0.0], [2, 3, 3]
    for b in range(256):
        toks.append(f"<0x{b:02X}>")
        scores.append(0.0)
        types.append(6)
    letters = "abcdefghijklmnopqrstuvwxyz"
    i = 0
    while len(toks) < n:
        a, b = letters[i // 26 % 26], letters[i % 26]
        toks.append(("\u2581" if i % 3 == 0 else "") + a + b)
        scores.append(-float(i))
        types.append(1)
        i += 1
    return toks, scores, types


def synth_model(arch: str, path: Path) -> dict:
    import gguf
    from gguf import GGMLQuantizationType as Q

    p = SYNTH[arch]
    rng = np.random.default_rng(p["seed"])
    V, d, L, H, Hkv, F = p["vocab"], p["d"], p["layers"], p["heads"], p["kv_heads"], p["ffn"]
    hd = d // H

    w = gguf.GGUFWriter(str(path), arch=arch)
    w.add_name(f"vsynth synthetic {arch}")
    w.add_context_length(p["ctx"])
    w.add_embedding_length(d)
    w.add_block_count(L)
    w.add_feed_forward_length(F)
    w.add_head_count(H)
    w.add_head_count_kv(Hkv)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    w.add_rope_dimension_count(hd)
    toks, scores, types = spm_vocab(V)
    w.add_tokenizer_model("llama")
    w.add_token_list(toks)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)

    def mat(rows: int, cols: int, scale: float) -> np.ndarray:
        return (rng.standard_normal((rows, cols)) * scale).astype(np.float32)

    def add(name: str, arr: np.ndarray, qtype) -> None:
        if qtype == Q.F32:
            w.add_tensor(name, arr.astype(np.float32))
        else:
            w.add_tensor(name, gguf.quants.quantize(arr, qtype), raw_dtype=qtype)

    def norm(n: int) -> np.ndarray:
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    add("token_embd.weight", mat(V, d, 1.0), Q.Q8_0)
    add("output_norm.weight", norm(d), Q.F32)
    if not p["tied"]:
        add("output.weight", mat(V, d, 8.0 / np.sqrt(d)), Q.Q5_0)
    # Weight types per layer: every 32-element block type plus f16, bf16 and f32.
    kinds = [
        {"q": Q.Q4_0, "k": Q.Q5_0, "v": Q.Q8_0, "o": Q.F16, "gate": Q.Q4_0, "up": Q.Q5_0,
         "down": Q.Q8_0},
        {"q": Q.Q8_0, "k": Q.Q4_0, "v": Q.Q5_0, "o": Q.BF16, "gate": Q.Q8_0, "up": Q.F16,
         "down": Q.F32},
    ]
    for l in range(L):
        k = kinds[l % len(kinds)]
        b = f"blk.{l}."
        add(b + "attn_norm.weight", norm(d), Q.F32)
        add(b + "attn_q.weight", mat(H * hd, d, 1.5 / np.sqrt(d)), k["q"])
        add(b + "attn_k.weight", mat(Hkv * hd, d, 1.5 / np.sqrt(d)), k["k"])
        add(b + "attn_v.weight", mat(Hkv * hd, d, 1.0 / np.sqrt(d)), k["v"])
        if p["bias"]:
            add(b + "attn_q.bias", (0.2 * rng.standard_normal(H * hd)).astype(np.float32), Q.F32)
            add(b + "attn_k.bias", (0.2 * rng.standard_normal(Hkv * hd)).astype(np.float32), Q.F32)
            add(b + "attn_v.bias", (0.2 * rng.standard_normal(Hkv * hd)).astype(np.float32), Q.F32)
        add(b + "attn_output.weight", mat(d, H * hd, 1.0 / np.sqrt(H * hd)), k["o"])
        add(b + "ffn_norm.weight", norm(d), Q.F32)
        add(b + "ffn_gate.weight", mat(F, d, 1.0 / np.sqrt(d)), k["gate"])
        add(b + "ffn_up.weight", mat(F, d, 1.0 / np.sqrt(d)), k["up"])
        add(b + "ffn_down.weight", mat(d, F, 1.0 / np.sqrt(F)), k["down"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return {**p, "file": path.name, "bytes": path.stat().st_size}


def model_name(arch: str) -> str:
    return f"model_{arch}_synth.gguf"


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pinned_sha256() -> dict[str, str]:
    """file name -> sha256 from synth_models.sha256 ("<hex>  <name>" lines, as sha256sum)."""
    if not SHA256_MANIFEST.exists():
        sys.exit(f"{SHA256_MANIFEST} is missing (it pins the synthetic models' sha256)")
    pins = {}
    for n, line in enumerate(SHA256_MANIFEST.read_text().splitlines(), 1):
        parts = line.split()
        if len(parts) != 2 or len(parts[0]) != 64:
            sys.exit(f"{SHA256_MANIFEST}:{n}: expected '<sha256>  <file name>', got {line!r}")
        pins[parts[1].lstrip("*")] = parts[0]
    return pins


def write_synth_model(arch: str, out: Path) -> tuple[Path, dict]:
    """Writes one synthetic model into out/ atomically (temp file, then rename)."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / model_name(arch)
    tmp = out / f".{model_name(arch)}.tmp.{os.getpid()}"
    try:
        rec = synth_model(arch, tmp)
        rec["file"] = path.name
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path, rec


def versions() -> str:
    import gguf  # noqa: F401  (the version lives in the distribution metadata)
    from importlib.metadata import version

    return f"gguf {version('gguf')}, numpy {np.__version__}"


def models_only(out: Path) -> int:
    """Writes the two synthetic models into out/ and checks them against the pinned sha256."""
    pins = pinned_sha256()
    bad = []
    for arch in SYNTH:
        name = model_name(arch)
        if name not in pins:
            sys.exit(f"{SHA256_MANIFEST} has no line for {name}")
        path, rec = write_synth_model(arch, out)
        have = sha256_of(path)
        if have != pins[name]:
            path.unlink()
            bad.append(f"{path}: sha256 {have}, expected {pins[name]} (file removed)")
        else:
            print(f"{path}: {rec['bytes']} bytes, sha256 ok", flush=True)
    if bad:
        sys.exit(f"synthetic golden model(s) differ from {SHA256_MANIFEST}, written with "
                 f"{versions()} (requirements-models.txt pins the versions that reproduce "
                 "them):\n  " + "\n  ".join(bad))
    return 0


def synth_case(arch: str) -> dict:
    p = SYNTH[arch]
    model, model_rec = write_synth_model(arch, MODELS_DIR)
    rng = np.random.default_rng(p["seed"] + 1)
    tokens = [1] + [int(t) for t in rng.integers(3, p["vocab"], size=p["tokens"] - 1)]
    scores = teacher_forced(model, tokens, n_ctx=p["ctx"])
    rec = write_logits(LOGITS_DIR / f"logits_{arch}_synth.bin", tokens, scores,
                       full_pos=[0, p["tokens"] // 2, p["tokens"] - 1])
    rec.update({"model": str(model.relative_to(ROOT)), "n_ctx": p["ctx"], "synth": model_rec,
                "text": "BOS then random ids in [3, vocab) from numpy default_rng(seed + 1)"})
    return rec


def update_pins() -> None:
    """After a full run: the pinned hashes follow the models the new logits came from."""
    pins = pinned_sha256()
    new = {model_name(a): sha256_of(MODELS_DIR / model_name(a)) for a in SYNTH}
    if new != pins:
        SHA256_MANIFEST.write_text("".join(f"{h}  {n}\n" for n, h in new.items()))
        print(f"NOTE: the synthetic models changed ({versions()}): commit {SHA256_MANIFEST.name} "
              "with the logits files, and pin these versions in requirements-models.txt")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=DEFAULT_MODEL, help="GGUF model, relative to the repo root")
    ap.add_argument("--only", choices=["all", "synth"], default="all")
    ap.add_argument("--models-only", action="store_true",
                    help="only write the two synthetic models (needs just gguf and numpy) and "
                         "check them against synth_models.sha256")
    ap.add_argument("--out", type=Path, default=MODELS_DIR,
                    help="folder for --models-only (default: .cache/golden-models)")
    args = ap.parse_args()
    if args.models_only:
        return models_only(args.out)
    if args.out != MODELS_DIR:
        ap.error("--out goes with --models-only (a full run writes the models to "
                 f"{MODELS_DIR.relative_to(ROOT)}, where the tests read them)")

    import llama_cpp

    LOGITS_DIR.mkdir(parents=True, exist_ok=True)
    manifest_path = LOGITS_DIR / "logits_golden.json"
    doc = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    doc["generator"] = "scripts/golden/make_logits_golden.py via scripts/golden/regen.sh"
    doc["llama_cpp_python"] = llama_cpp.__version__
    doc["format"] = "see the docstring of scripts/golden/make_logits_golden.py"
    cases = doc.get("cases", {})
    for arch in SYNTH:
        cases[f"{arch}_synth"] = synth_case(arch)
        print(f"{arch}_synth: {cases[f'{arch}_synth']['bytes']} bytes")
    update_pins()
    if args.only == "all":
        model = ROOT / args.model
        if not model.exists():
            sys.exit(f"{model} not found: run scripts/setup-model.sh (or --only synth)")
        cases["gemma3"] = gemma_case(model)
        print(f"gemma3: {cases['gemma3']['bytes']} bytes")
    doc["cases"] = cases
    manifest_path.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
