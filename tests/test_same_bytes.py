"""Pendulum and quadrotor training write the same policy bytes as before the task interface
(issue 31): one compiled loop for every task (algos/loop.py, bound to a task) replaced the
loops written per task, and the quadrotor's training settings became its TRAINING data.

The expected SHA-256 digests below were recorded from main's code before that change (commit
ea4b84b, `microrl train TASK --algo ALGO --steps N --seed S --threads T --out FILE`, on an AMD
EPYC host), not computed by the code under test. A run's bits depend on the CPU's BLAS and
SIMD kernels (docs/training.md, Reproducibility), so both are pinned here: OpenBLAS's
Sandybridge kernels and numba's generic x86-64 code, which every x86-64 machine with AVX runs
alike. The quadrotor SAC run keeps the actor of its best evaluation (step 10,000, not the last),
which since issue 40 takes --keep-best (the final actor is the default): the best-actor keeping
is held too. The digests are of the policy without the reference vectors
that training writes into the file since (checked too, with microrl.load(path, check=True)).

The quadrotor trains with sim-to-real perturbations by default since issue 33 (observation
noise, disturbances, +-10% airframe: its PERTURBATIONS): its runs with --nominal must still
write main's bytes above (perturbations off are the run as it was, bit for bit); the digest of
the default, perturbed run was recorded when they were turned on (commit "quadrotor: trains
perturbed by default", same pinned kernels), from this code, and holds it from then on.

Since issue 41 the quadrotor observes the integral of its position error (25 inputs, not 22: a
different task, so different bytes): its three digests were regenerated then, deliberately, from
that code with the same pinned kernels (the pendulum's are main's as before)."""
import hashlib
import json

import pytest

from helpers import run_cpython

PINNED = {"OPENBLAS_CORETYPE": "Sandybridge", "NUMBA_CPU_NAME": "generic"}
# (task, algo, steps, seed, threads, extra options, SHA-256 of the policy file main wrote, policy_step)
RUNS = [
    ("pendulum", "td3", 3000, 0, 1, (), "3a1f1266a4d3e9e20ab6a753d303f5e137dd399c88ef20d197a5be3a33629730", None),
    ("pendulum", "td3", 3000, 0, 2, (), "3a1f1266a4d3e9e20ab6a753d303f5e137dd399c88ef20d197a5be3a33629730", None),
    ("pendulum", "sac", 3000, 1, 2, (), "01c00ff05a72f5e9bc5a931952f0d2889569edf93ee195d920e9033bb2fb7df7", None),
    ("quadrotor", "td3", 20000, 0, 2, ("--nominal",), "a5dc4dbc426b61f77449f1f4ea4a232b8b206879a3e233f36e86387ccb419b1b", 20000),
    ("quadrotor", "sac", 20000, 0, 1, ("--nominal", "--keep-best"), "c4a42be0e9b347ccc0202eec8ec4798ba70a89d32ad4ecd0303749c35e61051e", 10000),
    # the default since issue 33: perturbed (recorded then, not main's)
    ("quadrotor", "td3", 20000, 0, 2, (), "84d8214db2573ac4dc4b16fcacc0c23304e745325354e495496295aea034c334", 20000),
]


@pytest.mark.parametrize("task,algo,steps,seed,threads,extra,digest,policy_step", RUNS, ids=["-".join(map(str, r[:5] + r[5])) for r in RUNS])
def test_training_writes_mains_policy_bytes(tmp_path, task, algo, steps, seed, threads, extra, digest, policy_step):
    out = tmp_path / "policy.mrlp"
    proc = run_cpython(["-m", "microrl_host.cli", "train", task, "--algo", algo, "--steps", str(steps), "--seed", str(seed), "--threads", str(threads),
                        "--out", str(out), "--json", *extra], timeout=1800, **PINNED)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    # the file also carries reference vectors now (docs/policy-format.md, version 2); the policy
    # without them, as microrl.load reads it and to_bytes writes it, is main's file byte for byte
    import microrl
    from microrl import policy as P

    policy = microrl.load(str(out), check=True)
    assert policy.reference_count == 8
    assert hashlib.sha256(P.to_bytes(policy)).hexdigest() == digest
    assert result.get("policy_step") == policy_step
