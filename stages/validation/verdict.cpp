#include "stages/validation/verdict.h"

#include <fmt/format.h>

#include <cmath>

namespace vsynth::stages::validation {

namespace {
double round2(double v) {
  return std::round(v * 100.0) / 100.0;
}
}  // namespace

const char* to_string(Check c) {
  switch (c) {
    case Check::Syntax:
      return "syntax";
    case Check::Compile:
      return "compile";
    case Check::Tests:
      return "tests";
    case Check::Spec:
      return "spec";
  }
  return "?";
}

std::optional<Check> parse_check(std::string_view name) {
  if (name == "syntax") return Check::Syntax;
  if (name == "compile") return Check::Compile;
  if (name == "tests") return Check::Tests;
  if (name == "spec") return Check::Spec;
  return std::nullopt;
}

const char* to_string(Status s) {
  switch (s) {
    case Status::Pass:
      return "pass";
    case Status::Fail:
      return "fail";
    case Status::Error:
      return "error";
    case Status::Skipped:
      return "skipped";
  }
  return "?";
}

nlohmann::json CheckVerdict::to_json() const {
  nlohmann::json j;
  j["check"] = to_string(check);
  j["status"] = to_string(status);
  if (!message.empty()) j["message"] = message;
  if (!kind.empty()) j["kind"] = kind;
  if (!decided.empty()) j["decided"] = decided;
  if (tests >= 0) j["tests"] = tests;
  if (oracle) j["oracle"] = true;
  j["ms"] = round2(ms);
  if (run) {
    j["exit"] = run->exit_code;
    if (run->signal) j["signal"] = run->signal;
    if (run->timed_out) j["timed_out"] = true;
    if (run->killed != KillReason::None) j["killed"] = to_string(run->killed);
    j["cpu_ms"] = round2(run->cpu_ms);
    if (run->out.truncated) j["stdout_truncated"] = true;
    if (run->err.truncated) j["stderr_truncated"] = true;
    // What the program printed, for a check that did not pass (the report's task table shows
    // it): the end of each stream, bounded so that records stay small.
    if (status == Status::Fail || status == Status::Error) {
      if (!run->out.data.empty()) j["stdout"] = tail_output(run->out.data);
      if (!run->err.data.empty()) j["stderr"] = tail_output(run->err.data);
    }
  }
  return j;
}

const CheckVerdict* CandidateVerdict::first_failure() const {
  for (const auto& c : checks) {
    if (c.status == Status::Fail || c.status == Status::Error) return &c;
  }
  return nullptr;
}

nlohmann::json CandidateVerdict::to_json() const {
  nlohmann::json j;
  j["index"] = index;
  j["passed"] = passed;
  j["checks"] = nlohmann::json::array();
  for (const auto& c : checks) j["checks"].push_back(c.to_json());
  return j;
}

nlohmann::json VerdictsFacet::to_json() const {
  nlohmann::json j;
  j["language"] = language;
  j["tests_visibility"] = tests_visibility;
  j["attempt"] = attempt;
  j["outcome"] = outcome;
  j["passed"] = passed_candidate.has_value();
  if (passed_candidate) j["passed_candidate"] = *passed_candidate;
  j["candidates"] = nlohmann::json::array();
  for (const auto& c : candidates) j["candidates"].push_back(c.to_json());
  return j;
}

nlohmann::json BestCandidateFacet::to_json() const {
  return {{"attempt", attempt}, {"index", index},
          {"passed", passed},   {"checks_passed", checks_passed},
          {"outcome", outcome}, {"code", code}};
}

std::string trim_message(std::string_view text, std::size_t max_lines, std::size_t max_bytes) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  std::size_t end = 0, lines = 0;
  while (end < text.size() && lines < max_lines) {
    const std::size_t nl = text.find('\n', end);
    end = nl == std::string_view::npos ? text.size() : nl + 1;
    ++lines;
  }
  bool cut = end < text.size();
  if (end > max_bytes) {
    end = max_bytes;
    // Back up to the start of a UTF-8 sequence.
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    cut = true;
  }
  std::string out(text.substr(0, end));
  while (!out.empty() && out.back() == '\n') out.pop_back();
  if (cut) out += fmt::format("\n... ({} more bytes)", text.size() - end);
  return out;
}

std::string tail_output(std::string_view text, std::size_t max_lines, std::size_t max_bytes) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  // Phase 1: the start of the last max_lines lines (begin ends on the newline before them).
  std::size_t begin = text.size();
  for (std::size_t lines = 0; lines < max_lines && begin > 0; ++lines) {
    const std::size_t nl = text.rfind('\n', begin - 1);
    begin = nl == std::string_view::npos ? 0 : nl;
  }
  if (begin > 0) ++begin;
  // Phase 2: at most max_bytes, starting on a UTF-8 boundary.
  if (text.size() - begin > max_bytes) {
    begin = text.size() - max_bytes;
    while (begin < text.size() && (static_cast<unsigned char>(text[begin]) & 0xC0) == 0x80) {
      ++begin;
    }
  }
  std::string_view kept = text.substr(begin);
  while (!kept.empty() && kept.front() == '\n') kept.remove_prefix(1);
  if (begin == 0) return std::string(kept);
  return fmt::format("({} earlier bytes) ...\n{}", begin, kept);
}

}  // namespace vsynth::stages::validation
