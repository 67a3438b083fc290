#include "stages/io/shard.h"

#include <fmt/format.h>

#include <charconv>

#include "base/hash.h"
#include "base/mix.h"

namespace vsynth::stages::io {

namespace {

std::optional<uint32_t> parse_u32(std::string_view s) {
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<Shard> parse_shard(std::string_view text, std::string& error) {
  constexpr uint32_t kMaxShards = 65536;
  const auto slash = text.find('/');
  const auto bad = [&](const std::string& why) -> std::optional<Shard> {
    error = fmt::format("shard `{}`: {}; expected I/N with 0 <= I < N, e.g. 0/4", text, why);
    return std::nullopt;
  };
  if (slash == std::string_view::npos) return bad("no `/`");
  const auto index = parse_u32(text.substr(0, slash));
  const auto count = parse_u32(text.substr(slash + 1));
  if (!index || !count) return bad("I and N must be whole numbers");
  if (*count == 0 || *count > kMaxShards) return bad(fmt::format("N must be 1..{}", kMaxShards));
  if (*index >= *count) return bad("I must be below N (shards count from 0)");
  return Shard{*index, *count, ShardKey::File};
}

std::optional<ShardKey> parse_shard_key(std::string_view text) {
  if (text == "file") return ShardKey::File;
  if (text == "id") return ShardKey::Id;
  return std::nullopt;
}

uint32_t shard_of(std::string_view key, uint32_t count) {
  if (count <= 1) return 0;
  // splitmix64's finaliser: FNV's low bits are weak on short keys that differ at the end.
  const uint64_t h = base::splitmix64_finalize(base::fnv1a64(key));
  return static_cast<uint32_t>(h % count);
}

std::string shard_key(const nlohmann::json& task, const std::string& id, ShardKey key) {
  if (key == ShardKey::File) {
    auto it = task.find("path");
    if (it != task.end() && it->is_string() && !it->get_ref<const std::string&>().empty()) {
      return it->get<std::string>();
    }
  }
  return id;
}

}  // namespace vsynth::stages::io
