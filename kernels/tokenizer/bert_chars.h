// Per-code-point behaviour of HF tokenizers' BertNormalizer and BertPreTokenizer, from tables
// measured on the pinned HF `tokenizers` (bert_tables.inc, scripts/gen_unicode_tables.py --bert).
// HF mixes Unicode versions (old unicode_categories tables for punctuation, control and mark
// tests; the Rust standard library's White_Space and lowercase), so no single Unicode version
// gives the same answers. Internal to kernels/tokenizer/ (the WordPiece tokenizer).
#pragma once

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

// Appends what strip_accents makes of cp (its canonical decomposition without the nonspacing
// marks; nothing for a nonspacing mark itself) to out.
void append_stripped(char32_t cp, std::u32string& out);
// cp lowercased (one to three code points; İ gives "i̇"), appended to out.
void append_lower(char32_t cp, std::u32string& out);

}  // namespace vsynth::kernels::bert
