#include "graph/params.h"

#include <stdexcept>

namespace vsynth::graph {

template <class T>
const T& Params::as(std::string_view name) const {
  auto it = values_.find(name);
  if (it == values_.end()) {
    throw std::logic_error("parameter `" + std::string(name) + "` is not declared in the contract");
  }
  if (const T* v = std::get_if<T>(&it->second)) return *v;
  throw std::logic_error("parameter `" + std::string(name) + "` read with the wrong type");
}

double Params::number(std::string_view name) const {
  auto it = values_.find(name);
  if (it != values_.end()) {
    if (const auto* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  }
  return as<double>(name);
}

template const bool& Params::as<bool>(std::string_view) const;
template const int64_t& Params::as<int64_t>(std::string_view) const;
template const std::string& Params::as<std::string>(std::string_view) const;
template const std::vector<std::string>& Params::as<std::vector<std::string>>(
    std::string_view) const;
template const JsonPointer& Params::as<JsonPointer>(std::string_view) const;

}  // namespace vsynth::graph
