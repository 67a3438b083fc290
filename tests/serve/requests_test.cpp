// vsynth serve's request parsing (tools/vsynth/serve/requests.h): what task record each API's
// body becomes, caps, and the field named by each error.
#include <catch2/catch.hpp>

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

TEST_CASE(
    "a prompt and suffix become a cursor task and a file name adds path and source and cursor",
    "[serve][requests]") {
  const auto plain = parse_request(
      Endpoint::Completions,
      R"J({"prompt": "def f(", "suffix": "):\n", "max_tokens": 8, "stop": ["\n", ""], "seed": 3})J",
      {});
  CHECK(plain.task["prefix"] == "def f(");
  CHECK(plain.task["suffix"] == "):\n");
  CHECK_FALSE(plain.task.contains("path"));
  CHECK_FALSE(plain.has_file);
  CHECK(plain.task["decode"]["max_new_tokens"] == 8);
  CHECK(plain.task["decode"]["stop"] == json::array({"\n"}));  // empty stop strings dropped
  CHECK(plain.task["decode"]["seed"] == 3);

  const auto filed = parse_request(Endpoint::Completions,
                                   R"J({"prompt": "ab", "suffix": "cd", "file": "x.py"})J", {});
  CHECK(filed.has_file);
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
  CHECK(field_of(Endpoint::Completions, {{"prompt", "a"}}) == "<accepted>");
}
