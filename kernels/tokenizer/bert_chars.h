// Per-code-point behaviour of HF tokenizers' BertNormalizer and BertPreTokenizer, from tables
// measured on the pinned HF `tokenizers` (bert_tables.inc, scripts/gen_unicode_tables.py --bert).
// HF mixes Unicode versions (old unicode_categories tables for punctuation, control and mark
// tests; the Rust standard library's White_Space and lowercase), so no single Unicode version
// gives the same answers. Internal to kernels/tokenizer/ (the WordPiece tokenizer).
#pragma once

#include <cstdint>
#include <string>

namespace vsynth::kernels::bert {

// clean_text drops it: NUL, U+FFFD, control (Cc but \t \n \r), format (Cf) and private-use (Co).
bool is_removed(char32_t cp);
// clean_text turns it into U+0020: \t \n \r and the White_Space characters that are not removed.
bool is_clean_space(char32_t cp);
// handle_chinese_chars puts a space on each side: the CJK ideograph blocks.
bool is_chinese(char32_t cp);
// BertPreTokenizer makes it a word of its own: ASCII punctuation and Unicode P*.
bool is_punct(char32_t cp);
// BertPreTokenizer splits on it and drops it: White_Space.
bool is_split_space(char32_t cp);

// strip_accents is NFD, then dropping the nonspacing marks. Appends cp's canonical
// decomposition (cp itself when it has none) to out.
void append_nfd(char32_t cp, std::u32string& out);
// Canonical combining class: 0 for starters; NFD stable-sorts each run of non-zero classes.
uint8_t combining_class(char32_t cp);
// strip_accents drops it after NFD: a nonspacing mark (Mn).
bool is_nonspacing(char32_t cp);
// cp lowercased (one to three code points; İ gives "i̇"), appended to out.
void append_lower(char32_t cp, std::u32string& out);

}  // namespace vsynth::kernels::bert
