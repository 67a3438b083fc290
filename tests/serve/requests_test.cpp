// vsynth serve's request parsing (tools/vsynth/serve/requests.h): what task record each API's
// body becomes, caps, and the field named by each error.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <cmath>
#include <optional>

#include "stages/facets/decode_fields.h"
#include "tools/vsynth/serve/requests.h"

using namespace vsynth::serve;
using nlohmann::json;

namespace {

std::string field_of(Endpoint e, const json& body, int max_tokens = 2048) {
  try {
    parse_request(e, body.dump(), {max_tokens});
  } catch (const RequestError& x) {
    return x.field();
  }
  return "<accepted>";
}

}  // namespace

TEST_CASE("a prompt and suffix become a cursor task: source and cursor always, path when named",
          "[serve][requests]") {
  const auto plain = parse_request(
      Endpoint::Completions,
      R"J({"prompt": "def f(", "suffix": "):\n", "max_tokens": 8, "stop": ["\n", ""], "seed": 3})J",
      {});
  CHECK(plain.task["prefix"] == "def f(");
  CHECK(plain.task["suffix"] == "):\n");
  CHECK_FALSE(plain.task.contains("path"));
  CHECK(plain.task["source"] == "def f():\n");
  CHECK(plain.task["cursor"]["offset"] == 6);
  CHECK(plain.has_cursor);  // its pipeline's file-reading stages run
  CHECK(plain.task["decode"]["max_new_tokens"] == 8);
  CHECK(plain.task["decode"]["stop"] == json::array({"\n"}));  // empty stop strings dropped
  CHECK(plain.task["decode"]["seed"] == 3);

  const auto filed = parse_request(Endpoint::Completions,
                                   R"J({"prompt": "ab", "suffix": "cd", "file": "x.py"})J", {});
  CHECK(filed.has_cursor);
  CHECK(filed.task["path"] == "x.py");
  CHECK(filed.task["source"] == "abcd");
  CHECK(filed.task["cursor"]["offset"] == 2);
  CHECK(filed.task["decode"]["seed"] == 0);  // seeded always

  const auto tabby =
      parse_request(Endpoint::Completions, R"J({"prompt": "a", "filepath": "m.go"})J", {});
  CHECK(tabby.task["path"] == "m.go");
}

TEST_CASE(
    "llama.cpp's infill maps prefix + prompt and suffix and input_extra (files) and n_predict",
    "[serve][requests]") {
  const auto r = parse_request(Endpoint::Infill, R"J({"input_prefix": "def f(", "prompt": "a",
      "input_suffix": ")", "input_extra": [{"filename": "u.py", "text": "X = 1\n"}],
      "n_predict": -1, "cache_prompt": true})J",
                               {64});
  CHECK(r.task["prefix"] == "def f(a");
  CHECK(r.task["suffix"] == ")");
  CHECK(r.task["files"] == json::array({{{"path", "u.py"}, {"source", "X = 1\n"}}}));
  CHECK(r.task["decode"]["max_new_tokens"] == 64);  // -1: as many as the cap allows
  const auto warm =
      parse_request(Endpoint::Infill, R"J({"input_prefix": "a", "n_predict": 0})J", {});
  CHECK(warm.warmup);
  CHECK(warm.task["decode"]["warmup"] == true);
}

TEST_CASE("max_tokens over the tenant's cap is cut to it", "[serve][requests]") {
  const auto r =
      parse_request(Endpoint::Completions, R"J({"prompt": "a", "max_tokens": 5000})J", {100});
  CHECK(r.task["decode"]["max_new_tokens"] == 100);
  const auto t = parse_request(Endpoint::Tasks, R"J({"id": "x", "prefix": "a",
      "decode": {"max_new_tokens": 900}})J",
                               {100});
  CHECK(t.task["decode"]["max_new_tokens"] == 100);
  CHECK(t.client_id == "x");
  CHECK_FALSE(t.task.contains("id"));
}

TEST_CASE("chat messages become one instruction", "[serve][requests]") {
  const auto one =
      parse_request(Endpoint::Chat, R"J({"messages": [{"role": "user", "content": "hi"}]})J", {});
  CHECK(one.task["instruction"] == "hi");
  const auto two =
      parse_request(Endpoint::Chat, R"J({"messages": [{"role": "system", "content": "be brief"},
      {"role": "user", "content": "hi"}]})J",
                    {});
  CHECK(two.task["instruction"] == "system: be brief\nuser: hi\n");
}

TEST_CASE("the fingerprint ignores stream and resume_from but not the prompt",
          "[serve][requests]") {
  const auto a = parse_request(Endpoint::Completions, R"J({"prompt": "a", "stream": true})J", {});
  const auto b = parse_request(
      Endpoint::Completions,
      R"J({"prompt": "a", "stream": true, "resume_from": {"offset": 0, "checksum": "x"}})J", {});
  const auto c = parse_request(Endpoint::Completions, R"J({"prompt": "b", "stream": true})J", {});
  CHECK(a.fingerprint == b.fingerprint);
  CHECK(a.fingerprint != c.fingerprint);
  REQUIRE(b.resume);
  CHECK(b.resume->checksum == "x");
  CHECK(text_checksum("") == "cbf29ce484222325");
}

TEST_CASE("each bad field is named", "[serve][requests]") {
  CHECK(field_of(Endpoint::Completions, {{"prompt", "a"}, {"top_p", 0}}) == "top_p");
  CHECK(field_of(Endpoint::Completions, {{"prompt", "a"}, {"stop", 3}}) == "stop");
  CHECK(field_of(Endpoint::Completions, {{"prompt", "a"}, {"file", 3}}) == "file");
  CHECK(field_of(Endpoint::Completions, {{"prompt", "a"}, {"file", ""}}) == "file");
  CHECK(field_of(Endpoint::Completions,
                 {{"prompt", "a"}, {"stream", true}, {"resume_from", {{"checksum", "x"}}}}) ==
        "resume_from.offset");
  CHECK(field_of(Endpoint::Chat, {{"messages", json::array()}}) == "messages");
  CHECK(field_of(Endpoint::Chat, {{"messages", {{{"role", 1}, {"content", "x"}}}}}) ==
        "messages[0].role");
  CHECK(field_of(Endpoint::Infill, {{"input_extra", {1}}}) == "input_extra[0]");
  CHECK(field_of(Endpoint::Completion, json::object()) == "prompt");
  CHECK(field_of(Endpoint::Tasks, {{"decode", 1}}) == "decode");
  CHECK(field_of(Endpoint::Tasks, {{"prefix", "a"}, {"decode", {{"max_new_tokens", -5}}}}) ==
        "decode.max_new_tokens");
  CHECK(field_of(Endpoint::Tasks, {{"prefix", "a"}, {"decode", {{"top_p", 2}}}}) == "decode.top_p");
  CHECK(field_of(Endpoint::Tasks, {{"prefix", 1}}) == "prefix");
  CHECK(field_of(Endpoint::Tasks, {{"language", "python"}}) == "prefix");  // nothing to generate
  CHECK(field_of(Endpoint::Infill, {{"n_indent", -1}}) == "n_indent");
  CHECK(field_of(Endpoint::Infill, {{"t_max_predict_ms", "x"}}) == "t_max_predict_ms");
  CHECK(field_of(Endpoint::Infill, {{"id_slot", "0"}}) == "id_slot");
  CHECK(field_of(Endpoint::Infill, {{"response_fields", {1}}}) == "response_fields[0]");
  CHECK(field_of(Endpoint::Completions, {{"segments", {{"suffix", "x"}}}}) == "segments.prefix");
  CHECK(field_of(Endpoint::Completions, {{"segments", {{"prefix", "a"}, {"filepath", 3}}}}) ==
        "segments.filepath");
  CHECK(field_of(Endpoint::Completions,
                 {{"segments", {{"prefix", "a"}, {"declarations", {{{"filepath", "x"}}}}}}}) ==
        "segments.declarations[0].body");
  CHECK(field_of(Endpoint::Completions, {{"prompt", "a"}}) == "<accepted>");
}

TEST_CASE("llama.cpp's editor fields reach /decode and id_slot and response_fields are kept",
          "[serve][requests]") {
  const auto r = parse_request(Endpoint::Infill, R"J({"input_prefix": "a", "n_indent": 4,
      "t_max_predict_ms": 250, "id_slot": 0, "response_fields": ["content", "timings/prompt_n"]})J",
                               {});
  CHECK(r.task["decode"]["n_indent"] == 4);
  CHECK(r.task["decode"]["max_predict_ms"] == 250);
  REQUIRE(r.id_slot);
  CHECK(*r.id_slot == 0);
  CHECK(r.response_fields == std::vector<std::string>{"content", "timings/prompt_n"});
  const auto any = parse_request(Endpoint::Infill, R"J({"input_prefix": "a", "id_slot": -1})J", {});
  CHECK_FALSE(any.id_slot);  // -1: any slot, supersedes nothing
}

TEST_CASE("a Tabby body on /v1/completions becomes a cursor task with its snippets as files",
          "[serve][requests]") {
  const auto r = parse_request(Endpoint::Completions, R"J({"language": "python",
      "segments": {"prefix": "def f(", "suffix": ")\n", "filepath": "a/b.py", "git_url": "x",
        "declarations": [{"filepath": "a/c.py", "body": "def g(): pass"}],
        "relevant_snippets_from_changed_files": [{"filepath": "a/d.py", "body": "X = 1", "score": 1}],
        "relevant_snippets_from_recently_opened_files": [{"filepath": "a/e.py", "body": "Y = 2"}],
        "clipboard": "zzz"}, "temperature": 0.1, "seed": 5})J",
                               {});
  CHECK(r.endpoint == Endpoint::Tabby);
  CHECK(r.task["prefix"] == "def f(");
  CHECK(r.task["suffix"] == ")\n");
  CHECK(r.task["source"] == "def f()\n");
  CHECK(r.task["cursor"]["offset"] == 6);
  CHECK(r.task["path"] == "a/b.py");
  CHECK(r.task["language"] == "python");
  CHECK(r.task["files"] == json::array({{{"path", "a/c.py"}, {"source", "def g(): pass"}},
                                        {{"path", "a/d.py"}, {"source", "X = 1"}},
                                        {{"path", "a/e.py"}, {"source", "Y = 2"}}}));
  CHECK(r.task["decode"]["seed"] == 5);
}

TEST_CASE("bodies nested too deep, numbers out of range and bad UTF-8 are 400s naming where",
          "[serve][requests]") {
  const auto error_of = [](Endpoint e,
                           const std::string& body) -> std::pair<std::string, std::string> {
    try {
      parse_request(e, body, {});
    } catch (const RequestError& x) {
      CHECK(x.status() == 400);
      return {x.field(), x.what()};
    }
    return {"<accepted>", ""};
  };
  // 100,000 levels: refused at level 65, nothing recursed over.
  const std::string deep =
      "{\"prompt\": \"a\", \"x\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  const auto [f1, m1] = error_of(Endpoint::Completions, deep);
  CHECK(m1.find("deeper than 64") != std::string::npos);
  CHECK(f1.rfind("x", 0) == 0);
  const std::string ok64 =
      "{\"prompt\": \"a\", \"x\": " + std::string(62, '[') + std::string(62, ']') + "}";
  CHECK(error_of(Endpoint::Completions, ok64).first == "<accepted>");
  const auto [f2, m2] = error_of(Endpoint::Completions, R"({"prompt": "a", "temperature": 1e400})");
  CHECK(f2 == "temperature");
  CHECK(m2.find("range of a double") != std::string::npos);
  const auto [f3, m3] = error_of(Endpoint::Completions, "{\"prompt\": \"ab\xff\"}");
  CHECK(f3 == "prompt");
  CHECK(m3.find("byte offset 14") != std::string::npos);
  const auto [f4, m4] =
      error_of(Endpoint::Chat, "{\"messages\": [{\"role\": \"user\", \"content\": \"\xc3\"}]}");
  CHECK(f4 == "messages[0].content");
}

TEST_CASE(
    "a value just past a /decode table limit is a 400 naming the request's field and the "
    "table's range",
    "[serve][requests]") {
  using vsynth::stages::facets::decode_field;
  using vsynth::stages::facets::decode_fields;
  using vsynth::stages::facets::DecodeType;
  const auto refusal = [](Endpoint e, const json& body) -> std::pair<std::string, std::string> {
    try {
      parse_request(e, body.dump(), {1 << 20});
    } catch (const RequestError& x) {
      CHECK(x.status() == 400);
      return {x.field(), x.what()};
    }
    return {"<accepted>", ""};
  };
  // The range as the table declares it: whole numbers for integers.
  const auto range = [](std::string_view name, std::optional<int64_t> lo = std::nullopt) {
    const auto& f = decode_field(name);
    if (f.type == DecodeType::Number) return fmt::format("[{}, {}]", f.min, f.max);
    return fmt::format("[{}, {}]", lo.value_or(static_cast<int64_t>(f.min)),
                       static_cast<int64_t>(f.max));
  };
  struct Spelling {
    Endpoint endpoint;
    json base;
    std::string key;                           // the request's field
    std::string name;                          // its /decode field
    std::string field;                         // what the error names
    std::optional<int64_t> lo = std::nullopt;  // the dialect's own lower bound
  };
  std::vector<Spelling> spellings{
      {Endpoint::Completions, {{"prompt", "a"}}, "max_tokens", "max_new_tokens", "max_tokens", 0},
      {Endpoint::Infill, {{"input_prefix", "a"}}, "n_predict", "max_new_tokens", "n_predict", -1},
      {Endpoint::Infill, {{"input_prefix", "a"}}, "n_indent", "n_indent", "n_indent"},
      {Endpoint::Completion,
       {{"prompt", "a"}},
       "t_max_predict_ms",
       "max_predict_ms",
       "t_max_predict_ms"},
  };
  for (const char* k : {"temperature", "top_p"}) {
    spellings.push_back({Endpoint::Completions, {{"prompt", "a"}}, k, k, k});
    spellings.push_back({Endpoint::Infill, {{"input_prefix", "a"}}, k, k, k});
  }
  for (const auto& f : decode_fields()) {  // /v1/tasks: every numeric field of the table
    if (f.type != DecodeType::Integer && f.type != DecodeType::Number) continue;
    const std::string k(f.name);
    if (k == "seed") continue;  // 2^64 - 1: nothing past it is an integer JSON keeps
    spellings.push_back({Endpoint::Tasks, {{"prefix", "a"}}, "decode." + k, k, "decode." + k});
  }
  for (const Spelling& s : spellings) {
    INFO(to_string(s.endpoint) << " " << s.key);
    const auto& f = decode_field(s.name);
    const bool integer = f.type == DecodeType::Integer;
    const json past =
        integer ? json(static_cast<int64_t>(f.max) + 1) : json(std::nextafter(f.max, f.max + 1.0));
    const json at = integer ? json(static_cast<int64_t>(f.max)) : json(f.max);
    const auto with = [&](const json& v) {  // "decode.k": inside the task's /decode
      json body = s.base;
      const std::size_t dot = s.key.find('.');
      if (dot == std::string::npos) {
        body[s.key] = v;
      } else {
        body[s.key.substr(0, dot)][s.key.substr(dot + 1)] = v;
      }
      return body;
    };
    const auto [field, message] = refusal(s.endpoint, with(past));
    CHECK(field == s.field);
    CHECK(message.find("`" + s.field + "`") != std::string::npos);
    CHECK(message.find(range(s.name, s.lo)) != std::string::npos);
    CHECK(message.find("(got " + past.dump() + ")") != std::string::npos);
    if (s.name != "max_new_tokens" || s.endpoint == Endpoint::Tasks) {
      CHECK(refusal(s.endpoint, with(at)).first == "<accepted>");
    }
  }
  // llama.cpp's t_max_predict_ms reaches the task as max_predict_ms, at the table's maximum.
  const auto r = parse_request(
      Endpoint::Infill, json{{"input_prefix", "a"}, {"t_max_predict_ms", 3600000}}.dump(), {});
  CHECK(r.task["decode"]["max_predict_ms"] == decode_field("max_predict_ms").max);
  // seed's maximum is 2^64 - 1, kept unsigned.
  const auto seeded =
      parse_request(Endpoint::Completions, R"({"prompt": "a", "seed": 18446744073709551615})", {});
  CHECK(seeded.task["decode"]["seed"].get<uint64_t>() == 18446744073709551615ULL);
}
