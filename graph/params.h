// Params: a stage's or resource's parameters after validation against its contract.
// Every declared parameter is present (explicit or default) with the declared type, so the
// getters cannot fail on a validated pipeline; asking for an undeclared name is a bug and throws.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "graph/contract.h"

namespace vsynth::graph {

class Params {
 public:
  Params() = default;
  explicit Params(std::map<std::string, Value, std::less<>> values) : values_(std::move(values)) {}

  bool boolean(std::string_view name) const { return as<bool>(name); }
  int64_t integer(std::string_view name) const { return as<int64_t>(name); }
  double number(std::string_view name) const;  // Float, or Int widened
  const std::string& string(std::string_view name) const { return as<std::string>(name); }
  const std::vector<std::string>& strings(std::string_view name) const {
    return as<std::vector<std::string>>(name);
  }
  // A Pointer parameter, parsed (its syntax was checked when the pipeline was validated).
  const JsonPointer& pointer(std::string_view name) const { return as<JsonPointer>(name); }
  bool has(std::string_view name) const { return values_.find(name) != values_.end(); }
  const std::map<std::string, Value, std::less<>>& all() const { return values_; }
  void set(std::string name, Value v) { values_[std::move(name)] = std::move(v); }

 private:
  template <class T>
  const T& as(std::string_view name) const;

  std::map<std::string, Value, std::less<>> values_;
};

}  // namespace vsynth::graph
