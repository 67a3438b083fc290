// Prompt assembly for generate.llm: what the item offers (task fields, the anchor, a context
// facet, feedback from earlier attempts) turned into the model's tokens.
//
// Two modes:
//   complete  the model continues code: the text before the cursor (the `anchor` facet's file
//             up to its cursor, or the task's /prefix, or its /source up to /cursor/offset, or
//             a HumanEval-style /prompt), with fill-in-the-middle tokens when the task has a
//             suffix and the vocabulary has FIM tokens (fim_format below); otherwise a plain
//             prefix, with the rest of the unit after the cursor shown above it as comments
//             (suffix_without_fim: above) or left out (drop). Prompt::suffix says which.
//   instruct  the model answers a request in its chat template: the task's /instruction
//             and/or /prompt (code to complete, shown in a fenced block), with the context and
//             the feedback of earlier attempts, asking for one fenced code block.
// `auto` picks complete when there is a cursor or a prefix, or when the model is a base model
// (its GGUF has no tokenizer.chat_template: a HumanEval prompt is then continued as code, the
// way base models are evaluated, and an instruction becomes a comment above the code);
// instruct otherwise.
//
// Chat templates are written by hand (no Jinja engine), chosen by the markers in the GGUF's
// chat template text when there is one, else by the vocabulary's special tokens: gemma
// (<start_of_turn>), ChatML (qwen2: <|im_start|>), llama3 (<|start_header_id|>), and llama2's
// [INST] otherwise.
//
// The `context` facet (context.prune; stages/facets/context.h): when it holds the cursor
// (cursor_offset() >= 0) it replaces the text around the cursor (the pruned file with its
// dependencies' summaries); otherwise its text goes above the code as background.
//
// Task text never becomes control tokens: it is encoded with parse_special off, so a task that
// mentions "<end_of_turn>" cannot end the turn.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/item.h"
#include "kernels/gguf/reader.h"
#include "kernels/tokenizer/tokenizer.h"

namespace vsynth::stages::generation {

enum class PromptMode { Complete, Instruct };
const char* to_string(PromptMode m);

enum class ChatTemplate { Gemma, ChatML, Llama3, Llama2 };
const char* to_string(ChatTemplate t);
ChatTemplate detect_chat_template(const kernels::Tokenizer& tok,
                                  std::string_view template_text = {});

// Fill-in-the-middle: the vocabulary's tokens, found from the GGUF's
// tokenizer.ggml.fim_{pre,suf,mid,rep,sep}_token_id keys first, then by the spellings of the
// known families: qwen (Qwen2.5-Coder, CodeGemma: <|fim_prefix|> <|fim_suffix|> <|fim_middle|>,
// <|repo_name|>, <|file_sep|> or <|file_separator|>), starcoder (<fim_prefix> ... <repo_name>
// <file_sep>), codellama (▁<PRE> ▁<SUF> ▁<MID>), deepseek (<｜fim▁begin｜> prefix <｜fim▁hole｜>
// suffix <｜fim▁end｜>). Order: PSM ([pre] prefix [suf] suffix [mid], every family's default and
// llama.cpp's) or SPM ([suf] suffix [pre] prefix [mid], llama.cpp's --spm-infill).
// With a file separator, the task's /files are packed before the cursor's file the way
// Qwen2.5-Coder was trained on repositories: [sep]path\ntext\n per file, then [sep]path\n of
// the cursor's file and its FIM prompt.
// The GGUF's own FIM token ids (tokenizer.ggml.fim_{pre,suf,mid,pad,rep,sep}_token_id, any
// integer type); kNoToken where absent or outside the vocabulary of `n_vocab` tokens.
struct GgufFimIds {
  kernels::TokenId pre = kernels::kNoToken, suf = kernels::kNoToken, mid = kernels::kNoToken;
  kernels::TokenId pad = kernels::kNoToken, rep = kernels::kNoToken, sep = kernels::kNoToken;
};
GgufFimIds read_gguf_fim(const kernels::GgufFile& file, std::size_t n_vocab);

struct FimFormat {
  std::string family;  // gguf | qwen | starcoder | codellama | deepseek
  kernels::TokenId pre = kernels::kNoToken, suf = kernels::kNoToken, mid = kernels::kNoToken;
  kernels::TokenId repo = kernels::kNoToken, sep = kernels::kNoToken;
  bool suffix_first = false;  // SPM
};
std::optional<FimFormat> fim_format(const kernels::Tokenizer& tok, const GgufFimIds& gguf = {});

struct PromptSettings {
  std::string mode = "auto";  // auto | complete | instruct
  std::string language;       // empty: the task's /language, the anchor's, else python
  bool chat_model = true;     // the model has a chat template (auto may then pick instruct)
  std::size_t feedback_max_bytes = 2000;     // per feedback message (the tail is kept)
  std::size_t feedback_max_messages = 2;     // the most recent ones
  std::string suffix_without_fim = "above";  // above | drop
  std::string fim_order = "auto";            // auto (the family's: psm) | psm | spm
  // Gather the task's /files for repository-level FIM packing: only worth copying when the
  // vocabulary has a file separator (generate.llm sets it from fim_format).
  bool pack_files = true;
};

// What the item offers, gathered once per attempt.
struct PromptParts {
  PromptMode mode = PromptMode::Instruct;
  std::string language = "python";
  std::string prefix, suffix;         // complete: around the cursor
  std::string instruction;            // instruct: the request in words
  std::string code;                   // instruct: code to complete (HumanEval /prompt)
  std::string entry_point;            // the function the tests call, when the task names it
  std::string context;                // the `context` facet's text, when there is one
  std::vector<std::string> feedback;  // earlier attempts' messages, oldest first
  // complete: where in `prefix` the unit enclosing the cursor starts (a line start; the anchor's
  // function, else its class, else the last line at column 0 that is not a comment or a
  // closing bracket). Feedback goes there, so what comes before it stays the same on a retry.
  std::size_t unit_start = 0;
  std::string path;  // the cursor's file ("" when unnamed): repository-level FIM packing
  std::vector<std::pair<std::string, std::string>> files;  // the task's /files, chunks joined
  std::string suffix_without_fim = "above";
  std::string fim_order = "auto";
};

// The code after the cursor that a model without FIM sees above the unit: the rest of the
// cursor's line and the lines after it up to the end of the enclosing unit (before the next
// line at column 0, or through it when it closes a bracket), at most 30 lines.
std::string suffix_remainder(std::string_view suffix);

// The last line of `prefix` that starts a top-level unit: begins at column 0 with something
// other than a comment (`comment` is the language's leader, e.g. "# ") or a closing bracket.
// 0 when there is none.
std::size_t top_level_line(std::string_view prefix, std::string_view comment);

// Throws std::invalid_argument naming the task and the fields that would do when the item has
// nothing to prompt with for the mode.
PromptParts gather_prompt_parts(const graph::Item& item, const PromptSettings& settings);

// The engine's KV block (kernels/engine.cpp): prompt truncation keeps multiples of it.
inline constexpr std::size_t kKvBlockTokens = 32;

struct Prompt {
  std::vector<kernels::TokenId> tokens;
  std::string text;  // the prompt as the model sees it, special tokens spelled out
  PromptMode mode = PromptMode::Complete;
  std::string format;  // "prefix", "fim", or the chat template's name
  // complete mode, how the code after the cursor was used: fim, above, dropped, none (there
  // was none); empty in instruct mode.
  std::string suffix;
  int32_t packed_files = 0;  // task files packed with the FIM file separator
};

// `max_tokens`: the prompt's budget (context length minus the generation's); a completion
// prompt over it loses its oldest tokens (BOS kept), a whole number of KV blocks of them
// (kKvBlockTokens) when that still leaves a block, so that prompts growing by a few tokens (an
// edit session, a retry's feedback) keep the same start; an instruct prompt over it throws
// std::invalid_argument.
//
// Stable first (the prefix KV cache reuses a prompt's longest common start): a completion
// prompt is [BOS][FIM prefix] context, the file before the enclosing unit, feedback comments,
// the unit up to the cursor[, FIM suffix]; each piece is encoded on its own so that its tokens
// do not depend on what follows it. An instruct prompt puts the context, then the request and
// its code, then the feedback, last.
// `gguf_fim`: the model file's FIM ids (read_gguf_fim), which win over the spellings.
Prompt render_prompt(const PromptParts& parts, const kernels::Tokenizer& tok,
                     std::size_t max_tokens, std::string_view chat_template = {},
                     const GgufFimIds& gguf_fim = {});

// The user turn of an instruct prompt (before the chat template wraps it).
std::string instruct_message(const PromptParts& parts);

// One user message in the vocabulary's chat template, ready for the model's answer: BOS (when
// the vocabulary adds one), the template's tokens, the message encoded as plain text.
std::vector<kernels::TokenId> render_chat(const kernels::Tokenizer& tok, std::string_view message,
                                          ChatTemplate t);

}  // namespace vsynth::stages::generation
