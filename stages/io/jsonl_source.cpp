#include "stages/io/jsonl_source.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <stdexcept>

#include "stages/io/task_line.h"

namespace vsynth::stages::io {

namespace {

nlohmann::json::json_pointer pointer_param(const std::string& text, const char* name) {
  try {
    return nlohmann::json::json_pointer(text);
  } catch (const nlohmann::json::exception&) {
    throw std::runtime_error(fmt::format(
        "io.jsonl_source: `{}` must be a JSON pointer such as /files, got `{}`", name, text));
  }
}

// The task's id: `id` when it is a non-empty string, else `task_id`; empty when neither is.
std::string task_id_of(const nlohmann::json& j) {
  for (const char* key : {"id", "task_id"}) {
    auto it = j.find(key);
    if (it != j.end() && it->is_string() && !it->get_ref<const std::string&>().empty()) {
      return it->get<std::string>();
    }
  }
  return {};
}

// nlohmann's parse_error text without its "[json.exception...] parse error at line 1, column
// N: " prefix: the caller says where.
std::string parse_error_text(const nlohmann::json::parse_error& e) {
  std::string s = e.what();
  if (const auto col = s.find("column "); col != std::string::npos) {
    if (const auto colon = s.find(": ", col); colon != std::string::npos) {
      return s.substr(colon + 2);
    }
  }
  if (const auto close = s.find("] "); close != std::string::npos) return s.substr(close + 2);
  return s;
}

// "16777216 bytes (16 MiB)": exact, and readable where the size is a round number.
std::string bytes_text(uint64_t n) {
  constexpr uint64_t kMiB = 1ull << 20, kKiB = 1ull << 10;
  if (n >= kMiB && n % kMiB == 0) return fmt::format("{} bytes ({} MiB)", n, n / kMiB);
  if (n >= kKiB && n % kKiB == 0) return fmt::format("{} bytes ({} KiB)", n, n / kKiB);
  return fmt::format("{} bytes", n);
}

// "<what> <size>, over the input limit <param> = <limit>; raise it with ...": which limit, the
// size, and how to raise it (the error of a refused task's record).
std::string refusal(const std::string& what, const std::string& size, std::string_view param,
                    const std::string& limit) {
  std::string flag(param);
  for (char& c : flag) c = c == '_' ? '-' : c;
  return fmt::format(
      "{} {}, over the input limit {} = {}; raise it with `vsynth run --{} N` or the source's `{}` "
      "parameter",
      what, size, param, limit, flag, param);
}

// Arrays and objects nested deeper than this are refused before the line is parsed: nothing
// (the parser's DOM, a copy, a dump) ever recurses over a deeper task (issue 36: 100,000 levels
// crashed a reader). Real task records nest a handful of levels.
constexpr int kMaxTaskDepth = 64;

// The deepest nesting of [ and { outside strings: a byte scan, nothing recursive.
int nesting_depth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

JsonlSource::JsonlSource(SourceOptions options)
    : opt_(std::move(options)),
      files_ptr_(pointer_param(opt_.files_field, "files_field")),
      source_ptr_(pointer_param(opt_.source_field, "source_field")) {
  fd_ = ::open(opt_.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    throw std::runtime_error(
        fmt::format("cannot read input file `{}`: {}", opt_.path, std::strerror(errno)));
  }
  try {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      throw std::runtime_error(
          fmt::format("cannot read input file `{}`: {}", opt_.path, std::strerror(errno)));
    }
    if (S_ISDIR(st.st_mode)) {
      throw std::runtime_error(fmt::format(
          "input `{}` is a directory, not a file of tasks; --input takes a JSON Lines file (one "
          "task object per line)",
          opt_.path));
    }
    seekable_ = S_ISREG(st.st_mode);
    check_all();
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

JsonlSource::~JsonlSource() {
  if (fd_ >= 0) ::close(fd_);
}

void JsonlSource::check_all() {
  std::vector<std::string> errors;
  std::map<std::string, std::size_t, std::less<>> seen;  // id -> line
  LineReader reader(fd_);
  Line line;
  for (std::size_t lineno = 1;; ++lineno) {
    try {
      if (!reader.next(opt_.limits.task_bytes, line)) break;
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(
          fmt::format("cannot read input file `{}` (line {}): {}", opt_.path, lineno, e.what()));
    }
    std::optional<Entry> entry = check_line(line, lineno, errors);
    if (!entry) continue;
    if (auto [it, fresh] = seen.emplace(entry->id, lineno); !fresh) {
      errors.push_back(fmt::format("{}:{}: task id `{}` already used on line {}", opt_.path, lineno,
                                   entry->id, it->second));
      continue;
    }
    if (entry->owner == opt_.shard.index) ++own_;
    entries_.push_back(std::move(*entry));
  }
  if (!errors.empty()) {
    std::string msg = fmt::format("{} bad line(s) in `{}`:", errors.size(), opt_.path);
    const std::size_t shown = std::min<std::size_t>(errors.size(), 20);
    for (std::size_t i = 0; i < shown; ++i) msg += "\n  " + errors[i];
    if (shown < errors.size()) msg += fmt::format("\n  ... and {} more", errors.size() - shown);
    throw std::runtime_error(msg);
  }
}

std::optional<JsonlSource::Entry> JsonlSource::check_line(Line& line, std::size_t lineno,
                                                          std::vector<std::string>& errors) const {
  const std::string where = fmt::format("{}:{}", opt_.path, lineno);
  Entry entry{{}, lineno, line.offset, line.length, {}, {}};
  const std::string at_line = fmt::format(" (line {} of `{}`)", lineno, opt_.path);

  // Phase 1: a line too long to parse is refused under the id the scanner found in it.
  if (line.over) {
    std::optional<std::string> id = line.scanner.id();
    if (!id) {
      errors.push_back(fmt::format(
          "{}: {} bytes, over max_task_bytes ({}), and no string `id` or `task_id` found in it to "
          "record it under",
          where, line.length, bytes_text(opt_.limits.task_bytes)));
      return std::nullopt;
    }
    entry.id = std::move(*id);
    entry.owner = shard_of(entry.id, opt_.shard.count);  // no path to read: its id decides
    entry.refused = refusal("task is", bytes_text(line.length), "max_task_bytes",
                            bytes_text(opt_.limits.task_bytes)) +
                    at_line;
    return entry;
  }

  // Phase 2: UTF-8 text, then one JSON object, then its id.
  std::string_view text = line.text;
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  if (text.find_first_not_of(" \t") == std::string_view::npos) return std::nullopt;  // blank
  if (auto bad = find_encoding_error(text)) {
    errors.push_back(fmt::format("{}:{}: {} (byte offset {} in the file)", where, bad->at + 1,
                                 bad->what, line.offset + bad->at));
    return std::nullopt;
  }
  if (const int depth = nesting_depth(text); depth > kMaxTaskDepth) {
    const std::string why = fmt::format(
        "task nests arrays and objects {} levels deep, over the limit of {}; refused before "
        "parsing",
        depth, kMaxTaskDepth);
    IdScanner scanner;
    scanner.feed(text);
    std::optional<std::string> id = scanner.id();
    if (!id) {
      errors.push_back(
          fmt::format("{}: {}, and no string `id` or `task_id` found in it", where, why));
      return std::nullopt;
    }
    entry.id = std::move(*id);
    entry.owner = shard_of(entry.id, opt_.shard.count);
    entry.refused = why + at_line;
    return entry;
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    errors.push_back(fmt::format("{}:{}: not valid JSON: {}", where, e.byte, parse_error_text(e)));
    return std::nullopt;
  }
  if (!j.is_object()) {
    errors.push_back(
        fmt::format("{}: not a JSON object but {} {}; each line is one task, {{\"id\": ..., ...}}",
                    where, j.is_array() || j.is_object() ? "an" : "a", j.type_name()));
    return std::nullopt;
  }
  entry.id = task_id_of(j);
  if (entry.id.empty()) {
    errors.push_back(fmt::format("{}: task has no non-empty string `id` (or `task_id`)", where));
    return std::nullopt;
  }

  // Phase 3: the owning shard, then the per-file limits, on the parsed task (another shard's
  // task is checked the same, so all shards refuse the same input, but its text is not kept).
  entry.owner = shard_of(shard_key(j, entry.id, opt_.shard.key), opt_.shard.count);
  entry.refused = over_file_limits(j);
  if (!entry.refused.empty()) {
    entry.refused += at_line;
  } else if (!seekable_ && entry.owner == opt_.shard.index) {
    entry.text = std::move(line.text);
  }
  return entry;
}

std::string JsonlSource::over_file_limits(const nlohmann::json& task) const {
  const SourceLimits& lim = opt_.limits;
  if (task.contains(source_ptr_)) {
    const nlohmann::json& s = task.at(source_ptr_);
    if (s.is_string() && s.get_ref<const std::string&>().size() > lim.file_bytes) {
      return refusal(fmt::format("file {} is", opt_.source_field),
                     bytes_text(s.get_ref<const std::string&>().size()), "max_file_bytes",
                     bytes_text(lim.file_bytes));
    }
  }
  if (!task.contains(files_ptr_)) return {};
  const nlohmann::json& files = task.at(files_ptr_);
  if (!files.is_array()) return {};  // the stage that reads it says what is wrong with it
  if (files.size() > lim.files) {
    return refusal("task has", fmt::format("{} files at {}", files.size(), opt_.files_field),
                   "max_files", std::to_string(lim.files));
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    const nlohmann::json& f = files[i];
    if (!f.is_object()) continue;
    auto src = f.find("source");
    if (src == f.end() || !src->is_string()) continue;
    const std::size_t size = src->get_ref<const std::string&>().size();
    if (size <= lim.file_bytes) continue;
    auto path = f.find("path");
    const std::string name =
        path != f.end() && path->is_string() ? " (`" + path->get<std::string>() + "`)" : "";
    return refusal(fmt::format("file {}/{}/source{} is", opt_.files_field, i, name),
                   bytes_text(size), "max_file_bytes", bytes_text(lim.file_bytes));
  }
  return {};
}

std::string JsonlSource::read_back(const Entry& e) const {
  std::string text(e.length, '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n =
        ::pread(fd_, text.data() + got, text.size() - got, static_cast<off_t>(e.offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw std::runtime_error(fmt::format("cannot read input file `{}` (line {}): {}", opt_.path,
                                           e.line, std::strerror(errno)));
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  text.resize(got);
  return text;
}

std::vector<TaskOwner> JsonlSource::assignment() const {
  std::vector<TaskOwner> out;
  out.reserve(entries_.size());
  for (const Entry& e : entries_) out.push_back({e.id, e.owner});
  return out;
}

std::optional<graph::Task> JsonlSource::next() {
  while (next_ < entries_.size() && entries_[next_].owner != opt_.shard.index) ++next_;
  if (next_ >= entries_.size()) return std::nullopt;
  Entry& e = entries_[next_++];
  if (!e.refused.empty()) {
    graph::Task t{e.id, {{"id", e.id}}};
    t.refused = std::move(e.refused);
    return t;
  }
  std::string text = seekable_ ? read_back(e) : std::move(e.text);
  if (!text.empty() && text.back() == '\r') text.pop_back();
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || task_id_of(j) != e.id) {
    throw std::runtime_error(fmt::format(
        "{}:{}: the input file changed while the run read it (this line held task `{}` when it "
        "was checked); run on a file nothing else writes to",
        opt_.path, e.line, e.id));
  }
  return graph::Task{e.id, std::move(j)};  // a copy: assignment() still names it
}

graph::Contract jsonl_source_contract() {
  graph::Contract c;
  c.kind = "io.jsonl_source";
  c.summary =
      "Reads tasks from a JSON Lines file (one object per line, with `id` or `task_id`); a task "
      "over a size limit is written as failed (status `error`, exit `source`) and the others run";
  c.role = graph::Role::Source;
  const SourceLimits d;
  constexpr int64_t kTiB = int64_t{1} << 40;
  c.params = {
      graph::P::string("path", std::nullopt, "input file; `vsynth run --input` sets it"),
      graph::P::integer("max_task_bytes", static_cast<int64_t>(d.task_bytes), 1, kTiB,
                        "bytes of one task line; `--max-task-bytes` sets it. 16 MiB holds a "
                        "project's worth of files; the stages cost a multiple of it (a task at "
                        "the limit peaks at 0.9 GB in pipelines/context.yaml), so a bigger task "
                        "is refused before it takes the machine"),
      graph::P::integer("max_file_bytes", static_cast<int64_t>(d.file_bytes), 1, kTiB,
                        "bytes of one file's text in a task (at `source_field`, and each "
                        "`files_field` entry's `source`); `--max-file-bytes` sets it. 8 MiB is "
                        "past hand-written sources; bigger ones are generated or bundled"),
      graph::P::integer("max_files", static_cast<int64_t>(d.files), 0, kTiB,
                        "entries of `files_field` in one task; `--max-files` sets it. 10000 is "
                        "a large repository's worth"),
      graph::P::string("files_field", "/files",
                       "JSON pointer to a task's project files, [{\"path\", \"source\"}...], "
                       "as context.deps reads them"),
      graph::P::string("source_field", "/source",
                       "JSON pointer to a task's own file text, as ast.anchor reads it"),
      graph::P::string("shard", "0/1",
                       "I/N: run only the tasks whose key hashes to shard I of N (every line is "
                       "still checked); `vsynth run --shard` and MPI launches set it"),
      graph::P::choice("shard_by", "file", {"file", "id"},
                       "the key the shard is chosen by: `file` (the task's `path`, else its id: "
                       "one file's tasks meet on one process, with its caches warm) or `id`"),
  };
  return c;
}

}  // namespace vsynth::stages::io
