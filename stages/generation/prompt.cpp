#include "stages/generation/prompt.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "stages/ast/anchor_stage.h"
#include "stages/facets/context.h"
#include "stages/facets/task_file.h"

namespace vsynth::stages::generation {

namespace {

using kernels::TokenId;

const nlohmann::json* field(const graph::Item& item, const char* name) {
  const nlohmann::json& d = item.task().data;
  if (!d.is_object()) return nullptr;
  auto it = d.find(name);
  return it != d.end() && it->is_string() ? &*it : nullptr;
}

std::string string_field(const graph::Item& item, const char* name) {
  const nlohmann::json* f = field(item, name);
  return f ? f->get<std::string>() : std::string();
}

std::string display_name(std::string_view lang) {
  if (lang == "python") return "Python";
  if (lang == "cpp") return "C++";
  if (lang == "c") return "C";
  if (lang == "javascript") return "JavaScript";
  if (lang == "typescript" || lang == "tsx") return "TypeScript";
  if (lang == "go") return "Go";
  if (lang == "java") return "Java";
  if (lang == "rust") return "Rust";
  return std::string(lang);
}

std::string comment_leader(std::string_view lang) {
  if (lang == "python" || lang == "ruby" || lang == "bash" || lang == "shell") return "# ";
  return "// ";
}

// Feedback as comments, placed right above the unit being completed.
std::string feedback_comments(const PromptParts& p) {
  std::string h;
  const std::string c = comment_leader(p.language);
  for (const std::string& f : p.feedback) {
    h += c + "A previous attempt at the code below failed:\n";
    std::size_t start = 0;
    while (start < f.size()) {
      std::size_t end = f.find('\n', start);
      if (end == std::string::npos) end = f.size();
      h += c + f.substr(start, end - start) + '\n';
      start = end + 1;
    }
  }
  return h;
}

// The context above a completion prefix, separated by a blank line.
std::string context_header(const PromptParts& p) {
  std::string h = p.context;
  if (!h.empty()) {
    if (h.back() != '\n') h += '\n';
    h += '\n';
  }
  return h;
}

// Where the unit the anchor encloses (function, else class) starts in `prefix`: the line of
// the unit's first byte, found by its text (the prefix may be context.prune's, not the file).
std::size_t anchored_unit_start(const ast::AnchorFacet& a, std::string_view prefix) {
  const ast::Anchor& an = a.anchor();
  const ast::NodeInfo* unit =
      an.function ? &*an.function : (an.enclosing_class ? &*an.enclosing_class : nullptr);
  if (!unit) return std::string::npos;
  const std::string_view src = a.file().source();
  const std::size_t begin = unit->span.start_byte;
  if (begin > an.byte || begin > src.size()) return std::string::npos;
  const std::size_t line = src.rfind('\n', begin == 0 ? 0 : begin - 1);
  const std::size_t line_start = line == std::string_view::npos || begin == 0 ? 0 : line + 1;
  std::size_t line_end = src.find('\n', line_start);
  if (line_end == std::string_view::npos || line_end > an.byte) line_end = an.byte;
  const std::string_view header = src.substr(line_start, line_end - line_start);
  if (header.empty()) return std::string::npos;
  for (std::size_t at = prefix.rfind(header); at != std::string_view::npos;
       at = at == 0 ? std::string_view::npos : prefix.rfind(header, at - 1)) {
    if (at == 0 || prefix[at - 1] == '\n') return at;
  }
  return std::string::npos;
}

// Appends `text` encoded: template text parses control tokens, task text never does.
void append(const kernels::Tokenizer& tok, std::vector<TokenId>& out, std::string_view text,
            bool is_template) {
  if (text.empty()) return;
  kernels::EncodeOptions o;
  o.add_special = false;  // BOS is placed by the caller, once
  o.parse_special = is_template;
  tok.encode(text, out, o);
}

}  // namespace

std::size_t top_level_line(std::string_view prefix, std::string_view comment) {
  const std::string_view leader = comment.substr(0, comment.find(' '));  // "#", "//"
  std::size_t best = 0;
  for (std::size_t at = 0; at < prefix.size();) {
    const char c = prefix[at];
    const bool starts_unit = c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '}' &&
                             c != ')' && c != ']' && !prefix.substr(at).starts_with(leader);
    if (starts_unit) best = at;
    const std::size_t nl = prefix.find('\n', at);
    if (nl == std::string_view::npos) break;
    at = nl + 1;
  }
  return best;
}

GgufFimIds read_gguf_fim(const kernels::GgufFile& file, std::size_t n_vocab) {
  const auto id = [&](std::string_view which) {
    const kernels::GgufValue* v =
        file.find("tokenizer.ggml.fim_" + std::string(which) + "_token_id");
    if (!v) return kernels::kNoToken;
    int64_t n = -1;
    switch (v->type()) {
      case kernels::GgufType::U32:
        n = v->as<uint32_t>();
        break;
      case kernels::GgufType::I32:
        n = v->as<int32_t>();
        break;
      case kernels::GgufType::U64:
        n = static_cast<int64_t>(std::min<uint64_t>(v->as<uint64_t>(), INT64_MAX));
        break;
      case kernels::GgufType::I64:
        n = v->as<int64_t>();
        break;
      default:
        return kernels::kNoToken;
    }
    return n >= 0 && static_cast<uint64_t>(n) < n_vocab ? static_cast<TokenId>(n)
                                                        : kernels::kNoToken;
  };
  return {id("pre"), id("suf"), id("mid"), id("pad"), id("rep"), id("sep")};
}

std::optional<FimFormat> fim_format(const kernels::Tokenizer& tok, const GgufFimIds& g) {
  if (g.pre != kernels::kNoToken && g.suf != kernels::kNoToken && g.mid != kernels::kNoToken) {
    return FimFormat{"gguf", g.pre, g.suf, g.mid, g.rep, g.sep, false};
  }
  struct Family {
    std::string_view name, pre, suf, mid;
    std::string_view repo, sep, sep2;
  };
  static const Family kFamilies[] = {
      {"qwen", "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<|repo_name|>",
       "<|file_sep|>", "<|file_separator|>"},
      {"starcoder", "<fim_prefix>", "<fim_suffix>", "<fim_middle>", "<repo_name>", "<file_sep>",
       ""},
      {"codellama", "\u2581<PRE>", "\u2581<SUF>", "\u2581<MID>", "", "", ""},
      {"deepseek", "<\uff5cfim\u2581begin\uff5c>", "<\uff5cfim\u2581hole\uff5c>",
       "<\uff5cfim\u2581end\uff5c>", "", "", ""},
  };
  for (const Family& f : kFamilies) {
    const auto pre = tok.find(f.pre), suf = tok.find(f.suf), mid = tok.find(f.mid);
    if (!pre || !suf || !mid) continue;
    FimFormat out{std::string(f.name), *pre, *suf, *mid};
    if (const auto r = f.repo.empty() ? std::nullopt : tok.find(f.repo)) out.repo = *r;
    for (std::string_view sep : {f.sep, f.sep2}) {
      const auto id = sep.empty() ? std::nullopt : tok.find(sep);
      if (id && out.sep == kernels::kNoToken) out.sep = *id;
    }
    return out;
  }
  return std::nullopt;
}

std::string suffix_remainder(std::string_view suffix) {
  std::string out;
  std::size_t at = 0;
  for (int line = 0; at < suffix.size() && line < 30; ++line) {
    std::size_t end = suffix.find('\n', at);
    end = end == std::string_view::npos ? suffix.size() : end + 1;
    const std::string_view l = suffix.substr(at, end - at);
    if (line > 0 && !l.empty() && l[0] != ' ' && l[0] != '\t' && l[0] != '\n' && l[0] != '\r') {
      // A line at column 0: the unit's closing bracket belongs to it, anything else starts the
      // next unit.
      if (l[0] == '}' || l[0] == ')' || l[0] == ']') out += l;
      break;
    }
    out += l;
    at = end;
  }
  return out;
}

const char* to_string(PromptMode m) {
  return m == PromptMode::Complete ? "complete" : "instruct";
}

const char* to_string(ChatTemplate t) {
  switch (t) {
    case ChatTemplate::Gemma:
      return "gemma";
    case ChatTemplate::ChatML:
      return "chatml";
    case ChatTemplate::Llama3:
      return "llama3";
    case ChatTemplate::Llama2:
      return "llama2";
  }
  return "?";
}

ChatTemplate detect_chat_template(const kernels::Tokenizer& tok, std::string_view text) {
  if (text.find("<start_of_turn>") != std::string_view::npos) return ChatTemplate::Gemma;
  if (text.find("<|im_start|>") != std::string_view::npos) return ChatTemplate::ChatML;
  if (text.find("<|start_header_id|>") != std::string_view::npos) return ChatTemplate::Llama3;
  if (text.find("[INST]") != std::string_view::npos) return ChatTemplate::Llama2;
  if (tok.find("<start_of_turn>") && tok.find("<end_of_turn>")) return ChatTemplate::Gemma;
  if (tok.find("<|im_start|>") && tok.find("<|im_end|>")) return ChatTemplate::ChatML;
  if (tok.find("<|start_header_id|>") && tok.find("<|eot_id|>")) return ChatTemplate::Llama3;
  return ChatTemplate::Llama2;
}

PromptParts gather_prompt_parts(const graph::Item& item, const PromptSettings& s) {
  PromptParts p;
  const auto* anchor = item.find<ast::AnchorFacet>();
  const nlohmann::json* prefix = field(item, "prefix");
  const nlohmann::json* prompt = field(item, "prompt");
  const nlohmann::json* instruction = field(item, "instruction");

  if (!s.language.empty()) {
    p.language = s.language;
  } else if (const nlohmann::json* l = field(item, "language")) {
    p.language = l->get<std::string>();
  } else if (anchor) {
    p.language = std::string(anchor->file().language().name());
  }
  p.entry_point = string_field(item, "entry_point");

  // A task with its file and a byte cursor but no /prefix (an anonymous buffer that ast.anchor
  // left unanchored): the file up to the cursor is the prefix.
  std::string source_prefix, source_suffix;
  bool source_cursor = false;
  if (!anchor && !prefix) {
    const nlohmann::json& d = item.task().data;
    const nlohmann::json* src = field(item, "source");
    const auto c = d.is_object() ? d.find("cursor") : d.end();
    if (src && c != d.end() && c->is_object() && c->contains("offset") &&
        (*c)["offset"].is_number_unsigned()) {
      const std::string& text = src->get_ref<const std::string&>();
      const std::size_t at = std::min<std::size_t>((*c)["offset"].get<uint64_t>(), text.size());
      source_prefix = text.substr(0, at);
      source_suffix = text.substr(at);
      source_cursor = true;
    }
  }
  const bool has_cursor = anchor || prefix || source_cursor;
  p.suffix_without_fim = s.suffix_without_fim;
  p.fim_order = s.fim_order;
  if (anchor) {
    p.path = anchor->file().path();
  } else if (const nlohmann::json* path = field(item, "path")) {
    p.path = path->get<std::string>();
  }
  if (has_cursor && s.pack_files) {
    try {
      p.files = facets::task_file_texts(item, nlohmann::json::json_pointer("/files"));
    } catch (const std::invalid_argument&) {
      p.files.clear();  // a malformed list: the context stages say so; the prompt goes without
    }
  }
  if (s.mode == "complete" || (s.mode == "auto" && (has_cursor || !s.chat_model))) {
    p.mode = PromptMode::Complete;
  } else if (s.mode == "instruct" || s.mode == "auto") {
    p.mode = PromptMode::Instruct;
  } else {
    throw std::invalid_argument("unknown prompt mode `" + s.mode +
                                "` (valid: auto, complete, instruct)");
  }

  if (anchor) {
    const std::string_view src = anchor->file().source();
    const std::size_t at = anchor->anchor().byte;
    p.prefix = std::string(src.substr(0, at));
    p.suffix = std::string(src.substr(at));
  } else if (prefix) {
    p.prefix = prefix->get<std::string>();
    p.suffix = string_field(item, "suffix");
  } else if (source_cursor) {
    p.prefix = std::move(source_prefix);
    p.suffix = std::move(source_suffix);
  }
  // A context that holds the cursor (context.prune's pruned file with the other files'
  // summaries above it) replaces the raw text around the cursor; any other context is shown
  // as background.
  if (const auto* ctx = item.find<facets::ContextFacet>()) {
    if (ctx->cursor_offset() >= 0 && has_cursor) {
      p.prefix = std::string(ctx->prefix());
      p.suffix = std::string(ctx->suffix());
    } else {
      p.context = std::string(ctx->text());
    }
  }

  if (p.mode == PromptMode::Complete) {
    if (!has_cursor) {
      if (!prompt && !instruction) {
        throw std::invalid_argument(
            "task `" + item.id() +
            "`: completion needs a cursor (the `anchor` facet from ast.anchor), a string "
            "/prefix, a string /prompt to continue, or an /instruction");
      }
      // A base model gets an instruction as a comment above the code it should write.
      if (instruction) {
        const std::string c = comment_leader(p.language);
        const std::string text = instruction->get<std::string>();
        std::size_t start = 0;
        while (start < text.size()) {
          std::size_t end = text.find('\n', start);
          if (end == std::string::npos) end = text.size();
          p.prefix += c + text.substr(start, end - start) + '\n';
          start = end + 1;
        }
      }
      if (prompt) p.prefix += prompt->get<std::string>();
    }
  } else {
    if (instruction) p.instruction = instruction->get<std::string>();
    if (prompt) {
      p.code = prompt->get<std::string>();
    } else if (has_cursor) {
      p.code = p.prefix;  // asked in words to finish the file up to its cursor
    }
    if (p.instruction.empty() && p.code.empty()) {
      throw std::invalid_argument("task `" + item.id() +
                                  "`: an instruct prompt needs a string /instruction or /prompt "
                                  "(or a /prefix or cursor to complete)");
    }
  }

  if (p.mode == PromptMode::Complete) {
    const std::size_t at = anchor ? anchored_unit_start(*anchor, p.prefix) : std::string::npos;
    p.unit_start =
        at != std::string::npos ? at : top_level_line(p.prefix, comment_leader(p.language));
  }

  const auto& fb = item.feedback();
  const std::size_t first =
      fb.size() > s.feedback_max_messages ? fb.size() - s.feedback_max_messages : 0;
  for (std::size_t i = first; i < fb.size(); ++i) {
    std::string m = fb[i].message;
    if (m.size() > s.feedback_max_bytes) {
      m = "..." + m.substr(m.size() - s.feedback_max_bytes);
    }
    p.feedback.push_back(std::move(m));
  }
  return p;
}

std::string instruct_message(const PromptParts& p) {
  const std::string lang = p.language;
  const std::string name = display_name(lang);
  std::string m;
  if (!p.context.empty()) {
    m += "Relevant code from the project:\n```" + lang + "\n" + p.context;
    if (m.back() != '\n') m += '\n';
    m += "```\n\n";
  }
  if (!p.instruction.empty()) m += p.instruction + "\n\n";
  if (!p.code.empty()) {
    if (p.instruction.empty()) m += "Complete the following " + name + " code.\n\n";
    m += "```" + lang + "\n" + p.code;
    if (m.back() != '\n') m += '\n';
    m += "```\n\n";
  }
  for (const std::string& f : p.feedback) {
    m += "A previous answer was wrong. This is what went wrong:\n```\n" + f;
    if (m.back() != '\n') m += '\n';
    m += "```\nFix the problem.\n\n";
  }
  if (!p.entry_point.empty()) {
    m += "Reply with the complete function `" + p.entry_point +
         "`, including its imports, in a single ```" + lang + " code block.";
  } else {
    m += "Reply with the complete " + name + " code in a single ```" + lang + " code block.";
  }
  return m;
}

std::vector<TokenId> render_chat(const kernels::Tokenizer& tok, std::string_view msg,
                                 ChatTemplate t) {
  std::vector<TokenId> ids;
  if (tok.add_bos()) ids.push_back(tok.bos());
  switch (t) {
    case ChatTemplate::Gemma:
      append(tok, ids, "<start_of_turn>user\n", true);
      append(tok, ids, msg, false);
      append(tok, ids, "<end_of_turn>\n<start_of_turn>model\n", true);
      break;
    case ChatTemplate::ChatML:
      append(tok, ids, "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n", true);
      append(tok, ids, "<|im_start|>user\n", true);
      append(tok, ids, msg, false);
      append(tok, ids, "<|im_end|>\n<|im_start|>assistant\n", true);
      break;
    case ChatTemplate::Llama3:
      append(tok, ids, "<|start_header_id|>user<|end_header_id|>\n\n", true);
      append(tok, ids, msg, false);
      append(tok, ids, "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n", true);
      break;
    case ChatTemplate::Llama2:
      append(tok, ids, "[INST] " + std::string(msg) + " [/INST]", false);
      break;
  }
  return ids;
}

Prompt render_prompt(const PromptParts& p, const kernels::Tokenizer& tok, std::size_t max_tokens,
                     std::string_view chat_template, const GgufFimIds& gguf_fim) {
  Prompt out;
  out.mode = p.mode;
  if (p.mode == PromptMode::Complete) {
    const std::optional<FimFormat> fim =
        p.suffix.empty() ? std::nullopt : fim_format(tok, gguf_fim);
    std::vector<TokenId> head;  // BOS, if the vocabulary adds one
    if (tok.add_bos()) head.push_back(tok.bos());
    kernels::EncodeOptions plain{.add_special = false, .parse_special = false};
    // A model without FIM sees the rest of the unit after the cursor as comments right above
    // the unit (after the stable part of the file, so the prefix KV pool still reuses it).
    std::string above;
    if (p.suffix.empty()) {
      out.suffix = "none";
    } else if (fim) {
      out.suffix = "fim";
    } else if (p.suffix_without_fim == "above") {
      std::string rest = suffix_remainder(p.suffix);
      rest.erase(rest.find_last_not_of(" \t\r\n") + 1);  // npos + 1 == 0: all blank
      if (!rest.empty()) {
        const std::string c = comment_leader(p.language);
        above = c + "The code after the cursor:\n";
        std::size_t at = 0;
        while (at < rest.size()) {
          std::size_t end = rest.find('\n', at);
          if (end == std::string::npos) end = rest.size();
          above += c + rest.substr(at, end - at) + '\n';
          at = end + 1;
        }
        out.suffix = "above";
      } else {
        out.suffix = "dropped";
      }
    } else {
      out.suffix = "dropped";
    }
    // Stable first, each piece encoded alone: context + the file before the unit, the code
    // after the cursor (no FIM), feedback, the unit up to the cursor.
    const std::size_t u = std::min(p.unit_start, p.prefix.size());
    std::vector<TokenId> body = tok.encode(context_header(p) + p.prefix.substr(0, u), plain);
    tok.encode(above, body, plain);
    tok.encode(feedback_comments(p), body, plain);
    tok.encode(std::string_view(p.prefix).substr(u), body, plain);
    std::vector<TokenId> tail;
    // Repository-level packing: the task's other files, each after the file separator, then
    // the cursor's file's own separator and name.
    std::vector<std::vector<TokenId>> packed;
    std::vector<TokenId> file_head;
    if (fim && fim->sep != kernels::kNoToken && !p.files.empty()) {
      for (const auto& [path, text] : p.files) {
        if (path == p.path) continue;  // the cursor's file is the FIM part
        std::vector<TokenId> f{fim->sep};
        tok.encode(path + "\n" + text + (text.ends_with('\n') ? "" : "\n"), f, plain);
        packed.push_back(std::move(f));
      }
      if (!packed.empty()) {
        file_head.push_back(fim->sep);
        tok.encode((p.path.empty() ? std::string("untitled") : p.path) + "\n", file_head, plain);
      }
    }
    const bool spm = fim && (p.fim_order == "spm" || (p.fim_order == "auto" && fim->suffix_first));
    if (fim) {
      out.format = spm ? "fim-spm" : "fim";
      std::vector<TokenId> suffix{fim->suf};
      tok.encode(p.suffix, suffix, plain);
      if (spm) {
        // [suf] suffix [pre] prefix [mid]: the suffix joins the fixed head.
        file_head.insert(file_head.end(), suffix.begin(), suffix.end());
        file_head.push_back(fim->pre);
        tail.push_back(fim->mid);
      } else {
        file_head.push_back(fim->pre);
        tail = std::move(suffix);
        tail.push_back(fim->mid);
      }
    } else {
      out.format = "prefix";
    }
    std::size_t fixed = head.size() + file_head.size() + tail.size();
    if (fixed + 1 > max_tokens) {
      throw std::invalid_argument("the prompt's suffix alone needs " + std::to_string(fixed) +
                                  " tokens but only " + std::to_string(max_tokens) +
                                  " fit before the generation's budget");
    }
    // Packed files go first when the budget is short (oldest first: the list's order), then
    // the text farthest from the cursor.
    std::size_t packed_tokens = 0;
    for (const auto& f : packed) packed_tokens += f.size();
    std::size_t first_packed = 0;
    while (first_packed < packed.size() && fixed + packed_tokens + body.size() > max_tokens) {
      packed_tokens -= packed[first_packed++].size();
    }
    if (first_packed == packed.size() && !packed.empty()) {
      // No other file fits: the cursor's file without a separator of its own.
      file_head.erase(file_head.begin(),
                      std::find(file_head.begin(), file_head.end(), spm ? fim->suf : fim->pre));
      fixed = head.size() + file_head.size() + tail.size();
    }
    if (fixed + packed_tokens + body.size() > max_tokens) {  // keep the text nearest the cursor
      std::size_t drop = fixed + packed_tokens + body.size() - max_tokens;
      const std::size_t blocks = (drop + kKvBlockTokens - 1) / kKvBlockTokens * kKvBlockTokens;
      if (blocks + kKvBlockTokens <= body.size()) drop = blocks;  // else too small to round
      body.erase(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(drop));
    }
    out.tokens = std::move(head);
    for (std::size_t i = first_packed; i < packed.size(); ++i) {
      out.tokens.insert(out.tokens.end(), packed[i].begin(), packed[i].end());
      ++out.packed_files;
    }
    out.tokens.insert(out.tokens.end(), file_head.begin(), file_head.end());
    out.tokens.insert(out.tokens.end(), body.begin(), body.end());
    out.tokens.insert(out.tokens.end(), tail.begin(), tail.end());
  } else {
    const ChatTemplate t = detect_chat_template(tok, chat_template);
    out.format = to_string(t);
    out.tokens = render_chat(tok, instruct_message(p), t);
    const std::vector<TokenId>& ids = out.tokens;
    if (ids.size() > max_tokens) {
      throw std::invalid_argument("the instruct prompt needs " + std::to_string(ids.size()) +
                                  " tokens but only " + std::to_string(max_tokens) +
                                  " fit before the generation's budget (raise the model's "
                                  "context_length or lower max_new_tokens)");
    }
  }
  kernels::DecodeOptions d;
  d.render_special = true;
  out.text = tok.decode(out.tokens, d);
  return out;
}

}  // namespace vsynth::stages::generation
