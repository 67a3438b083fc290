// Which tasks of an input one process of a scaled-out job takes: shard `index` of `count`,
// chosen by a stable hash of the task's key, so every process of a job (MPI ranks, Slurm or
// Kubernetes array indices) computes the same split from the same input with no coordination.
//
// The key is the task's file (`path`, else its id) by default: one file's tasks meet on one
// process, with its parse cache, retrieval index and KV pool warm; or the task id.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace vsynth::stages::io {

enum class ShardKey { File, Id };

struct Shard {
  uint32_t index = 0;
  uint32_t count = 1;
  ShardKey key = ShardKey::File;
  bool all() const { return count <= 1; }
};

// "I/N" (0 <= I < N <= 65536); nullopt with `error` set otherwise.
std::optional<Shard> parse_shard(std::string_view text, std::string& error);
// "file" or "id"; nullopt otherwise.
std::optional<ShardKey> parse_shard_key(std::string_view text);

// The shard in [0, count) that owns `key`: FNV-1a 64 with a final avalanche, so it is the same
// on every machine, compiler and run (std::hash is none of these).
uint32_t shard_of(std::string_view key, uint32_t count);

// The key of a task under `key`: its `path` when that is a non-empty string (File), else `id`.
std::string shard_key(const nlohmann::json& task, const std::string& id, ShardKey key);

}  // namespace vsynth::stages::io
