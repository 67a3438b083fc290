#include "tools/vsynth/scale/parts.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace vsynth::cli {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPartTag = ".rank-";

MergeIoError sys_error(const std::string& what, const std::string& path) {
  return MergeIoError(fmt::format("{} `{}`: {}", what, path, std::strerror(errno)));
}

// Owns a descriptor; closing it drops any flock taken through it.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

struct Record {
  std::string id;
  uint64_t offset = 0, length = 0;  // bytes, the newline included
};

// Every whole record of a results file, in file order; a torn last line is left out.
std::vector<Record> index_records(const std::string& path) {
  std::vector<Record> out;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return out;
    throw sys_error("cannot read results file", path);
  }
  uint64_t offset = 0;
  std::size_t lineno = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineno;
    const bool whole = !in.eof();
    const uint64_t length = line.size() + 1;
    if (!whole) break;  // torn tail: a record cut short, not a record
    auto j = nlohmann::json::parse(line, nullptr, false);
    auto id = j.is_object() ? j.find("id") : j.end();
    if (j.is_discarded() || !j.is_object() || id == j.end() || !id->is_string()) {
      throw std::runtime_error(
          fmt::format("{}:{}: not a result record (a JSON object with a string `id`); this file "
                      "is not a results file of vsynth run, or it was edited",
                      path, lineno));
    }
    out.push_back({id->get<std::string>(), offset, length});
    offset += length;
  }
  if (in.bad()) throw sys_error("cannot read results file", path);
  return out;
}

// Opens `path` for reading and refuses it when a run still writes it (its sink holds an
// exclusive flock for as long as it lives).
int open_unused(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw sys_error("cannot read", path);
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      throw MergeIoError(fmt::format(
          "`{}` is still being written by a run (it holds the file's lock); merge once every "
          "rank or shard has finished",
          path));
    }
    errno = err;
    throw sys_error("cannot lock", path);
  }
  return fd;
}

void copy_range(int from, const std::string& from_path, uint64_t offset, uint64_t length, int to,
                const std::string& to_path) {
  std::string buf(length, '\0');
  uint64_t got = 0;
  while (got < length) {
    const ssize_t n =
        ::pread(from, buf.data() + got, length - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw sys_error("cannot read back a record of", from_path);
    got += static_cast<uint64_t>(n);
  }
  for (uint64_t put = 0; put < length;) {
    const ssize_t n = ::write(to, buf.data() + put, length - put);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw sys_error("cannot write", to_path);
    put += static_cast<uint64_t>(n);
  }
}

void sync_dir_of(const std::string& path) {
  const fs::path dir =
      fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // the rename is done; only its durability across a crash is unproved
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

std::string part_path(const std::string& output, uint32_t rank) {
  return fmt::format("{}{}{}", output, kPartTag, rank);
}

std::vector<PartFile> find_parts(const std::string& output) {
  const fs::path out(output);
  const fs::path dir = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  const std::string prefix = out.filename().string() + std::string(kPartTag);
  std::vector<PartFile> parts;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string_view digits(name.data() + prefix.size(), name.size() - prefix.size());
    uint32_t rank = 0;
    auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), rank);
    if (err != std::errc{} || end != digits.data() + digits.size()) continue;
    parts.push_back({(dir / name).string(), rank});
  }
  std::sort(parts.begin(), parts.end(),
            [](const PartFile& a, const PartFile& b) { return a.rank < b.rank; });
  if (out.parent_path().empty()) {
    for (auto& p : parts) p.path = fs::path(p.path).filename().string();
  }
  return parts;
}

std::set<std::string, std::less<>> record_ids(const std::string& path) {
  std::set<std::string, std::less<>> ids;
  for (auto& r : index_records(path)) ids.insert(std::move(r.id));
  return ids;
}

std::set<std::string, std::less<>> finished_in_merged_output(const std::string& output) {
  return record_ids(output);
}

std::string check_earlier_job(const std::string& output, uint32_t ranks, bool resume,
                              bool overwrite) {
  if (resume || overwrite) return {};
  struct stat st {};
  if (::stat(output.c_str(), &st) == 0 && st.st_size > 0) {
    return fmt::format(
        "output `{}` already holds results (an earlier job's merge); pass --resume to continue "
        "it or --overwrite to replace it",
        output);
  }
  for (const PartFile& p : find_parts(output)) {
    if (p.rank >= ranks) {
      return fmt::format(
          "`{}` is a part of an earlier job with more ranks; pass --resume to merge it in, or "
          "--overwrite to start over",
          p.path);
    }
  }
  return {};
}

MergeResult merge_results(const MergeOptions& options) {
  // Phase 1: open and index every input (parts first: their records win), refusing any
  // that a run still writes.
  struct Source {
    std::string path;
    std::unique_ptr<Fd> fd;
    std::vector<Record> records;
  };
  std::vector<Source> sources;
  for (const std::string& p : options.parts) {
    sources.push_back({p, std::make_unique<Fd>(open_unused(p)), index_records(p)});
  }
  const bool have_existing = options.keep_existing && ::access(options.output.c_str(), F_OK) == 0;
  if (have_existing) {
    sources.push_back({options.output, std::make_unique<Fd>(open_unused(options.output)),
                       index_records(options.output)});
  }
  MergeResult result;
  std::map<std::string_view, std::pair<std::size_t, std::size_t>> chosen;  // id -> (src, rec)
  for (std::size_t s = 0; s < sources.size(); ++s) {
    for (std::size_t r = 0; r < sources[s].records.size(); ++r) {
      if (!chosen.emplace(sources[s].records[r].id, std::pair{s, r}).second) ++result.duplicates;
    }
  }

  // Phase 2: the merged file, beside the output: in input order when asked, else the earlier
  // output's records first, then each part's in its order.
  const std::string tmp = options.output + ".merging";
  Fd out(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (out.get() < 0) throw sys_error("cannot create", tmp);
  try {
    auto put = [&](std::size_t s, std::size_t r) {
      const Record& rec = sources[s].records[r];
      copy_range(sources[s].fd->get(), sources[s].path, rec.offset, rec.length, out.get(), tmp);
      ++result.records;
      if (have_existing && s + 1 == sources.size()) ++result.from_existing;
    };
    std::vector<std::size_t> order(sources.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    if (have_existing) std::rotate(order.begin(), order.end() - 1, order.end());
    std::set<std::string_view> written;
    for (const std::string& id : options.order) {
      auto it = chosen.find(id);
      if (it == chosen.end() || !written.insert(it->first).second) continue;
      put(it->second.first, it->second.second);
    }
    for (std::size_t s : order) {
      for (std::size_t r = 0; r < sources[s].records.size(); ++r) {
        const auto& c = chosen.at(sources[s].records[r].id);
        if (c != std::pair{s, r} || written.count(sources[s].records[r].id)) continue;
        put(s, r);
      }
    }
    if (::fsync(out.get()) != 0) throw sys_error("cannot sync", tmp);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }

  // Phase 3: the new file replaces the output in one rename; then the parts go.
  if (::rename(tmp.c_str(), options.output.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    errno = err;
    throw sys_error("cannot move the merged file over", options.output);
  }
  sync_dir_of(options.output);
  if (options.remove_parts) {
    for (const std::string& p : options.parts) ::unlink(p.c_str());
  }
  return result;
}

}  // namespace vsynth::cli
