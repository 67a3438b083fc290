#include "stages/io/jsonl_sink.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace vsynth::stages::io {

namespace {
std::runtime_error sys_error(const std::string& what, const std::string& path) {
  return std::runtime_error(fmt::format("{} `{}`: {}", what, path, std::strerror(errno)));
}
}  // namespace

JsonlSink::JsonlSink(SinkOptions options) : opt_(std::move(options)) {
  struct stat st {};
  const bool exists = ::stat(opt_.path.c_str(), &st) == 0;
  if (exists && st.st_size > 0) {
    if (opt_.resume) {
      load_existing();
    } else if (!opt_.overwrite) {
      std::ifstream in(opt_.path);
      std::size_t lines = 0;
      for (std::string l; std::getline(in, l);) ++lines;
      throw std::runtime_error(fmt::format(
          "output `{}` already holds {} record(s); pass --resume to continue it or --overwrite to "
          "replace it",
          opt_.path, lines));
    }
  }
  int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC;
  if (exists && opt_.overwrite && !opt_.resume) flags |= O_TRUNC;
  fd_ = ::open(opt_.path.c_str(), flags, 0644);
  if (fd_ < 0) throw sys_error("cannot open output", opt_.path);
}

JsonlSink::~JsonlSink() {
  if (fd_ >= 0) ::close(fd_);
}

void JsonlSink::load_existing() {
  std::ifstream in(opt_.path, std::ios::binary);
  if (!in) throw sys_error("cannot read output", opt_.path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string data = ss.str();
  std::size_t pos = 0, lineno = 0, good_end = 0;
  while (pos < data.size()) {
    ++lineno;
    const std::size_t nl = data.find('\n', pos);
    const bool last = nl == std::string::npos || nl + 1 == data.size();
    const std::string line =
        data.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    auto j = nlohmann::json::parse(line, nullptr, false);
    const bool ok = nl != std::string::npos && !j.is_discarded() && j.is_object() &&
                    j.contains("id") && j["id"].is_string();
    if (!ok) {
      if (!last) {
        throw std::runtime_error(fmt::format(
            "{}:{}: not a result record, and not the last line, so it is not a torn write from an "
            "interrupted run; refusing to resume into this file",
            opt_.path, lineno));
      }
      break;  // torn tail: cut below
    }
    done_.insert(j["id"].get<std::string>());
    good_end = nl + 1;
    pos = nl + 1;
  }
  if (good_end < data.size()) {
    repaired_ = data.size() - good_end;
    if (::truncate(opt_.path.c_str(), static_cast<off_t>(good_end)) != 0) {
      throw sys_error("cannot cut the torn last record of", opt_.path);
    }
  }
}

void JsonlSink::append(const std::string& line) {
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw sys_error("cannot write to", opt_.path);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (opt_.fsync && ::fdatasync(fd_) != 0) throw sys_error("cannot sync", opt_.path);
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
  if (fd_ >= 0 && ::fsync(fd_) != 0) throw sys_error("cannot sync", opt_.path);
}

graph::Contract jsonl_sink_contract() {
  graph::Contract c;
  c.kind = "io.jsonl_sink";
  c.summary = "Appends one JSON record per finished item to a JSON Lines file, fsync'd per record";
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
