// Diagnostics: every problem found in a pipeline file, collected and reported at once.
//
// Each names where (file:line:col), which stage or resource and its kind, what was expected
// and the valid choices, e.g.
//   pipelines/x.yaml:14:7: error: unknown parameter `budget_tokns` in stage `prune`
//   (context.prune); did you mean `budget_tokens`? valid: budget_tokens, model
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vsynth::graph {

struct Mark {
  int line = 0;  // 1-based; 0 when unknown
  int col = 0;   // 1-based
};

struct Diagnostic {
  std::string code;  // stable, machine-readable: "param.unknown", "yaml.depth", ...
  std::string file;
  Mark mark;
  std::string message;

  std::string format() const;  // "file:line:col: error: message"
};

class Diagnostics {
 public:
  explicit Diagnostics(std::string file = {}) : file_(std::move(file)) {}
  void error(std::string code, Mark mark, std::string message);
  bool empty() const { return list_.empty(); }
  std::size_t size() const { return list_.size(); }
  const std::vector<Diagnostic>& list() const { return list_; }
  const std::string& file() const { return file_; }
  std::string format() const;  // one line per diagnostic, in file order
  void sort();                 // by line, then column

 private:
  std::string file_;
  std::vector<Diagnostic> list_;
};

// Thrown when a pipeline cannot be loaded or validated; carries every diagnostic.
class SpecError : public std::runtime_error {
 public:
  explicit SpecError(Diagnostics d) : std::runtime_error(d.format()), diags_(std::move(d)) {}
  const Diagnostics& diagnostics() const { return diags_; }

 private:
  Diagnostics diags_;
};

// The candidate closest to `word` by edit distance when it is a plausible typo, else "".
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

// " did you mean `x`?" or "", ready to append to a message.
std::string suggestion(std::string_view word, const std::vector<std::string>& candidates);

// "a, b, c" of the candidates, for "valid: ..." hints.
std::string join_names(const std::vector<std::string>& names);

}  // namespace vsynth::graph
