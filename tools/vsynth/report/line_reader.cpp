#include "tools/vsynth/report/line_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace vsynth::cli::report {

LineReader::LineReader(const std::string& path, std::size_t max_line_bytes)
    : max_(max_line_bytes), buf_(std::size_t{1} << 20) {
  f_ = std::fopen(path.c_str(), "rb");
  if (!f_) throw std::runtime_error("cannot open `" + path + "`: " + std::strerror(errno));
}

LineReader::~LineReader() {
  if (f_) std::fclose(f_);
}

bool LineReader::next(std::string& line, bool& oversized, bool& unterminated) {
  line.clear();
  oversized = false;
  unterminated = false;
  bool any = false;
  for (;;) {
    // Phase 1: refill the buffer when it is used up.
    if (pos_ == end_) {
      end_ = std::fread(buf_.data(), 1, buf_.size(), f_);
      pos_ = 0;
      if (end_ == 0) {
        if (any) {
          unterminated = true;
          ++line_no_;
        }
        return any;
      }
    }
    // Phase 2: take bytes up to the newline (or the buffer's end), keeping at most max_.
    any = true;
    const char* start = buf_.data() + pos_;
    const auto* nl = static_cast<const char*>(std::memchr(start, '\n', end_ - pos_));
    const std::size_t n = nl ? static_cast<std::size_t>(nl - start) : end_ - pos_;
    const std::size_t keep = std::min(n, max_ - std::min(max_, line.size()));
    line.append(start, keep);
    if (keep < n) oversized = true;
    pos_ += n;
    if (nl) {
      ++pos_;
      ++line_no_;
      return true;
    }
  }
}

bool LineReader::failed() const {
  return std::ferror(f_) != 0;
}

}  // namespace vsynth::cli::report
