#include "stages/io/task_line.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace vsynth::stages::io {

// --- IdScanner ---

namespace {
constexpr std::size_t kMaxKey = 8;  // "task_id" fits; longer keys are not the ones we want
bool is_json_space(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}
}  // namespace

void IdScanner::start_string() {
  buf_.clear();
  buf_overflow_ = false;
  if (depth_ != 1) {
    capture_ = Capture::Skip;
  } else if (expect_key_) {
    capture_ = Capture::Key;
  } else if (pending_ == 1) {
    capture_ = Capture::IdValue;
  } else if (pending_ == 2) {
    capture_ = Capture::TaskIdValue;
  } else {
    capture_ = Capture::Skip;
  }
}

void IdScanner::end_string() {
  switch (capture_) {
    case Capture::Key:
      pending_ = buf_overflow_ ? 0 : buf_ == "id" ? 1 : buf_ == "task_id" ? 2 : 0;
      expect_key_ = false;
      break;
    case Capture::IdValue:
      if (!buf_overflow_) raw_id_ = buf_;
      pending_ = 0;
      break;
    case Capture::TaskIdValue:
      if (!buf_overflow_) raw_task_id_ = buf_;
      pending_ = 0;
      break;
    default:
      if (depth_ == 1) pending_ = 0;
      break;
  }
  capture_ = Capture::None;
}

void IdScanner::feed(std::string_view text) {
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (in_string_) {
      if (!escaped_ && c == '"') {
        in_string_ = false;
        end_string();
        continue;
      }
      escaped_ = !escaped_ && c == '\\';
      if (capture_ != Capture::Skip) {
        const std::size_t cap = capture_ == Capture::Key ? kMaxKey : kMaxId;
        if (buf_.size() < cap) {
          buf_.push_back(ch);
        } else {
          buf_overflow_ = true;
        }
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string_ = true;
        start_string();
        break;
      case '{':
      case '[':
        if (depth_ == 1) pending_ = 0;  // the pending key's value is not a string
        ++depth_;
        if (c == '{' && depth_ == 1) expect_key_ = true;
        break;
      case '}':
      case ']':
        --depth_;
        break;
      case ',':
        if (depth_ == 1) {
          expect_key_ = true;
          pending_ = 0;
        }
        break;
      case ':':
        break;
      default:
        if (depth_ == 1 && !is_json_space(c)) pending_ = 0;  // a number, true, false, null
        break;
    }
  }
}

std::optional<std::string> IdScanner::id() const {
  for (const auto* raw : {&raw_id_, &raw_task_id_}) {
    if (!*raw) continue;
    // The raw bytes keep their escapes; the JSON parser decodes them (and rejects bad ones).
    auto j = nlohmann::json::parse("\"" + **raw + "\"", nullptr, /*allow_exceptions=*/false);
    if (j.is_string() && !j.get_ref<const std::string&>().empty()) return j.get<std::string>();
  }
  return std::nullopt;
}

// --- LineReader ---

bool LineReader::refill() {
  if (eof_) return false;
  ssize_t n = 0;
  do {
    n = ::read(fd_, buf_.data(), buf_.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) throw std::runtime_error(std::strerror(errno));
  pos_ = 0;
  end_ = static_cast<std::size_t>(n);
  consumed_ += end_;
  eof_ = n == 0;
  return n > 0;
}

bool LineReader::next(std::size_t max_bytes, Line& line) {
  line.text.clear();
  line.length = 0;
  line.over = false;
  line.scanner = IdScanner{};
  if (pos_ == end_ && !refill()) return false;
  line.offset = consumed_ - (end_ - pos_);
  // Phase: copy (or, past max_bytes, scan) buffer-sized pieces up to the next '\n'.
  while (pos_ < end_ || refill()) {
    const char* start = buf_.data() + pos_;
    const auto* nl = static_cast<const char*>(std::memchr(start, '\n', end_ - pos_));
    const std::size_t n = nl ? static_cast<std::size_t>(nl - start) : end_ - pos_;
    const std::string_view piece(start, n);
    line.length += n;
    if (!line.over && line.length > max_bytes) {
      line.over = true;
      line.scanner.feed(line.text);
      std::string().swap(line.text);  // give the memory back: this line is never parsed
    }
    if (line.over) {
      line.scanner.feed(piece);
    } else {
      line.text.append(piece);
    }
    pos_ += n;
    if (nl) {
      ++pos_;  // the '\n' itself
      break;
    }
  }
  return true;
}

// --- UTF-8 ---

namespace {
// The lead byte of a multi-byte character: (byte & mask) == bits; it starts a sequence of
// `len` bytes carrying (byte & payload) as its top bits, and encodes at least `min` (smaller
// values in that many bytes are overlong).
struct Lead {
  unsigned char mask, bits;
  std::size_t len;
  unsigned char payload;
  uint32_t min;
};
constexpr Lead kLeads[] = {
    {.mask = 0xE0, .bits = 0xC0, .len = 2, .payload = 0x1F, .min = 0x80},
    {.mask = 0xF0, .bits = 0xE0, .len = 3, .payload = 0x0F, .min = 0x800},
    {.mask = 0xF8, .bits = 0xF0, .len = 4, .payload = 0x07, .min = 0x10000},
};
}  // namespace

std::optional<EncodingError> find_encoding_error(std::string_view s) {
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0) {
      return EncodingError{i,
                           "a raw NUL byte (JSON text cannot hold one; inside a string "
                           "write it as \\u0000)"};
    }
    if (c < 0x80) {
      ++i;
      continue;
    }
    const Lead* lead = nullptr;
    for (const Lead& l : kLeads) {
      if ((c & l.mask) == l.bits) lead = &l;
    }
    if (!lead) {
      return EncodingError{i, fmt::format("invalid UTF-8: byte 0x{:02X} cannot start a character{}",
                                          c, (c & 0xC0) == 0x80 ? " (a continuation byte)" : "")};
    }
    const std::size_t len = lead->len;
    const uint32_t min = lead->min;
    uint32_t cp = c & lead->payload;
    for (std::size_t k = 1; k < len; ++k) {
      if (i + k >= n) {
        return EncodingError{i, fmt::format("invalid UTF-8: a {}-byte character cut short by the "
                                            "end of the line",
                                            len)};
      }
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) {
        return EncodingError{i + k, fmt::format("invalid UTF-8: byte 0x{:02X} where the {}-byte "
                                                "character begun {} byte(s) before needs a "
                                                "continuation byte (0x80-0xBF)",
                                                b, len, k)};
      }
      cp = (cp << 6) | (b & 0x3Fu);
    }
    if (cp < min) {
      return EncodingError{
          i, fmt::format("invalid UTF-8: overlong {}-byte encoding of U+{:04X}", len, cp)};
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) {
      return EncodingError{i, fmt::format("invalid UTF-8: U+{:04X} is a UTF-16 surrogate", cp)};
    }
    if (cp > 0x10FFFF) {
      return EncodingError{i, fmt::format("invalid UTF-8: U+{:X} is past U+10FFFF", cp)};
    }
    i += len;
  }
  return std::nullopt;
}

}  // namespace vsynth::stages::io
