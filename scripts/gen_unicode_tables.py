#!/usr/bin/env python3
"""Writes kernels/tokenizer/unicode_ranges.inc: the general-category class of every code point.

The tokenizers' pre-tokenizers only need a coarse class per code point (letter, number, mark,
punctuation, symbol, separator, control, unassigned), the same grouping llama.cpp uses for
\\p{L}, \\p{N}, ... We derive it from Python's own unicodedata (so the Unicode version is the one
of the interpreter that ran this script, printed in the header) and store it as run-length
ranges: one uint32 per run, (first code point << 3) | class, sorted by code point.

Usage: python3 scripts/gen_unicode_tables.py [output path]
       .venv-golden/bin/python scripts/gen_unicode_tables.py --bert [output path]
         kernels/tokenizer/bert_tables.inc: the BERT normalizer's and pre-tokenizer's tables
         (WordPiece, kernels/tokenizer/wordpiece.cpp), measured from HF tokenizers (see below)
"""
import sys
import unicodedata

# Class numbers must match kernels/tokenizer/unicode.h (enum class CpClass).
CLASS = {"Cn": 0}
for c in ("Nd", "Nl", "No"):
    CLASS[c] = 1
for c in ("Lu", "Ll", "Lt", "Lm", "Lo"):
    CLASS[c] = 2
for c in ("Zs", "Zl", "Zp"):
    CLASS[c] = 3
for c in ("Mn", "Mc", "Me"):
    CLASS[c] = 4
for c in ("Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po"):
    CLASS[c] = 5
for c in ("Sm", "Sc", "Sk", "So"):
    CLASS[c] = 6
for c in ("Cc", "Cf", "Cs", "Co"):
    CLASS[c] = 7


# ---- BERT tables (--bert): what HF tokenizers' BertNormalizer / BertPreTokenizer do per code point.
#
# HF's character predicates do not follow one Unicode version: punctuation, control/format and
# nonspacing-mark tests come from the Rust crate unicode_categories (tables of an old Unicode
# version), NFD from unicode-normalization-alignments, White_Space and lowercase from the Rust
# standard library the wheel was built with. Python's unicodedata (this interpreter's version)
# disagrees with that mix in some hundred code points, so the tables are measured from the
# pinned `tokenizers` itself, one code point at a time, and the differences from unicodedata
# are counted in the header. Needs tokenizers (scripts/golden/requirements-encoder.txt):
#   .venv-golden/bin/python scripts/gen_unicode_tables.py --bert

HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3


def hangul_nfd(cp):
    """Jamo of a precomposed Hangul syllable (the algorithm of Unicode ch. 3.12)."""
    s = cp - HANGUL_FIRST
    out = [0x1100 + s // 588, 0x1161 + (s % 588) // 28]
    if s % 28:
        out.append(0x11A7 + s % 28)
    return out


def ranges_of(cps):
    """Sorted code points -> [(first, last)] runs."""
    out = []
    for cp in cps:
        if out and out[-1][1] + 1 == cp:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return out


def emit_ranges(lines, name, cps, why):
    rs = ranges_of(cps)
    lines.append(f"// {why}: {len(cps)} code points in {len(rs)} ranges.")
    lines.append(f"inline constexpr CpRange {name}[] = {{")
    for i in range(0, len(rs), 6):
        lines.append("    " + " ".join(f"{{0x{a:05x}, 0x{b:05x}}}," for a, b in rs[i:i + 6]))
    lines.append("};")


def emit_mapping(lines, name, mapping, why):
    """cp -> code point sequence, as a sorted index into one pool."""
    pool = []
    entries = []
    for cp in sorted(mapping):
        seq = mapping[cp]
        entries.append((cp, len(pool), len(seq)))
        pool.extend(seq)
    lines.append(f"// {why}: {len(entries)} code points, {len(pool)} code points of output.")
    lines.append(f"inline constexpr char32_t {name}Pool[] = {{")
    for i in range(0, len(pool), 10):
        lines.append("    " + " ".join(f"0x{c:05x}," for c in pool[i:i + 10]))
    lines.append("};")
    lines.append(f"inline constexpr CpMapping {name}[] = {{")
    for i in range(0, len(entries), 4):
        lines.append("    " + " ".join(f"{{0x{c:05x}, {o}, {n}}}," for c, o, n in entries[i:i + 4]))
    lines.append("};")


def bert_main(out):
    import tokenizers
    from tokenizers.normalizers import BertNormalizer
    from tokenizers.pre_tokenizers import BertPreTokenizer

    def norm(**flags):
        base = dict(clean_text=False, handle_chinese_chars=False, strip_accents=False,
                    lowercase=False)
        base.update(flags)
        return BertNormalizer(**base)

    clean, cjk = norm(clean_text=True), norm(handle_chinese_chars=True)
    strip, lower = norm(strip_accents=True), norm(lowercase=True)
    pre = BertPreTokenizer()

    removed, spaces, chinese, punct, split_ws = [], [], [], [], []
    strip_map, lower_map = {}, {}
    differs = {"removed": 0, "punctuation": 0, "strip": 0, "lower": 0}
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue  # not representable in a Rust str: the C++ side reads them as U+FFFD
        c = chr(cp)
        cat = unicodedata.category(c)
        r = clean.normalize_str(c)
        if r == "":
            removed.append(cp)
        elif r == " " and c != " ":
            spaces.append(cp)
        py_removed = cp in (0, 0xFFFD) or (cat in ("Cc", "Cf", "Co") and c not in "\t\n\r")
        differs["removed"] += (r == "") != py_removed
        if cjk.normalize_str(c) != c:
            chinese.append(cp)
        n = len(pre.pre_tokenize_str("a" + c + "a"))
        if n == 3:
            punct.append(cp)
        elif n == 2:
            split_ws.append(cp)
        py_punct = cat.startswith("P") or (cp < 128 and not c.isalnum() and c.isprintable()
                                           and c != " ")
        differs["punctuation"] += (n == 3) != py_punct
        s = strip.normalize_str(c)
        py_s = "".join(x for x in unicodedata.normalize("NFD", c) if unicodedata.category(x) != "Mn")
        differs["strip"] += s != py_s
        if HANGUL_FIRST <= cp <= HANGUL_LAST:
            assert [ord(x) for x in s] == hangul_nfd(cp), hex(cp)
        elif s != c:
            strip_map[cp] = [ord(x) for x in s]
        lo = lower.normalize_str(c)
        differs["lower"] += lo != c.lower()
        if lo != c:
            lower_map[cp] = [ord(x) for x in lo]

    lines = [
        "// Generated by scripts/gen_unicode_tables.py --bert from HF tokenizers "
        f"{tokenizers.__version__} (its BertNormalizer and",
        "// BertPreTokenizer probed one code point at a time) under Python "
        f"{sys.version.split()[0]}. Do not edit.",
        f"// Python's unicodedata (Unicode {unicodedata.unidata_version}) would differ in: "
        + ", ".join(f"{k} {v}" for k, v in differs.items()) + " code points.",
        "// Hangul syllables (U+AC00..U+D7A3) decompose algorithmically and are not listed.",
    ]
    emit_ranges(lines, "kBertRemoved", removed, "clean_text drops (NUL, U+FFFD, Cc but \\t\\n\\r, Cf, Co)")
    emit_ranges(lines, "kBertSpace", spaces, "clean_text turns into U+0020 (\\t \\n \\r, White_Space)")
    emit_ranges(lines, "kBertChinese", chinese, "handle_chinese_chars pads with spaces (CJK ideographs)")
    emit_ranges(lines, "kBertPunct", punct, "BertPreTokenizer isolates (ASCII punctuation and P*)")
    emit_ranges(lines, "kBertSplitSpace", split_ws, "BertPreTokenizer splits on and drops (White_Space)")
    emit_mapping(lines, "kBertStrip", strip_map, "strip_accents: NFD without nonspacing marks")
    emit_mapping(lines, "kBertLower", lower_map, "lowercase: char::to_lowercase")
    with open(out, "w", encoding="ascii") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{out}: removed {len(removed)}, chinese {len(chinese)}, punct {len(punct)}, "
          f"strip {len(strip_map)}, lower {len(lower_map)}; differs from unicodedata {differs}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--bert":
        bert_main(sys.argv[2] if len(sys.argv) > 2 else "kernels/tokenizer/bert_tables.inc")
        return
    out = sys.argv[1] if len(sys.argv) > 1 else "kernels/tokenizer/unicode_ranges.inc"
    runs = []
    prev = None
    for cp in range(0x110000):
        k = CLASS[unicodedata.category(chr(cp))]
        if k != prev:
            runs.append((cp << 3) | k)
            prev = k
    lines = [
        "// Generated by scripts/gen_unicode_tables.py from Python's unicodedata "
        f"(Unicode {unicodedata.unidata_version}). Do not edit.",
        "// One entry per run of code points with the same class: (first code point << 3) | class.",
    ]
    for i in range(0, len(runs), 8):
        lines.append(" ".join(f"0x{r:07x}," for r in runs[i:i + 8]))
    with open(out, "w", encoding="ascii") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{out}: {len(runs)} runs")


if __name__ == "__main__":
    main()
