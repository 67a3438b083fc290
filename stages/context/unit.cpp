#include "stages/context/unit.h"

namespace vsynth::stages::context {

const char* to_string(UnitKind kind) {
  switch (kind) {
    case UnitKind::Function:
      return "function";
    case UnitKind::Method:
      return "method";
    case UnitKind::Constructor:
      return "constructor";
    case UnitKind::Class:
      return "class";
    case UnitKind::Namespace:
      return "namespace";
    case UnitKind::Field:
      return "field";
    case UnitKind::Import:
      return "import";
    case UnitKind::Global:
      return "global";
    case UnitKind::Statement:
      return "statement";
  }
  return "unit";
}

const char* to_string(Form form) {
  switch (form) {
    case Form::Name:
      return "name";
    case Form::Signature:
      return "signature";
    case Form::Full:
      return "full";
  }
  return "form";
}

}  // namespace vsynth::stages::context
