// OpenAI's /v1/completions and /v1/chat/completions: prompt (+ suffix, vsynth's file and
// language) or messages; text_completion / chat.completion answers, their chunks, and a `vsynth`
// object (responses.h).
#include <fmt/format.h>

#include "tools/vsynth/serve/dialects/dialect.h"
#include "tools/vsynth/serve/dialects/fields.h"

namespace vsynth::serve {

namespace {

using nlohmann::json;
using namespace fields;

// Chat messages -> one instruction (generate.llm's instruct prompt has one user turn): a lone
// user message as it is, several as "role: content" lines in order.
std::string instruction_of(const json& body) {
  const json* v = find(body, "messages");
  if (!v) bad("messages", "is required (an array of {role, content})");
  if (!v->is_array() || v->empty()) bad("messages", "must be a non-empty array of {role, content}");
  std::vector<std::pair<std::string, std::string>> turns;
  for (std::size_t i = 0; i < v->size(); ++i) {
    const json& m = (*v)[i];
    const std::string where = fmt::format("messages[{}]", i);
    if (!m.is_object()) bad(where, fmt::format("must be an object (got {})", m.type_name()));
    const json* role = find(m, "role");
    const json* content = find(m, "content");
    if (!role || !role->is_string()) bad(where + ".role", "must be a string");
    if (!content || !content->is_string()) {
      bad(where + ".content", "must be a string (content parts are not served)");
    }
    turns.emplace_back(role->get<std::string>(), content->get<std::string>());
  }
  if (turns.size() == 1) return turns[0].second;
  std::string out;
  for (const auto& [role, content] : turns) out += role + ": " + content + "\n";
  return out;
}

json usage(const ResultInfo& r) {
  return {{"prompt_tokens", r.prompt_tokens},
          {"completion_tokens", r.completion_tokens},
          {"total_tokens", r.prompt_tokens + r.completion_tokens}};
}

// The OpenAI shapes, text or chat.
class OpenAi : public Dialect {
 public:
  explicit OpenAi(bool chat) : chat_(chat) {}
  Endpoint endpoint() const override { return chat_ ? Endpoint::Chat : Endpoint::Completions; }

  void parse(const json& body, const RequestLimits& limits, ParsedRequest& r) const override {
    const auto lang = string_of(body, "language");
    if (chat_) {
      r.task = {{"instruction", instruction_of(body)}};
      if (lang) r.task["language"] = *lang;
      r.has_cursor = false;
    } else {
      const auto prompt = prompt_of(body, "prompt");
      if (!prompt) bad("prompt", "is required (a string)");
      r.task = cursor_task(*prompt, string_of(body, "suffix").value_or(""), file_of(body), lang);
      r.has_cursor = true;
    }
    r.task["decode"] = decode_of(body, "max_tokens", limits, r.warmup);
  }

  json result(const Finished& f) const override {
    const ResultInfo& r = f.info;
    json choice{{"index", 0}, {"finish_reason", openai_finish(r.finish)}, {"logprobs", nullptr}};
    if (chat_) {
      choice["message"] = {{"role", "assistant"}, {"content", r.text}};
    } else {
      choice["text"] = r.text;
    }
    return {{"id", r.id},
            {"object", chat_ ? "chat.completion" : "text_completion"},
            {"created", r.created},
            {"model", r.model},
            {"choices", json::array({choice})},
            {"usage", usage(r)},
            {"vsynth", r.vsynth}};
  }

  json chunk(const ResultInfo& r, std::string_view delta) const override {
    return piece(r, delta, {});
  }
  json last(const Finished& f) const override {
    const ResultInfo& r = f.info;
    return piece(r, "", r.finish.empty() ? std::string_view("stop") : std::string_view(r.finish));
  }

 private:
  json piece(const ResultInfo& r, std::string_view delta, std::string_view finish) const {
    json choice{{"index", 0}, {"logprobs", nullptr}};
    choice["finish_reason"] = finish.empty() ? json(nullptr) : json(openai_finish(finish));
    if (chat_) {
      choice["delta"] =
          delta.empty() && !finish.empty() ? json::object() : json{{"content", delta}};
    } else {
      choice["text"] = delta;
    }
    json j{{"id", r.id},
           {"object", chat_ ? "chat.completion.chunk" : "text_completion"},
           {"created", r.created},
           {"model", r.model},
           {"choices", json::array({choice})}};
    if (!finish.empty()) {
      j["usage"] = usage(r);
      j["vsynth"] = r.vsynth;
    }
    return j;
  }

  bool chat_;
};

}  // namespace

const Dialect& openai_completions() {
  static const OpenAi d(false);
  return d;
}

const Dialect& openai_chat() {
  static const OpenAi d(true);
  return d;
}

}  // namespace vsynth::serve
