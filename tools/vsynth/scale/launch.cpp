#include "tools/vsynth/scale/launch.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace vsynth::cli {

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  int out = 0;
  auto [end, ec] = std::from_chars(v, v + std::strlen(v), out);
  return ec == std::errc{} && *end == '\0' ? out : fallback;
}

}  // namespace

Launch detect_launch() {
  Launch l;
  if (std::getenv("OMPI_COMM_WORLD_SIZE")) {
    l.launcher = "Open MPI";
    l.ranks = env_int("OMPI_COMM_WORLD_SIZE", 1);
    l.rank = env_int("OMPI_COMM_WORLD_RANK", 0);
    l.local_ranks = env_int("OMPI_COMM_WORLD_LOCAL_SIZE", 1);
  } else if (std::getenv("PMI_SIZE")) {
    l.launcher = "PMI";
    l.ranks = env_int("PMI_SIZE", 1);
    l.rank = env_int("PMI_RANK", 0);
    l.local_ranks = env_int("MPI_LOCALNRANKS", 1);
  }
  l.ranks = std::max(1, l.ranks);
  l.local_ranks = std::max(1, l.local_ranks);
  return l;
}

int default_threads(const Launch& launch) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return launch.ranks > 1 ? std::max(1, cores / launch.local_ranks) : 0;
}

}  // namespace vsynth::cli
