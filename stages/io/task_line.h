// Reading one line of a JSON Lines task file: bounded in memory, with byte-exact diagnostics.
//
// LineReader hands out lines no longer than a caller's limit; a longer line is never held
// whole: its bytes stream through an IdScanner, which keeps only the task's `id` (or
// `task_id`), so the runner can record that task as refused. find_encoding_error says where a
// line stops being UTF-8 text (a raw NUL byte, an invalid or overlong sequence, a surrogate).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vsynth::stages::io {

// The top-level `id` and `task_id` string values of a JSON object, found in one pass over its
// text fed in pieces of any size. Memory: the two values (each at most kMaxId bytes) and a key
// of at most a few bytes; nothing else of the text is kept. The text is not validated: this is
// only for naming a task too large to parse.
class IdScanner {
 public:
  static constexpr std::size_t kMaxId = 4096;  // bytes of an id worth recording

  void feed(std::string_view text);
  // `id` when it is a non-empty string, else `task_id`, decoded; nullopt when neither is.
  std::optional<std::string> id() const;

 private:
  enum class Capture { None, Key, IdValue, TaskIdValue, Skip };
  void start_string();
  void end_string();

  int depth_ = 0;            // nesting of {} and [] outside strings
  bool in_string_ = false;   // inside "..."
  bool escaped_ = false;     // the previous string byte was an unescaped backslash
  bool expect_key_ = false;  // depth 1: the next string is a key
  int pending_ = 0;          // depth 1 after a key: 1 `id`, 2 `task_id`, 0 another key
  Capture capture_ = Capture::None;
  std::string buf_;            // raw bytes of the string being captured (escapes kept)
  bool buf_overflow_ = false;  // the captured string ran past kMaxId
  std::optional<std::string> raw_id_, raw_task_id_;
};

// One line of the file, without its '\n'.
struct Line {
  std::string text;     // the bytes (empty when `over`)
  uint64_t offset = 0;  // byte offset of its first byte in the file
  uint64_t length = 0;  // its length in bytes, '\r' and all
  bool over = false;    // longer than the limit: `text` is empty; `scanner` saw every byte
  IdScanner scanner;    // fed only when `over`
};

// Lines from a file descriptor through one fixed buffer (the descriptor stays the caller's).
class LineReader {
 public:
  static constexpr std::size_t kBufferBytes = 64 * 1024;

  explicit LineReader(int fd) : fd_(fd), buf_(kBufferBytes) {}
  // The next line, or false at the end. A line of more than max_bytes bytes comes back with
  // `over` set, streamed through `line.scanner` instead of stored. Throws std::runtime_error
  // on a read error (with errno's text).
  bool next(std::size_t max_bytes, Line& line);

 private:
  bool refill();
  int fd_;
  std::vector<char> buf_;
  std::size_t pos_ = 0, end_ = 0;
  uint64_t consumed_ = 0;  // file offset of buf_[end_]
  bool eof_ = false;
};

// Where `text` stops being UTF-8 without NUL bytes: the byte's 0-based index and what is wrong.
struct EncodingError {
  std::size_t at = 0;
  std::string what;
};
std::optional<EncodingError> find_encoding_error(std::string_view text);

}  // namespace vsynth::stages::io
