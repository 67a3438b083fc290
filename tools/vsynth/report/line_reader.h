// Reads a text file line by line with a cap on the bytes kept per line, so a file of any size
// (a 1 GB results file, a line of 2 GB with no newline) is read in bounded memory.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace vsynth::cli::report {

class LineReader {
 public:
  // Throws std::runtime_error naming the path when it cannot be opened.
  LineReader(const std::string& path, std::size_t max_line_bytes);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line without its '\n'; false at the end. `oversized`: the line was longer than
  // max_line_bytes (then `line` holds its first max_line_bytes only); `unterminated`: the file
  // ended before its '\n' (an interrupted writer's torn last line).
  bool next(std::string& line, bool& oversized, bool& unterminated);
  uint64_t line_number() const { return line_no_; }  // 1-based, of the line last returned
  bool failed() const;                               // a read error (not the end of the file)

 private:
  std::FILE* f_ = nullptr;
  std::size_t max_;
  std::vector<char> buf_;  // 1 MiB read buffer
  std::size_t pos_ = 0, end_ = 0;
  uint64_t line_no_ = 0;
};

}  // namespace vsynth::cli::report
