#include <map>
#include <string>
#include <utility>

namespace shop {

using std::string;

class Cart {
 public:
  explicit Cart(string owner) : owner_(std::move(owner)) {}

  void add(const string& sku, int quantity) {
    auto it = lines_.find(sku);
    if (it == lines_.end()) {
      lines_.emplace(sku, quantity);
    } else {
      it->second += quan<@a>tity;
    }
  }

  int total() const;

 private:
  string owner_;
  std::map<string, int> lines_;
};

int Cart::total() const {
  int sum = 0;
  for (const auto& [sku, q] : lines_) sum += <@out>q;
  return sum;
}

template <typename T>
T clamp_to(T v, T lo, T hi) { return v < lo ? lo : (v > hi ? hi : v); }

}  // namespace shop

int main() {
  shop::Cart cart("ada");
  cart.add("apple", 3);
  auto twice = [](int x) { return 2 * <@lambda>x; };
  return twice(cart.total()) > 0 ? 0 : 1;
}
