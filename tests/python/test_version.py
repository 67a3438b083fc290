"""vsynth.__version__ is the project's one version: CMakeLists.txt's project(VERSION), the
version `vsynth --version` prints."""
import re
import subprocess

import vsynth


def test_version_is_the_projects(root, vsynth_bin):
    cmake = (root / "CMakeLists.txt").read_text()
    want = re.search(r"project\(vsynth VERSION ([0-9][0-9.]*)", cmake).group(1)
    assert vsynth.__version__ == want
    out = subprocess.run([vsynth_bin, "--version"], capture_output=True, text=True, check=True)
    assert want in out.stdout.split()
