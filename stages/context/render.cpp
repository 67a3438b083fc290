#include "stages/context/render.h"

#include <algorithm>

#include "stages/context/lang_style.h"

namespace vsynth::stages::context {

namespace {

struct CostSink {
  const Renderer& r;
  uint64_t total = 0;
  bool first_file = true;
  void header(uint32_t file) { total += r.header_cost(file); }
  void unit(uint32_t index, Form form) { total += r.form_cost(index, form); }
  void close(uint32_t index) { total += r.close_cost(index); }
  void marker(uint32_t file, std::string_view, uint32_t) { total += r.marker_cost(file); }
  void blank() { total += 1; }
};

struct TextSink {
  const ContextUnitsFacet& c;
  Renderer::Text out;
  bool first_file = true;
  void header(uint32_t file) {
    if (!first_file) out.text += '\n';
    first_file = false;
    out.text += file_header(style_for(c.files[file].language), c.files[file].path);
  }
  void unit(uint32_t index, Form form) {
    const Unit& u = c.units[index];
    if (static_cast<int32_t>(index) == c.focus && form == Form::Full && u.file == 0 &&
        c.cursor_byte >= u.row_byte && c.cursor_byte - u.row_byte <= u.full.size()) {
      out.cursor_offset = static_cast<int64_t>(out.text.size() + (c.cursor_byte - u.row_byte));
    }
    out.text += u.text(form);
  }
  void close(uint32_t index) { out.text += c.units[index].close; }
  void marker(uint32_t file, std::string_view indent, uint32_t rows) {
    out.text += elision_marker(style_for(c.files[file].language), indent, rows);
    ++out.markers;
  }
  void blank() { out.text += '\n'; }
};

}  // namespace

Renderer::Renderer(const ContextUnitsFacet& candidates, const TokenCounter& counter)
    : c_(candidates), counter_(counter) {
  const std::size_t n = c_.units.size();
  children_.resize(n);
  roots_.resize(c_.files.size());
  for (std::size_t i = 0; i < n; ++i) {
    const Unit& u = c_.units[i];
    if (u.parent >= 0) {
      children_[static_cast<std::size_t>(u.parent)].push_back(static_cast<uint32_t>(i));
    } else if (u.file < roots_.size()) {
      roots_[u.file].push_back(static_cast<uint32_t>(i));
    }
  }
  auto by_row = [&](uint32_t a, uint32_t b) {
    return c_.units[a].first_row < c_.units[b].first_row;
  };
  for (auto& list : children_) std::sort(list.begin(), list.end(), by_row);
  for (auto& list : roots_) std::sort(list.begin(), list.end(), by_row);
  form_cost_.assign(n * kForms, -1);
  close_cost_.assign(n, -1);
  header_cost_.assign(c_.files.size(), -1);
  marker_cost_.assign(c_.files.size(), -1);
  blank_cost_ = counter_.count("\n");
}

Form Renderer::smallest_form(const Unit& unit) {
  if (unit.has(Form::Name)) return Form::Name;
  if (unit.has(Form::Signature)) return Form::Signature;
  return Form::Full;
}

Selection Renderer::with_containers(const Selection& selection) const {
  Selection shown = selection;
  for (std::size_t i = 0; i < shown.size(); ++i) {
    if (shown[i] == kNotShown) continue;
    for (int32_t p = c_.units[i].parent; p >= 0; p = c_.units[static_cast<std::size_t>(p)].parent) {
      int8_t& s = shown[static_cast<std::size_t>(p)];
      if (s != kNotShown) break;  // its own containers were (or will be) added with it
      s = static_cast<int8_t>(smallest_form(c_.units[static_cast<std::size_t>(p)]));
    }
  }
  // A container added above may sit before its parent in index order only if the parent
  // was shown already, so one pass suffices.
  return shown;
}

uint32_t Renderer::form_cost(uint32_t unit, Form form) const {
  int64_t& slot = form_cost_[unit * kForms + static_cast<std::size_t>(form)];
  if (slot < 0) slot = counter_.count(c_.units[unit].text(form));
  return static_cast<uint32_t>(slot);
}

uint32_t Renderer::close_cost(uint32_t unit) const {
  int64_t& slot = close_cost_[unit];
  if (slot < 0) slot = counter_.count(c_.units[unit].close);
  return static_cast<uint32_t>(slot);
}

uint32_t Renderer::header_cost(uint32_t file) const {
  int64_t& slot = header_cost_[file];
  if (slot < 0) {
    // Every header but the first follows a blank line; count it always (at most one token
    // more than the text).
    slot = counter_.count(file_header(style_for(c_.files[file].language), c_.files[file].path)) +
           blank_cost_;
  }
  return static_cast<uint32_t>(slot);
}

uint32_t Renderer::marker_cost(uint32_t file) const {
  int64_t& slot = marker_cost_[file];
  if (slot < 0) {
    // The widest marker a file of this size can get, at a deep indentation.
    slot = counter_.count(elision_marker(style_for(c_.files[file].language), "            ",
                                         std::max<uint32_t>(c_.files[file].rows, 10)));
  }
  return static_cast<uint32_t>(slot);
}

template <class Sink>
void Renderer::children(const std::vector<uint32_t>& list, const Selection& shown,
                        int64_t first_row, int64_t last_row, std::string_view outer_indent,
                        Sink& sink) const {
  int64_t next = first_row;
  int64_t prev_pos = -1;  // position in `list` of the last unit shown
  bool any = false;
  std::string_view indent = outer_indent;
  uint32_t file = 0;
  for (std::size_t pos = 0; pos < list.size(); ++pos) {
    const uint32_t idx = list[pos];
    if (shown[idx] == kNotShown) continue;
    const Unit& u = c_.units[idx];
    file = u.file;
    if (static_cast<int64_t>(u.first_row) > next) {
      const auto gap = static_cast<uint32_t>(u.first_row - next);
      const bool adjacent = any ? prev_pos + 1 == static_cast<int64_t>(pos) : pos == 0;
      if (adjacent && u.blank_before != UINT32_MAX && gap <= u.blank_before) {
        sink.blank();
      } else {
        sink.marker(u.file, u.indent, gap);
      }
    }
    sink.unit(idx, static_cast<Form>(shown[idx]));
    if (u.container) {
      const std::vector<uint32_t>& members = children_[idx];
      const std::string_view member_indent =
          members.empty() ? u.indent : c_.units[members.front()].indent;
      const int64_t inner_last =
          u.close.empty() ? u.end_row : static_cast<int64_t>(u.close_first) - 1;
      children(members, shown, u.last_row + 1, inner_last, member_indent, sink);
      if (!u.close.empty()) sink.close(idx);
    }
    next = static_cast<int64_t>(u.end_row) + 1;
    prev_pos = static_cast<int64_t>(pos);
    indent = u.indent;
    any = true;
  }
  if (next <= last_row) {
    if (!any && !list.empty()) file = c_.units[list.front()].file;
    sink.marker(file, indent, static_cast<uint32_t>(last_row - next + 1));
  }
}

template <class Sink>
void Renderer::traverse(const Selection& shown, Sink& sink) const {
  std::vector<bool> used(c_.files.size(), false);
  for (std::size_t i = 0; i < shown.size(); ++i) {
    if (shown[i] != kNotShown) used[c_.units[i].file] = true;
  }
  auto section = [&](uint32_t f) {
    if (!used[f]) return;
    sink.header(f);
    const int64_t rows = c_.files[f].rows;
    children(roots_[f], shown, 0, rows - 1, "", sink);
  };
  for (uint32_t f = 1; f < c_.files.size(); ++f) section(f);
  if (!c_.files.empty()) section(0);
}

uint64_t Renderer::cost(const Selection& selection) const {
  const Selection shown = with_containers(selection);
  CostSink sink{*this};
  traverse(shown, sink);
  return sink.total;
}

Renderer::Text Renderer::render(const Selection& selection) const {
  const Selection shown = with_containers(selection);
  TextSink sink{c_, {}};
  traverse(shown, sink);
  return std::move(sink.out);
}

}  // namespace vsynth::stages::context
