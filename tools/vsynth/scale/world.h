// The job's ranks as MPI sees them: the collectives the scaled-out run needs (agree on
// startup, gather summaries, share the exit code) and the small point-to-point messages that
// carry each rank's progress to rank 0. Only built when CMake finds MPI (VSYNTH_HAVE_MPI).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace vsynth::cli {

class World {
 public:
  // MPI_Init_thread; throws std::runtime_error when MPI cannot give a thread level at which a
  // helper thread may make calls (MPI_THREAD_SERIALIZED).
  World();
  ~World();  // MPI_Finalize
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Every rank's string, in rank order, on every rank.
  std::vector<std::string> allgather(const std::string& mine) const;
  // Every rank's string at rank 0 (elsewhere: empty).
  std::vector<std::string> gather(const std::string& mine) const;
  // Rank 0's value on every rank.
  int broadcast(int value) const;
  void barrier() const;

  // Point to point, to rank 0: a short vector of numbers under a tag.
  void send_to_root(int tag, const std::vector<double>& values) const;
  struct Message {
    int from = 0;
    int tag = 0;
    std::vector<double> values;
  };
  // At rank 0: a message when one is waiting, without blocking.
  std::optional<Message> poll() const;

 private:
  int rank_ = 0, size_ = 1;
};

}  // namespace vsynth::cli
