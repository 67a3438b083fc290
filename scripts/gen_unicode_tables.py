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


def emit_values(lines, name, values, why):
    """cp -> small value, as runs (first, last, value) of equal values."""
    runs = []
    for cp in sorted(values):
        v = values[cp]
        if runs and runs[-1][1] + 1 == cp and runs[-1][2] == v:
            runs[-1][1] = cp
        else:
            runs.append([cp, cp, v])
    lines.append(f"// {why}: {len(values)} code points in {len(runs)} runs.")
    lines.append(f"inline constexpr CpValue {name}[] = {{")
    for i in range(0, len(runs), 5):
        lines.append("    " + " ".join(f"{{0x{a:05x}, 0x{b:05x}, {v}}}," for a, b, v in runs[i:i + 5]))
    lines.append("};")


def probe_ccc(nfd, cp):
    """HF's canonical combining class of a mark: unicodedata's, or 0 where HF's (older) NFD
    tables do not know the mark. Ordering against a mark of class 1 (U+0334) or 230 (U+0301)
    tells which."""
    c = chr(cp)
    k = unicodedata.combining(c)
    if k == 0:
        return 0
    if k > 1:
        return k if nfd.normalize_str("x" + c + "\u0334") == "x\u0334" + c else 0
    return k if nfd.normalize_str("x\u0301" + c) == "x" + c + "\u0301" else 0


def bert_main(out):
    import tokenizers
    from tokenizers.normalizers import NFD, BertNormalizer
    from tokenizers.pre_tokenizers import BertPreTokenizer

    def norm(**flags):
        base = dict(clean_text=False, handle_chinese_chars=False, strip_accents=False,
                    lowercase=False)
        base.update(flags)
        return BertNormalizer(**base)

    clean, cjk = norm(clean_text=True), norm(handle_chinese_chars=True)
    strip, lower = norm(strip_accents=True), norm(lowercase=True)
    nfd = NFD()
    pre = BertPreTokenizer()

    removed, spaces, chinese, punct, split_ws, nonspacing = [], [], [], [], [], []
    nfd_map, lower_map, ccc = {}, {}, {}
    differs = {"removed": 0, "punctuation": 0, "strip": 0, "lower": 0, "ccc": 0}
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
        # strip_accents = NFD, then drop the nonspacing marks.
        d = nfd.normalize_str(c)
        s = strip.normalize_str(c)
        py_s = "".join(x for x in unicodedata.normalize("NFD", c) if unicodedata.category(x) != "Mn")
        differs["strip"] += s != py_s
        if HANGUL_FIRST <= cp <= HANGUL_LAST:
            assert [ord(x) for x in d] == hangul_nfd(cp), hex(cp)
        elif d != c:
            nfd_map[cp] = [ord(x) for x in d]
        elif s == "":
            nonspacing.append(cp)
        k = probe_ccc(nfd, cp)
        differs["ccc"] += k != unicodedata.combining(c)
        if k:
            ccc[cp] = k
        lo = lower.normalize_str(c)
        differs["lower"] += lo != c.lower()
        if lo != c:
            lower_map[cp] = [ord(x) for x in lo]
    check_strip_model(strip, nfd_map, set(nonspacing), ccc)

    lines = [
        "// Generated by scripts/gen_unicode_tables.py --bert from HF tokenizers "
        f"{tokenizers.__version__} (its BertNormalizer, NFD and",
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
    emit_mapping(lines, "kBertNfd", nfd_map, "strip_accents, first step: canonical decomposition")
    emit_values(lines, "kBertCcc", ccc, "canonical combining class (0 unless listed)")
    emit_ranges(lines, "kBertNonspacing", nonspacing, "strip_accents, second step: drops (Mn)")
    emit_mapping(lines, "kBertLower", lower_map, "lowercase: char::to_lowercase")
    with open(out, "w", encoding="ascii") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{out}: removed {len(removed)}, chinese {len(chinese)}, punct {len(punct)}, "
          f"nfd {len(nfd_map)}, ccc {len(ccc)}, nonspacing {len(nonspacing)}, "
          f"lower {len(lower_map)}; differs from unicodedata {differs}")


def check_strip_model(strip, nfd_map, nonspacing, ccc):
    """The C++ side's model of strip_accents (decompose each code point, stable-sort each run of
    marks by combining class, drop the nonspacing marks) against HF on every code point alone
    and on every pair of the marks that survive, where the order is what can go wrong."""

    def model(text):
        out = []
        for ch in text:
            cp = ord(ch)
            out.extend(hangul_nfd(cp) if HANGUL_FIRST <= cp <= HANGUL_LAST else nfd_map.get(cp, [cp]))
        i = 0
        while i < len(out):  # canonical ordering
            j = i
            while j < len(out) and ccc.get(out[j], 0):
                j += 1
            out[i:j] = sorted(out[i:j], key=lambda c: ccc[c])
            i = j + 1
        return "".join(chr(c) for c in out if c not in nonspacing)

    for cp in range(0x110000):
        if not 0xD800 <= cp <= 0xDFFF:
            assert model(chr(cp)) == strip.normalize_str(chr(cp)), hex(cp)
    kept = [chr(c) for c in ccc if c not in nonspacing]
    removed_marks = [chr(c) for c in sorted(nonspacing) if c in ccc][:64]
    for a in kept:
        for b in kept:
            t = "x" + a + b
            assert model(t) == strip.normalize_str(t), (hex(ord(a)), hex(ord(b)))
        for m in removed_marks:  # a dropped mark inside the run still sorts with it
            t = "x" + a + m + "y" + m + a
            assert model(t) == strip.normalize_str(t), (hex(ord(a)), hex(ord(m)))


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
