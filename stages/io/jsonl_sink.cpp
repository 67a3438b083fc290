#include "stages/io/jsonl_sink.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace vsynth::stages::io {

namespace {

OutputError sys_error(const std::string& what, const std::string& path, int err = errno) {
  return OutputError(fmt::format("{} `{}`: {}", what, path, std::strerror(err)));
}

// Who holds the flock on the file `st` describes, from /proc/locks ("1: FLOCK  ADVISORY  WRITE
// <pid> <major>:<minor>:<inode> 0 EOF", device numbers in hex): " (pid 123, `vsynth`)", or
// nothing where that cannot be read (no /proc, another pid namespace).
std::string lock_holder(const struct stat& st) {
  std::ifstream locks("/proc/locks");
  for (std::string line; std::getline(locks, line);) {
    std::istringstream in(line);
    std::string n, type, mode, rw, pid, where;
    if (!(in >> n >> type >> mode >> rw >> pid >> where) || type != "FLOCK") continue;
    unsigned maj = 0, min = 0;
    unsigned long long ino = 0;
    if (std::sscanf(where.c_str(), "%x:%x:%llu", &maj, &min, &ino) != 3) continue;
    if (maj != major(st.st_dev) || min != minor(st.st_dev) || ino != st.st_ino) continue;
    if (pid.empty() || pid == "-1" || pid == "0") break;
    std::string comm;
    std::getline(std::ifstream("/proc/" + pid + "/comm"), comm);
    return comm.empty() ? fmt::format(" (pid {})", pid) : fmt::format(" (pid {}, `{}`)", pid, comm);
  }
  return "";
}

}  // namespace

JsonlSink::JsonlSink(SinkOptions options) : opt_(std::move(options)) {
  open_locked();
  try {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) throw sys_error("cannot read output", opt_.path);
    if (regular_ && st.st_size > 0) {
      if (opt_.resume) {
        load_existing();
      } else if (opt_.overwrite) {
        if (::ftruncate(fd_, 0) != 0) throw sys_error("cannot empty output", opt_.path);
      } else {
        std::ifstream in(opt_.path);
        std::size_t lines = 0;
        for (std::string l; std::getline(in, l);) ++lines;
        throw std::runtime_error(
            fmt::format("output `{}` already holds {} record(s); pass --resume to continue it or "
                        "--overwrite to replace it",
                        opt_.path, lines));
      }
      if (::fstat(fd_, &st) != 0) throw sys_error("cannot read output", opt_.path);
    }
    good_end_ = regular_ ? static_cast<uint64_t>(st.st_size) : 0;
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    throw;
  }
}

JsonlSink::~JsonlSink() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

void JsonlSink::open_locked() {
  fd_ = ::open(opt_.path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    if (errno == EISDIR) {
      std::string dir = opt_.path;
      while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
      throw std::runtime_error(fmt::format(
          "output `{}` is a directory; --output names the results file, e.g. `{}/results.jsonl`",
          opt_.path, dir));
    }
    throw sys_error("cannot open output", opt_.path);
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    throw sys_error("cannot open output", opt_.path, err);
  }
  // /dev/null, a pipe, a terminal: nothing to lock, resume or repair.
  regular_ = S_ISREG(st.st_mode);
  if (!regular_) return;
  // flock, not fcntl: its lock belongs to this open file description, so reading the file
  // through another descriptor cannot drop it (a POSIX lock would go with the first close),
  // and /proc/locks names its holder (an OFD lock shows pid -1).
  if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
  const int err = errno;
  ::close(fd_);
  fd_ = -1;
  if (err == EWOULDBLOCK) {
    throw OutputError(
        fmt::format("output `{}` is in use by another run{}: two runs appending to one file would "
                    "interleave their records; wait for it to finish, or write to another file",
                    opt_.path, lock_holder(st)));
  }
  throw sys_error("cannot lock output", opt_.path, err);
}

void JsonlSink::load_existing() {
  std::ifstream in(opt_.path, std::ios::binary);
  if (!in) throw sys_error("cannot read output", opt_.path);
  uint64_t good_end = 0;  // bytes: end of the last whole record
  std::size_t lineno = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineno;
    const bool had_newline = !in.eof();
    auto j = nlohmann::json::parse(line, nullptr, false);
    const bool ok = had_newline && !j.is_discarded() && j.is_object() && j.contains("id") &&
                    j["id"].is_string();
    if (!ok) {
      if (in.peek() != std::char_traits<char>::eof()) {
        throw std::runtime_error(fmt::format(
            "{}:{}: not a result record, and not the last line, so it is not a torn write from an "
            "interrupted run; refusing to resume into this file",
            opt_.path, lineno));
      }
      break;  // torn tail: cut below
    }
    done_.insert(j["id"].get<std::string>());
    good_end += line.size() + 1;
  }
  if (in.bad()) throw sys_error("cannot read output", opt_.path);
  struct stat st {};
  if (::fstat(fd_, &st) != 0) throw sys_error("cannot read output", opt_.path);
  const auto size = static_cast<uint64_t>(st.st_size);
  if (good_end < size) {
    repaired_ = size - good_end;
    if (::ftruncate(fd_, static_cast<off_t>(good_end)) != 0) {
      throw sys_error("cannot cut the torn last record of", opt_.path);
    }
  }
}

void JsonlSink::cut_back(const char* what, int err) {
  std::string after;
  if (!regular_) {
    after = "";
  } else if (::ftruncate(fd_, static_cast<off_t>(good_end_)) == 0) {
    after = fmt::format(
        "; the file is cut back to its last complete record ({} records, {} bytes), so "
        "--resume continues it",
        done_.size(), good_end_);
  } else {
    after = fmt::format(
        "; cutting it back to its last complete record failed too ({}); --resume cuts the torn "
        "record",
        std::strerror(errno));
  }
  failure_ = fmt::format("cannot {} `{}`: {}{}", what, opt_.path, std::strerror(err), after);
  throw OutputError(failure_);
}

void JsonlSink::append(const std::string& line) {
  if (!failure_.empty()) {
    throw OutputError(
        fmt::format("output `{}` takes no more records after a failed write", opt_.path));
  }
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) cut_back("write to", n < 0 ? errno : EIO);
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  // A record the disk may not keep is not complete: cut it too, and let --resume redo it.
  if (opt_.fsync && regular_ && ::fdatasync(fd_) != 0) cut_back("sync", errno);
  good_end_ += line.size();
}

void JsonlSink::write(const graph::Item& item) {
  std::string line =
      item.to_record().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  line += '\n';
  append(line);
  done_.insert(item.id());
}

bool JsonlSink::contains(std::string_view task_id) const {
  return done_.find(task_id) != done_.end();
}

void JsonlSink::flush() {
  if (fd_ >= 0 && regular_ && ::fsync(fd_) != 0) throw sys_error("cannot sync", opt_.path);
}

graph::Contract jsonl_sink_contract() {
  graph::Contract c;
  c.kind = "io.jsonl_sink";
  c.summary =
      "Appends one JSON record per finished item to a JSON Lines file, fsync'd per record; the "
      "file is locked for the run, and a failed write cuts it back to its last whole record";
  c.role = graph::Role::Sink;
  c.params = {
      graph::P::string("path", std::nullopt, "output file; `vsynth run --output` sets it"),
      graph::P::boolean("fsync", true, "fsync after every record (crash-safe; slower)"),
      graph::P::boolean("resume", false,
                        "continue an existing output: skip ids already in it (`--resume`)"),
      graph::P::boolean("overwrite", false, "replace an existing output (`--overwrite`)"),
  };
  return c;
}

}  // namespace vsynth::stages::io
