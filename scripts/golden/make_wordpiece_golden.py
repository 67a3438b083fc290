#!/usr/bin/env python3
"""Writes tests/data/golden/wordpiece_minilm.json: the token ids HF `tokenizers` (the version
pinned in scripts/golden/requirements-encoder.txt) produces with all-MiniLM-L6-v2's
tokenizer.json, which tests/kernels/wordpiece_golden_test.cpp must match exactly.

Snippets (each case: a name, the text, max_tokens, the ids):
  - code from tests/data/golden/corpus/: each file whole, cut at blank lines (function-sized
    blocks) and line by line;
  - prose: the paragraphs of README.md and docs/architecture.md, and a few written here;
  - edge cases: accents, ß, İ, Greek, CJK, kana, Hangul, emoji and ZWJ sequences, control and
    format characters, tabs/CRLF, NUL, words of 100/101 characters, added tokens written in
    the text ("[CLS]", "[MASK]"), empty and blank texts, punctuation HF's Unicode tables class
    differently from today's Unicode;
  - a sweep over every code point the BERT tables treat specially (scripts/gen_unicode_tables.py
    --bert), each between two letters;
  - invalid UTF-8 as text_hex: HF takes str, so the bytes go in decoded the way a caller would
    (errors="replace": each malformed sequence a U+FFFD, which clean_text drops).
max_tokens is 256 (retrieval's limit, sentence-transformers' max_seq_length) unless the case
says otherwise; null means no truncation. The file's own truncation (128) and padding are off.

  .venv-golden/bin/python scripts/golden/make_wordpiece_golden.py [--tokenizer PATH]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
from pathlib import Path

import tokenizers
from tokenizers import Tokenizer

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "data" / "golden"
CORPUS = GOLDEN / "corpus"
DEFAULT_TOKENIZER = ROOT / "models" / "all-MiniLM-L6-v2" / "tokenizer.json"
CODE_SUFFIXES = {".py", ".c", ".cpp", ".go", ".java", ".js", ".ts", ".rs"}
DEFAULT_MAX = 256

PROSE = [
    "The quick brown fox jumps over the lazy dog.",
    "Retrieval puts the most relevant functions of the whole project in front of the model.",
    "Don't panic: it's only a test, isn't it? Yes -- it is; (mostly) harmless!",
    "E-mail me at someone@example.com or visit https://example.com/path?q=1&r=2#frag.",
    "In 2024, 3.14159 was still pi; 1,000,000 is a million; 0x1F is thirty-one.",
    "Mr. Smith's café served crème brûlée to the naïve señor from São Paulo.",
    "Die Straße in Köln ist schön, aber die STRASSE in Düsseldorf ist größer.",
    "İstanbul'da yaşıyorum; DİYARBAKIR ve ıspanak.",
    "Η γρήγορη καφέ αλεπού πηδά πάνω από τον τεμπέλη σκύλο. ΣΊΣΥΦΟΣ",
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "我们今天去公园散步，天气很好。",
    "東京は日本の首都です。カタカナとひらがな、そして漢字。",
    "안녕하세요, 세계! 한국어 문장입니다.",
    "مرحبا بالعالم، هذه جملة عربية.",
    "שלום עולם, זה משפט בעברית.",
    "नमस्ते दुनिया, यह एक हिंदी वाक्य है।",
    "สวัสดีชาวโลก นี่คือประโยคภาษาไทย",
    "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer",
]

EDGE = {
    "empty": "",
    "one_space": " ",
    "only_spaces": "     ",
    "blank_mixed": " \t \n\t  \r\n   ",
    "newline": "\n",
    "tab_crlf": "a\tb\r\nc\rd\ne",
    "nul": "a\x00b \x00 c",
    "controls": "\x01\x02abc\x7f def\x1b[0m",
    "vt_ff": "a\x0bb\x0cc",
    "nel_nbsp": "a\u0085b\u00a0c\u2028d\u3000e",
    "replacement_char": "a\ufffdb \ufffd",
    "private_use": "\ue000x \U000f0000y",
    "zero_width": "zero\u200bwidth joi\u200dner non\u200cjoiner",
    "bom_soft_hyphen": "\ufeffBOM soft\u00adhyphen",
    "bidi_marks": "a\u200eb\u202ec\u2066d",
    "accents": "Café naïve résumé Ångström ÉCOLE façade jalapeño",
    "combining": "e\u0301 Cafe\u0301 a\u0308\u0304 o\u0323\u0302",
    "german": "Straße STRASSE ẞ groß Größe",
    "turkish": "İstanbul ıi DİYARBAKIR İ i̇",
    "greek": "Ελληνικά ά ΐ ΣΊΣΥΦΟΣ σς",
    "cyrillic": "Привет, мир! Ёлка й",
    "cjk": "野口里佳 Noguchi Rika",
    "cjk_mixed": "汉字和kana混合abc中文",
    "cjk_compat": "\uf900\ufa0e\U0002f800",
    "cjk_ext_b": "\U00020000\U0002a6d6\U0002b820x",
    "kana": "こんにちは世界 カタカナ ｶﾀｶﾅ ゛゜",
    "hangul": "안녕하세요 한국어 \u1100\u1161\u11a8",
    "emoji": "😀 😃 👍 🤗 🥰 🫠",
    "emoji_modifier": "👍🏽 👋🏿",
    "emoji_zwj_family": "👨\u200d👩\u200d👧\u200d👦",
    "emoji_flag": "🇩🇪 🇯🇵",
    "emoji_vs16": "❤️ ☺️ ✌︎",
    "fullwidth": "ＡＢＣ１２３！？",
    "ligature": "ﬁle ﬂow Ⅻ ½ ²",
    "math": "α+β=γ ∑∫√∞ ≤≥≠ x² ∂f/∂x",
    "symbols": "$100 + €50 = £? ¥ © ® ™ ° § ¶",
    "ascii_punct": "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
    "unicode_punct": "“quoted” ‘single’ — dash – en … ¿qué? ¡sí! «guillemets» ‹›",
    "cjk_punct": "中文，标点。「引号」『二重』【括弧】！？",
    "old_unicode_punct": "a\U0001e95eb a\u166db a\U000111c9b a\u2e43b a\U00011660b a\u061db",
    "newer_cf": "a\u0890b a\u08e2b a\U000110cdb a\U00013430b",
    "newer_mn": "a\u07fdb a\u0898b a\u08d3b a\U0001e944b",
    "newer_lower": "\ua7cb\ua7dc \U00010d50 \u1c89",
    "unassigned": "a\u0378b \U000e0080 \U0010ffff",
    "word_100": "a" * 100,
    "word_101": "a" * 101,
    "word_100_accented": "é" * 100,
    "word_101_accented": "é" * 101,
    "word_100_then_punct": "b" * 100 + "!" + "c" * 101 + "?",
    "word_100_cjk_around": "x" * 100 + "中" + "y" * 101,
    "special_cls": "hello [CLS] world",
    "special_mask": "The capital of France is [MASK].",
    "special_glued": "x[MASK]y[SEP]z",
    "special_all": "[PAD][UNK][CLS][SEP][MASK]",
    "special_lowercase": "[cls] [Mask] [ sep ]",
    "special_nested": "[[CLS]] [CLS [SEP",
    "unused_piece": "[unused0] [unused99]",
    "special_with_accents": "Ça va[SEP]Éa",
    "identifiers": "snake_case_name camelCaseName __init__ C++ std::vector<int> -> != => ...",
    "numbers": "3.14159 1,000,000 0x1F 1e-9 -42 +7 ١٢٣ ๑๒๓",
    "unknown_script": "𐎀𐎁𐎂 ᚠᚢᚦ ꦲꦏ",
    "long_unk_word": "Ω" * 50 + "ω" * 50,
}


def corpus_cases() -> list[dict]:
    cases = []
    for path in sorted(CORPUS.iterdir()):
        if path.suffix not in CODE_SUFFIXES:
            continue
        text = path.read_text(encoding="utf-8")
        rel = f"corpus/{path.name}"
        for limit in (DEFAULT_MAX, None):
            cases.append({"name": f"{path.name}:whole:{limit}", "file": rel, "max_tokens": limit})
        # Function-sized pieces: blocks between blank lines.
        for i, block in enumerate(re.split(r"\n\s*\n", text)):
            if block.strip():
                cases.append({"name": f"{path.name}:block{i}", "text": block})
        # Line-sized pieces: every line with text, once.
        seen = set()
        for i, line in enumerate(text.splitlines()):
            if line.strip() and line not in seen:
                seen.add(line)
                cases.append({"name": f"{path.name}:line{i + 1}", "text": line})
    return cases


def prose_cases() -> list[dict]:
    cases = [{"name": f"prose{i}", "text": t} for i, t in enumerate(PROSE)]
    for doc in ("README.md", "docs/architecture.md"):
        text = (ROOT / doc).read_text(encoding="utf-8")
        for i, para in enumerate(re.split(r"\n\s*\n", text)):
            if para.strip():
                cases.append({"name": f"{doc}:para{i}", "text": para})
    return cases


def truncation_cases() -> list[dict]:
    long_prose = " ".join(PROSE * 8)
    first_code = sorted(p for p in CORPUS.iterdir() if p.suffix in CODE_SUFFIXES)[0]
    cases = []
    for limit in (2, 3, 16, 128, 256, 512):
        cases.append({"name": f"long_prose:{limit}", "text": long_prose, "max_tokens": limit})
        cases.append({"name": f"{first_code.name}:{limit}", "file": f"corpus/{first_code.name}",
                      "max_tokens": limit})
    # A cut inside a word's pieces and right after an added token.
    cases.append({"name": "cut_in_word:5", "text": "tokenization unbelievably", "max_tokens": 5})
    cases.append({"name": "cut_at_special:4", "text": "a b [MASK] c", "max_tokens": 4})
    return cases


def sweep_cases() -> list[dict]:
    """Code points where the BERT normalizer or pre-tokenizer does something, each as x<c>y, 64
    to a case: every one with a mapping (accent stripping, lowercase) or a class of its own
    (punctuation, whitespace, format), and both ends of each run of dropped code points and of
    CJK ideographs (137k private-use and 81k ideographs would make a large file)."""
    from tokenizers.normalizers import BertNormalizer
    from tokenizers.pre_tokenizers import BertPreTokenizer

    full = BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None,
                          lowercase=True)
    pre = BertPreTokenizer()

    def kind(cp: int):
        if 0xD800 <= cp <= 0xDFFF or cp > 0x10FFFF or cp < 0:
            return "surrogate"
        c = chr(cp)
        n = full.normalize_str(c)
        if n == "":
            return "removed"
        if n == f" {c} ":
            return "cjk"
        if n != c:
            return "mapped"
        return ("split", len(pre.pre_tokenize_str(f"a{c}a")))

    kinds = [kind(cp) for cp in range(0x110000)]
    picked = []
    for cp, k in enumerate(kinds):
        if k == "surrogate":
            continue
        boundary = (cp > 0 and kinds[cp - 1] != k) or (cp + 1 < len(kinds) and kinds[cp + 1] != k)
        if k == "mapped" or k == ("split", 3) or k == ("split", 2) or boundary:
            picked.append(chr(cp))
    cases = []
    for i in range(0, len(picked), 64):
        text = " ".join(f"x{c}y" for c in picked[i:i + 64])
        cases.append({"name": f"sweep{i // 64}:U+{ord(picked[i]):04X}", "text": text,
                      "max_tokens": None})
    return cases


INVALID_UTF8 = {
    "invalid_lone_continuation": b"ab\x80cd",
    "invalid_lead_ff": b"x\xffy\xfe",
    "invalid_truncated_2": b"caf\xc3",
    "invalid_truncated_3": b"\xe4\xb8 mid \xe4",
    "invalid_overlong_slash": b"a\xc0\xafb",
    "invalid_overlong_3": b"a\xe0\x80\xafb",
    "invalid_surrogate": b"a\xed\xa0\x80b",
    "invalid_above_max": b"a\xf4\x90\x80\x80b \xf5\x80\x80\x80",
    "invalid_between_words": b"hello \xff world\xc3(\xa9",
    "invalid_in_special": b"[CL\xffS] [CLS]\xff",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokenizer", type=Path, default=DEFAULT_TOKENIZER)
    ap.add_argument("--out", type=Path, default=GOLDEN / "wordpiece_minilm.json")
    args = ap.parse_args()

    tok = Tokenizer.from_file(str(args.tokenizer))
    tok.no_padding()

    cases = corpus_cases() + prose_cases()
    cases += [{"name": k, "text": v} for k, v in EDGE.items()]
    cases += truncation_cases() + sweep_cases()
    cases += [{"name": k, "text_hex": v.hex()} for k, v in INVALID_UTF8.items()]

    for c in cases:
        c.setdefault("max_tokens", DEFAULT_MAX)
        if "file" in c:
            text = (GOLDEN / c["file"]).read_text(encoding="utf-8")
        elif "text_hex" in c:
            text = bytes.fromhex(c["text_hex"]).decode("utf-8", errors="replace")
        else:
            text = c["text"]
        if c["max_tokens"] is None:
            tok.no_truncation()
        else:
            tok.enable_truncation(max_length=c["max_tokens"])
        c["ids"] = tok.encode(text).ids

    doc = {
        "description": "Token ids of HF tokenizers for all-MiniLM-L6-v2's tokenizer.json "
                       "(scripts/golden/make_wordpiece_golden.py). Each case: text, file "
                       "(under tests/data/golden/) or text_hex (bytes, decoded with U+FFFD for "
                       "malformed sequences), max_tokens (null: no truncation), ids.",
        "tokenizers_version": tokenizers.__version__,
        "tokenizer_sha256": hashlib.sha256(args.tokenizer.read_bytes()).hexdigest(),
        "cases": cases,
    }
    # One case a line: small, and a regeneration diffs case by case.
    head = json.dumps({k: v for k, v in doc.items() if k != "cases"}, ensure_ascii=False)
    lines = [json.dumps(c, ensure_ascii=False) for c in cases]
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(head[:-1] + ', "cases": [\n' + ",\n".join(lines) + "\n]}\n")
    print(f"{args.out}: {len(cases)} cases, tokenizers {tokenizers.__version__}")


if __name__ == "__main__":
    main()
