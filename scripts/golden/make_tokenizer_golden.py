#!/usr/bin/env python3
"""Writes the tokenizer golden files: the token ids llama.cpp (through llama-cpp-python)
produces for our corpus, which tests/kernels/tokenizer_golden_test.cpp must match exactly.

  tests/data/golden/tokenizer_gemma3.json       the default model's vocabulary
  tests/data/golden/tokenizer_spm_synth.json    a small SentencePiece-style vocabulary
  tests/data/golden/tokenizer_bpe_synth.json    a small byte-level BPE vocabulary (qwen2)
  tests/data/golden/tokenizer_llama3_synth.json the same BPE vocabulary, llama3 pre-tokenizer

The corpus is tests/data/golden/corpus/: one source file per language and edge_cases.json.
Code files are referenced by path (not copied) to keep the golden files small.

The synthetic vocabularies are trained here, on the corpus, by a few lines of plain BPE (no
third-party vocabulary is involved), written to temporary GGUF files with the `gguf` package
and loaded by llama.cpp with vocab_only=True. Each golden file carries the exact GGUF metadata
so the C++ test can write the same file with kernels/gguf/writer.h.

Run through scripts/golden/regen.sh (it prepares .venv-bench/).
"""
from __future__ import annotations

import argparse
import collections
import ctypes
import json
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "data" / "golden"
CORPUS = GOLDEN / "corpus"
DEFAULT_MODEL = "models/gemma-3-270m-q4_k_m.gguf"

CODE_SUFFIXES = {".py", ".c", ".cpp", ".go", ".java", ".js", ".ts", ".rs"}


# ---------------------------------------------------------------------------------------------
# corpus


def load_cases() -> list[dict]:
    """Every corpus file as one case (with BOS), then the edge cases."""
    cases = []
    for path in sorted(CORPUS.iterdir()):
        if path.suffix in CODE_SUFFIXES:
            cases.append({"name": path.name, "file": f"corpus/{path.name}", "add_bos": True})
    # The first code file once more without BOS, so both paths are covered on real code.
    first = cases[0]
    cases.append({"name": first["name"] + ":no_bos", "file": first["file"], "add_bos": False})
    edge = json.loads((CORPUS / "edge_cases.json").read_text(encoding="utf-8"))
    cases.extend(edge["cases"])
    # Special-token cases once more with parse_special=false: control tokens become text,
    # user-defined ones are still matched.
    for c in edge["cases"]:
        if c["name"].startswith(("special_", "turn_template", "user_defined")):
            cases.append({**c, "name": c["name"] + ":no_parse", "parse_special": False})
    return cases


def case_bytes(case: dict) -> bytes:
    if "file" in case:
        return (GOLDEN / case["file"]).read_bytes()
    if "text_hex" in case:
        return bytes.fromhex(case["text_hex"])
    return case["text"].encode("utf-8")


# ---------------------------------------------------------------------------------------------
# llama.cpp through llama-cpp-python


def open_vocab(path: Path):
    from llama_cpp import Llama

    return Llama(model_path=str(path), vocab_only=True, verbose=False)


def detokenize(llm, ids: list[int]) -> bytes:
    """llama_detokenize(ids, remove_special=False, unparse_special=True)."""
    import llama_cpp

    vocab = llm._model.vocab
    arr = (llama_cpp.llama_token * max(1, len(ids)))(*ids)
    size = 64 + 8 * len(ids)
    while True:
        buf = ctypes.create_string_buffer(size)
        n = llama_cpp.llama_detokenize(vocab, arr, len(ids), buf, size, False, True)
        if n >= 0:
            return buf.raw[:n]
        size = -n + 16


def run_cases(llm, cases: list[dict], bos_piece: bytes) -> tuple[list[dict], list[str]]:
    out, skipped = [], []
    for case in cases:
        data = case_bytes(case)
        try:
            ids = llm.tokenize(data, add_bos=case["add_bos"], special=case.get("parse_special", True))
        except Exception as exc:  # llama.cpp rejects a few inputs outright; record and go on
            skipped.append(f"{case['name']}: {exc}")
            continue
        rec = {k: v for k, v in case.items()}
        rec["ids"] = ids
        detok = detokenize(llm, ids)
        natural = (bos_piece if ids[:1] == [llm.token_bos()] and case["add_bos"] else b"") + data
        if detok != natural:  # stored only when it is not BOS text + input
            try:
                rec["detok"] = detok.decode("utf-8")
            except UnicodeDecodeError:
                rec["detok_hex"] = detok.hex()
        out.append(rec)
    return out, skipped


def eog_ids(llm) -> list[int]:
    import llama_cpp

    vocab = llm._model.vocab
    return [i for i in range(llm.n_vocab()) if llama_cpp.llama_vocab_is_eog(vocab, i)]


def version() -> str:
    import llama_cpp

    return llama_cpp.__version__


# ---------------------------------------------------------------------------------------------
# synthetic vocabularies (our own tiny BPE trainer)


def train_merges(words: collections.Counter, n_merges: int) -> list[tuple[str, str]]:
    """Plain BPE: words are tuples of symbols; merge the most frequent pair each round
    (ties broken by the pair's text, so the result is deterministic)."""
    vocab = {tuple(w): c for w, c in words.items()}
    merges = []
    for _ in range(n_merges):
        pairs = collections.Counter()
        for w, c in vocab.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        best = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))[0]
        if pairs[best] < 2:
            break
        merges.append(best)
        joined = best[0] + best[1]
        new_vocab = {}
        for w, c in vocab.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(joined)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            new_vocab[tuple(out)] = new_vocab.get(tuple(out), 0) + c
        vocab = new_vocab
    return merges


def corpus_text() -> str:
    return "\n".join(
        p.read_text(encoding="utf-8") for p in sorted(CORPUS.iterdir()) if p.suffix in CODE_SUFFIXES
    )


def gpt2_byte_map() -> dict[int, str]:
    printable = [b for b in range(256) if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF]
    mapping, n = {}, 0
    for b in range(256):
        if b in printable:
            mapping[b] = chr(b)
        else:
            mapping[b] = chr(256 + n)
            n += 1
    return mapping


# GGUF metadata as (key, type, value); types: string, u32, f32, bool, [string], [f32], [i32].
Meta = list[tuple[str, str, object]]


def hparams(arch: str) -> Meta:
    # The smallest hyper-parameters llama.cpp's loader accepts for a vocab-only load.
    return [
        ("general.architecture", "string", arch),
        ("general.name", "string", f"vsynth synthetic {arch} vocabulary"),
        (f"{arch}.context_length", "u32", 256),
        (f"{arch}.embedding_length", "u32", 64),
        (f"{arch}.block_count", "u32", 1),
        (f"{arch}.feed_forward_length", "u32", 128),
        (f"{arch}.attention.head_count", "u32", 1),
        (f"{arch}.attention.head_count_kv", "u32", 1),
        (f"{arch}.attention.layer_norm_rms_epsilon", "f32", 1e-5),
        (f"{arch}.rope.dimension_count", "u32", 64),
    ]


def spm_meta() -> Meta:
    text = corpus_text()
    escaped = text.replace(" ", "\u2581")
    words = collections.Counter(re.findall(r"\u2581?[^\u2581\n]+|\u2581+|\n+", escaped))
    merges = train_merges(collections.Counter({tuple(w): c for w, c in words.items()}), 700)
    char_counts = collections.Counter(escaped)
    chars = sorted(c for c, n in char_counts.items() if n >= 3 and c != "\n")  # rare ones: bytes

    tokens, scores, types = [], [], []

    def add(tok: str, score: float, ty: int) -> None:
        if tok in seen:
            return
        seen.add(tok)
        tokens.append(tok)
        scores.append(score)
        types.append(ty)

    seen: set[str] = set()
    add("<unk>", 0.0, 2)
    add("<s>", 0.0, 3)
    add("</s>", 0.0, 3)
    for b in range(256):
        add(f"<0x{b:02X}>", 0.0, 6)
    for i, c in enumerate(chars):
        add(c, -1000.0 - i, 1)
    for rank, (a, b) in enumerate(merges):
        # Four merges share each score, so ties (leftmost first) happen often.
        add(a + b, -float(rank // 4), 1)
    add("<start_of_turn>", 0.0, 3)
    add("<end_of_turn>", 0.0, 3)
    add("<|tool|>", 0.0, 4)
    add("    ", 0.0, 4)  # four raw spaces, user-defined like Gemma's whitespace tokens

    return hparams("llama") + [
        ("tokenizer.ggml.model", "string", "llama"),
        ("tokenizer.ggml.pre", "string", "default"),
        ("tokenizer.ggml.tokens", "[string]", tokens),
        ("tokenizer.ggml.scores", "[f32]", scores),
        ("tokenizer.ggml.token_type", "[i32]", types),
        ("tokenizer.ggml.bos_token_id", "u32", 1),
        ("tokenizer.ggml.eos_token_id", "u32", 2),
        ("tokenizer.ggml.unknown_token_id", "u32", 0),
        ("tokenizer.ggml.add_bos_token", "bool", True),
        ("tokenizer.ggml.add_eos_token", "bool", False),
        ("tokenizer.ggml.add_space_prefix", "bool", True),
    ]


def bpe_meta(pre: str) -> Meta:
    text = corpus_text()
    bmap = gpt2_byte_map()
    # Training words: an approximation of the qwen2 split is enough to learn useful merges.
    raw_words = re.findall(r"'[a-z]+|[^\r\n\w]?[^\W\d_]+|\d| ?[^\s\w]+[\r\n]*|\s+", text)
    words = collections.Counter()
    for w in raw_words:
        words[tuple(bmap[b] for b in w.encode("utf-8"))] += 1
    merges = train_merges(words, 800)

    tokens, types, seen = [], [], set()

    def add(tok: str, ty: int) -> None:
        if tok not in seen:
            seen.add(tok)
            tokens.append(tok)
            types.append(ty)

    for b in range(256):
        add(bmap[b], 1)
    for a, b in merges:
        add(a + b, 1)
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>"]
    for s in specials:
        add(s, 3)
    add("<|fim_prefix|>", 4)
    arch = "llama" if pre == "llama-bpe" else "qwen2"
    eot = tokens.index("<|endoftext|>")
    meta = hparams(arch) + [
        ("tokenizer.ggml.model", "string", "gpt2"),
        ("tokenizer.ggml.pre", "string", pre),
        ("tokenizer.ggml.tokens", "[string]", tokens),
        ("tokenizer.ggml.token_type", "[i32]", types),
        ("tokenizer.ggml.merges", "[string]", [f"{a} {b}" for a, b in merges]),
        ("tokenizer.ggml.eos_token_id", "u32", eot),
    ]
    if pre == "llama-bpe":
        meta += [
            ("tokenizer.ggml.bos_token_id", "u32", tokens.index("<|begin_of_text|>")),
            ("tokenizer.ggml.add_bos_token", "bool", True),
        ]
    else:
        meta += [
            ("tokenizer.ggml.bos_token_id", "u32", eot),
            ("tokenizer.ggml.add_bos_token", "bool", False),
        ]
    return meta


def write_gguf(meta: Meta, path: Path) -> None:
    import gguf

    vt = gguf.GGUFValueType
    scalar = {"string": vt.STRING, "u32": vt.UINT32, "f32": vt.FLOAT32, "bool": vt.BOOL}
    array = {"[string]": vt.STRING, "[f32]": vt.FLOAT32, "[i32]": vt.INT32}
    arch = next(v for k, _, v in meta if k == "general.architecture")
    w = gguf.GGUFWriter(str(path), arch=arch)  # writes general.architecture itself
    for key, ty, val in meta:
        if key == "general.architecture":
            continue
        if ty in scalar:
            w.add_key_value(key, val, scalar[ty])
        else:
            w.add_key_value(key, list(val), vt.ARRAY, sub_type=array[ty])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def meta_json(meta: Meta) -> dict:
    return {k: {"type": t, "value": v} for k, t, v in meta}


# ---------------------------------------------------------------------------------------------


def write_json(path: Path, doc: dict) -> None:
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    # One case per line keeps diffs readable without the size of full indentation.
    text = text.replace(',{"name"', ',\n{"name"')
    path.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size / 1024:.0f} KiB)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=DEFAULT_MODEL, help="GGUF model, relative to the repo root")
    ap.add_argument("--skip-model", action="store_true", help="only the synthetic vocabularies")
    args = ap.parse_args()

    cases = load_cases()
    header = {
        "generator": "scripts/golden/make_tokenizer_golden.py",
        "llama_cpp_python": version(),
        "encode": "llama_tokenize(text, add_special=add_bos, parse_special) (parse_special "
        "true unless a case says false)",
        "decode": "llama_detokenize(ids, remove_special=false, unparse_special=true); "
        "detok (or detok_hex for invalid UTF-8) only where it differs from BOS text + input",
    }

    if not args.skip_model:
        model = ROOT / args.model
        if not model.exists():
            print(f"model {model} is absent: run scripts/setup-model.sh (or --skip-model)")
            return 1
        llm = open_vocab(model)
        bos_piece = llm.detokenize([llm.token_bos()], special=True) if llm.token_bos() >= 0 else b""
        done, skipped = run_cases(llm, cases, bos_piece)
        write_json(GOLDEN / "tokenizer_gemma3.json", {
            **header, "model": args.model, "n_vocab": llm.n_vocab(), "eog_ids": eog_ids(llm),
            "skipped": skipped, "cases": done})
        del llm

    for name, meta in (("spm_synth", spm_meta()), ("bpe_synth", bpe_meta("qwen2")),
                       ("llama3_synth", bpe_meta("llama-bpe"))):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"{name}.gguf"
            write_gguf(meta, path)
            llm = open_vocab(path)
            bos = llm.token_bos()
            bos_piece = llm.detokenize([bos], special=True) if bos >= 0 else b""
            done, skipped = run_cases(llm, cases, bos_piece)
            n_vocab, eogs = llm.n_vocab(), eog_ids(llm)
            del llm
        write_json(GOLDEN / f"tokenizer_{name}.json", {
            **header, "n_vocab": n_vocab, "eog_ids": eogs, "skipped": skipped,
            "gguf_metadata": meta_json(meta), "cases": done})
    return 0


if __name__ == "__main__":
    sys.exit(main())
