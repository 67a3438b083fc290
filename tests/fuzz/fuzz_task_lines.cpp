// libFuzzer entry point for the task-file reader (io.jsonl_source): arbitrary bytes as a JSON
// Lines task file, read through the stage's public constructor. Any input must end in tasks
// (each with a non-empty id, no id twice) or one error listing the bad lines — never a crash,
// a hang or unbounded memory. The bytes go through a memfd, so no disk is touched per input.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <stdexcept>
#include <string>

#include "stages/io/jsonl_source.h"

namespace {

// One in-memory file for the whole run, rewritten per input; its /proc path reopens it at 0.
const std::string& task_file(const uint8_t* data, size_t size) {
  static const int fd = ::memfd_create("fuzz_tasks.jsonl", 0);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (fd < 0 || ::ftruncate(fd, 0) != 0) std::abort();
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = task_file(data, size);
  try {
    vsynth::stages::io::JsonlSource source(path);
    std::set<std::string> ids;
    while (auto task = source.next()) {
      if (task->id.empty() || !ids.insert(task->id).second) std::abort();
    }
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).empty()) std::abort();  // an error says what is wrong
  }
  return 0;
}
