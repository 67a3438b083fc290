// lru_cache.cpp - a header-style LRU cache with a templated key hash and a demo.
//
// Written for the vsynth tokenizer corpus: C++20 templates, concepts, lambdas,
// structured bindings, raw strings, user-defined literals and operator overloads.
#include <concepts>
#include <cstddef>
#include <functional>
#include <iostream>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace corpus {

template <class K>
concept Hashable = requires(const K& k) {
  { std::hash<K>{}(k) } -> std::convertible_to<std::size_t>;
};

template <Hashable K, class V>
class LruCache {
 public:
  explicit LruCache(std::size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  // Returns the value and marks it most recently used.
  std::optional<V> get(const K& key) {
    auto it = index_.find(key);
    if (it == index_.end()) {
      ++misses_;
      return std::nullopt;
    }
    order_.splice(order_.begin(), order_, it->second);
    ++hits_;
    return it->second->second;
  }

  void put(K key, V value) {
    if (auto it = index_.find(key); it != index_.end()) {
      it->second->second = std::move(value);
      order_.splice(order_.begin(), order_, it->second);
      return;
    }
    if (index_.size() >= capacity_) {
      auto& [old_key, old_value] = order_.back();
      index_.erase(old_key);
      order_.pop_back();
    }
    order_.emplace_front(std::move(key), std::move(value));
    index_[order_.front().first] = order_.begin();
  }

  [[nodiscard]] std::size_t size() const noexcept { return index_.size(); }
  [[nodiscard]] double hit_rate() const noexcept {
    const auto total = hits_ + misses_;
    return total == 0 ? 0.0 : static_cast<double>(hits_) / static_cast<double>(total);
  }

 private:
  using Entry = std::pair<K, V>;
  std::size_t capacity_;
  std::list<Entry> order_;
  std::unordered_map<K, typename std::list<Entry>::iterator> index_;
  std::size_t hits_ = 0, misses_ = 0;
};

constexpr std::size_t operator""_KiB(unsigned long long n) { return static_cast<std::size_t>(n) << 10; }

}  // namespace corpus

int main() {
  using namespace corpus;
  LruCache<std::string, int> cache(3);
  for (const char* w : {"alpha", "beta", "gamma", "alpha", "delta", "beta", "alpha"}) {
    if (auto v = cache.get(w)) {
      std::cout << w << " -> hit " << *v << '\n';
    } else {
      cache.put(w, static_cast<int>(std::char_traits<char>::length(w)));
      std::cout << w << " -> miss\n";
    }
  }
  std::cout << "size=" << cache.size() << " hit rate=" << cache.hit_rate() * 100.0 << "%\n";
  const auto banner = R"(== "raw" strings keep \n and \t as written ==)";
  std::cout << banner << '\n' << "budget: " << 4_KiB << " bytes\n";
  auto cmp = [](auto&& a, auto&& b) noexcept { return a <=> b; };
  std::cout << std::boolalpha << (cmp(1, 2) < 0) << std::endl;
  return 0;
}
