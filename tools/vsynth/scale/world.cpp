#include "tools/vsynth/scale/world.h"

// The C API only: the MPI-2 C++ bindings are deprecated, and their symbols need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <stdexcept>

namespace vsynth::cli {

World::World() {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    throw std::runtime_error(
        "this MPI cannot let a helper thread make MPI calls (MPI_THREAD_SERIALIZED); the job's "
        "progress relay needs it");
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

World::~World() {
  MPI_Finalize();
}

std::vector<std::string> World::allgather(const std::string& mine) const {
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(size_), offsets(size_);
  MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < size_; ++r) offsets[r] = total, total += lens[r];
  std::string all(static_cast<std::size_t>(total), '\0');
  MPI_Allgatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR,
                 MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (int r = 0; r < size_; ++r) out.push_back(all.substr(offsets[r], lens[r]));
  return out;
}

std::vector<std::string> World::gather(const std::string& mine) const {
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(size_), offsets(size_);
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < size_; ++r) offsets[r] = total, total += lens[r];
  std::string all(rank_ == 0 ? static_cast<std::size_t>(total) : 0, '\0');
  MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR, 0,
              MPI_COMM_WORLD);
  std::vector<std::string> out;
  if (rank_ != 0) return out;
  for (int r = 0; r < size_; ++r) out.push_back(all.substr(offsets[r], lens[r]));
  return out;
}

int World::broadcast(int value) const {
  MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return value;
}

void World::barrier() const {
  MPI_Barrier(MPI_COMM_WORLD);
}

void World::send_to_root(int tag, const std::vector<double>& values) const {
  MPI_Send(values.data(), static_cast<int>(values.size()), MPI_DOUBLE, 0, tag, MPI_COMM_WORLD);
}

std::optional<World::Message> World::poll() const {
  int waiting = 0;
  MPI_Status status;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &waiting, &status);
  if (!waiting) return std::nullopt;
  int count = 0;
  MPI_Get_count(&status, MPI_DOUBLE, &count);
  Message m{status.MPI_SOURCE, status.MPI_TAG,
            std::vector<double>(static_cast<std::size_t>(count))};
  MPI_Recv(m.values.data(), count, MPI_DOUBLE, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD,
           MPI_STATUS_IGNORE);
  return m;
}

}  // namespace vsynth::cli
