"""pytest runs the device test modules on CPython too: their files go to pytest's tmp_path."""
import pytest


@pytest.fixture(autouse=True)
def _device_tests_write_in_tmp_path(tmp_path, monkeypatch):
    monkeypatch.setenv("MICRORL_TEST_TMP", str(tmp_path))
