// How this process was started: alone, or as one rank of an MPI job (read from the variables
// the launcher sets, before MPI itself is touched, so a build without MPI can still refuse an
// MPI launch clearly instead of running N copies of the whole job).
#pragma once

#include <string>

namespace vsynth::cli {

struct Launch {
  int ranks = 1;         // processes in the job
  int rank = 0;          // this one
  int local_ranks = 1;   // processes of the job on this machine (threads are shared among them)
  std::string launcher;  // "Open MPI", "PMI" (MPICH, Slurm srun), empty when alone
};

Launch detect_launch();

// The default --threads of a rank: the machine's cores shared among the job's ranks on it.
int default_threads(const Launch& launch);

}  // namespace vsynth::cli
