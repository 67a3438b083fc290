"""Fixtures of the vsynth Python tests (run by ctest's test_python, tests/python/run_pytest.sh).

The module comes from the build folder (PYTHONPATH), the CLI from VSYNTH_BIN; engine tests use
the synthetic golden models in .cache/golden-models (scripts/golden/setup-models.sh).
"""
import os
import pathlib
import subprocess

import pytest

import vsynth

ROOT = pathlib.Path(os.environ.get("VSYNTH_SOURCE_DIR", pathlib.Path(__file__).parents[2]))
GOLDEN = ROOT / ".cache" / "golden-models"


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture(scope="session")
def vsynth_bin():
    path = os.environ.get("VSYNTH_BIN")
    if not path:
        pytest.fail("VSYNTH_BIN is not set (ctest's test_python sets it)")
    return path


@pytest.fixture(scope="session")
def golden_path():
    path = GOLDEN / "model_llama_synth.gguf"
    if not path.exists():
        pytest.fail(f"{path} is missing: run scripts/golden/setup-models.sh")
    return str(path)


@pytest.fixture(scope="session")
def model(golden_path):
    return vsynth.Model(golden_path, device="cpu", threads=1)


@pytest.fixture(scope="session")
def default_model():
    """The default model (models/, scripts/setup-model.sh): a real vocabulary, for the tokenizer."""
    path = os.environ.get("VSYNTH_MODEL") or str(ROOT / "models" / "gemma-3-270m-q4_k_m.gguf")
    if not os.path.exists(path):
        if os.environ.get("VSYNTH_ALLOW_MISSING_MODEL") == "1":
            pytest.skip(f"{path} is missing (VSYNTH_ALLOW_MISSING_MODEL=1)")
        pytest.fail(f"{path} is missing: run scripts/setup-model.sh")
    return vsynth.Model(path, device="cpu", threads=1)


@pytest.fixture
def hook_dir(tmp_path):
    """A folder for Python hook modules a pipeline names (hook.python's `path`)."""
    d = tmp_path / "hooks"
    d.mkdir()
    return d


def run_cli(vsynth_bin, *args, check=True):
    proc = subprocess.run([vsynth_bin, *args], capture_output=True, text=True, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"vsynth {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}")
    return proc
