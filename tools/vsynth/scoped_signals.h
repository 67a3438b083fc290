// ScopedSignals: one handler for a few signals while an object lives, and whatever was there
// before put back when it goes (every return path, an exception included). `vsynth run` uses
// it so that returning leaves no handler behind pointing at its dead locals.
#pragma once

#include <signal.h>

#include <initializer_list>
#include <utility>
#include <vector>

namespace vsynth::cli {

class ScopedSignals {
 public:
  ScopedSignals(std::initializer_list<int> signals, void (*handler)(int)) {
    for (const int s : signals) {
      struct sigaction sa {};
      sa.sa_handler = handler;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART;  // as signal() installs it: reads and waits are resumed
      struct sigaction old {};
      if (::sigaction(s, &sa, &old) == 0) saved_.emplace_back(s, old);
    }
  }
  ~ScopedSignals() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      ::sigaction(it->first, &it->second, nullptr);
    }
  }
  ScopedSignals(const ScopedSignals&) = delete;
  ScopedSignals& operator=(const ScopedSignals&) = delete;

 private:
  std::vector<std::pair<int, struct sigaction>> saved_;
};

}  // namespace vsynth::cli
