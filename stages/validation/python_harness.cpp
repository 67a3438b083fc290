#include "stages/validation/python_harness.h"

namespace vsynth::stages::validation {

const std::string_view kPythonReportHelpers = R"PY(def _report(obj):
    data = (_dumps(obj) + "\n").encode("utf-8", "replace")
    while data:
        try:
            n = _write(_REPORT_FD, data)
        except OSError:
            return
        data = data[n:]


def _short(text, limit=_LIMIT):
    text = str(text)
    return text if len(text) <= limit else text[:limit] + "..."


def _repr(value):
    try:
        return _short(repr(value))
    except BaseException as e:  # a __repr__ that raises
        return "<%s whose repr raised %s>" % (type(value).__name__, type(e).__name__)
)PY";

std::string harness_script(std::string_view head, std::string_view body) {
  std::string s(head);
  s += kPythonReportHelpers;
  s += "\n\n";
  s += body;
  return s;
}

}  // namespace vsynth::stages::validation
