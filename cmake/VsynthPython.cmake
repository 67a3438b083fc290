# Python: the `vsynth` module (python/) and the hook.python resource (stages/python), both on
# pybind11 (Debian pybind11-dev) and the Python development files (python3-dev).
#
# The interpreter is chosen once, here, and both pieces use it: Python_EXECUTABLE when given
# (scikit-build-core passes the one building the wheel), else Debian's /usr/bin/python3 when it
# exists (the one python3-dev's headers and libpython belong to, and the one
# scripts/setup-python-venv.sh makes the test venv from), else the first python3 on PATH. A
# python3 on PATH from pyenv or conda would otherwise be found first, and the module would be
# built for an interpreter the tests and the CLI do not use.
#
# VSYNTH_PYTHON: AUTO (default; build both when pybind11 and the development files are found),
# ON (fail when they are not) or OFF. Without them the build has no Python module and no
# hook.python kind (a pipeline naming it gets the usual unknown-kind error).
set(VSYNTH_PYTHON "AUTO" CACHE STRING "Python module + hook.python: AUTO, ON or OFF")
set_property(CACHE VSYNTH_PYTHON PROPERTY STRINGS AUTO ON OFF)
set(VSYNTH_HAVE_PYTHON OFF)
if(NOT VSYNTH_PYTHON STREQUAL "OFF")
  if(NOT Python_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(Python_EXECUTABLE /usr/bin/python3)
  endif()
  # Development.Embed: `vsynth run` starts an interpreter for hook.python; .Module: the module.
  find_package(Python 3.8 COMPONENTS Interpreter Development.Module Development.Embed GLOBAL)
  if(Python_FOUND)
    set(PYBIND11_FINDPYTHON ON)  # pybind11 takes the Python found above
    find_package(pybind11 2.10 CONFIG GLOBAL)
  endif()
  if(Python_FOUND AND pybind11_FOUND)
    set(VSYNTH_HAVE_PYTHON ON)
    message(STATUS "vsynth: Python ${Python_VERSION} (${Python_EXECUTABLE}), pybind11 "
                   "${pybind11_VERSION}: building the module and hook.python")
  elseif(VSYNTH_PYTHON STREQUAL "ON")
    message(FATAL_ERROR "VSYNTH_PYTHON=ON but pybind11 (pybind11-dev) or the Python development "
                        "files (python3-dev) were not found; scripts/setup.sh installs both")
  else()
    message(STATUS "vsynth: no pybind11 or Python development files: no Python module, no "
                   "hook.python (install pybind11-dev python3-dev)")
  endif()
endif()
