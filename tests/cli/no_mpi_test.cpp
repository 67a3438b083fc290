// A vsynth built without MPI, started by mpirun: it must refuse to run (each rank would run
// the whole job) and say how to run the job instead. Built from the no-MPI variant of
// tools/vsynth/scale/scaled_run.cpp, whatever this machine's build has.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "graph/registry.h"
#include "tools/vsynth/exit_codes.h"
#include "tools/vsynth/scale/launch.h"
#include "tools/vsynth/scale/scaled_run.h"

using namespace vsynth;

TEST_CASE("an mpirun launch of a build without MPI is refused, naming the way out") {
  ::setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
  ::setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  ::setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "3", 1);
  const cli::Launch launch = cli::detect_launch();
  CHECK(launch.ranks == 3);
  CHECK(launch.launcher == "Open MPI");
  CHECK(cli::default_threads(launch) >= 1);

  std::ostringstream err;
  auto* old = std::cerr.rdbuf(err.rdbuf());
  graph::Registry registry;
  const int code = cli::run_scaled(registry, cli::RunArgs{}, launch);
  std::cerr.rdbuf(old);
  CHECK(code == cli::kExitUsage);
  CHECK_THAT(err.str(), Catch::Contains("built without MPI"));
  CHECK_THAT(err.str(), Catch::Contains("--shard I/3"));
  for (const char* v :
       {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"}) {
    ::unsetenv(v);
  }
  CHECK(cli::detect_launch().ranks == 1);
}
