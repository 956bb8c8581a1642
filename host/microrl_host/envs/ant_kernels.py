"""Ant's observation, reward and termination for a batch of copies, compiled with numba: one call
per step instead of some forty numpy calls, which at one copy cost more than a sixth of the
physics. Bit-identical to gymnasium's Ant-v4 and Ant-v5: the same floating-point operations in
the same order, numpy's pairwise summation included (pairwise_sum below), and numpy's type
promotion (a float32 control cost stays float32 until it meets the float64 reward).

envs/mujoco.py's _Formulas uses these for the "ant" family with fewer than COMPILED_BELOW copies
(more copies take numpy's operations, which cost nothing against their physics, and leave numba's
memory out of the process); the parameters come from gymnasium's own environment object, so its
keyword arguments are honoured.
"""
import numpy as np

from ..nn.jit import jit


@jit
def pairwise_sum(a):
    """np.add.reduce of a 1-d array, in numpy's order (its pairwise_sum): up to 128 values in
    one block (_block); more are cut in two halves at a multiple of 8, summed the same way and
    added. numpy recurses; this walks the same tree with a small stack (numba's cache cannot
    hold a recursive function)."""
    n = a.shape[0]
    if n <= 128:
        return _block(a, 0, n)
    los = np.empty(64, np.int64)
    ns = np.empty(64, np.int64)
    left = np.empty(64, a.dtype)
    stage = np.zeros(64, np.int64)  # 0: left half to do, 1: right half to do, 2: waiting for it
    top = 0
    los[0], ns[0] = 0, n
    result = value = a[0]  # value: the sum just delivered to the parent
    while top >= 0:
        if ns[top] <= 128 or stage[top] == 2:
            if ns[top] <= 128:
                value = _block(a, los[top], ns[top])
            else:
                value = left[top] + value  # left half + the right half's sum, just delivered
            top -= 1
            # deliver value to the parent (or finish)
            if top < 0:
                result = value
            elif stage[top] == 0:
                left[top] = value
                stage[top] = 1
            else:
                stage[top] = 2
                # the parent adds value next time round, with value still set
            continue
        half = ns[top] // 2
        half -= half % 8
        if stage[top] == 0:
            lo, count = los[top], half
        else:
            lo, count = los[top] + half, ns[top] - half
        top += 1
        los[top], ns[top], stage[top] = lo, count, 0
    return result


@jit
def _block(a, lo, n):
    # fewer than 8 values: one after the other; else 8 partial sums over blocks of 8, combined
    # as a tree, then the rest. numpy starts from 0.0, which changes only a sum of -0.0s.
    if n < 8:
        res = a[lo]
        for i in range(lo + 1, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3, r4, r5, r6, r7 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3], a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = lo + 8
    end = lo + n - n % 8
    while i < end:
        r0 += a[i]
        r1 += a[i + 1]
        r2 += a[i + 2]
        r3 += a[i + 3]
        r4 += a[i + 4]
        r5 += a[i + 5]
        r6 += a[i + 6]
        r7 += a[i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < lo + n:
        res += a[i]
        i += 1
    return res


@jit
def clip(x, lo, hi):
    # np.minimum(np.maximum(x, lo), hi): NaN passes through
    if x < lo:
        x = lo
    if x > hi:
        x = hi
    return x


@jit
def observe(qposvel, cfrc_ext, out, start, clip_forces, forces_from, cf_lo, cf_hi, cf_clipped):
    """out[i] = qposvel[i, start:], then (forces_from >= 0) the contact forces of bodies
    forces_from.. clipped to [cf_lo, cf_hi] (Ant-v4's use_contact_forces: every body; Ant-v5: all
    but the world). clip_forces: also write every body's clipped forces into cf_clipped[i] (the
    contact cost's)."""
    n, m = qposvel.shape
    for i in range(n):
        k = 0
        for j in range(start, m):
            out[i, k] = qposvel[i, j]
            k += 1
        if clip_forces:
            for b in range(cfrc_ext.shape[1]):
                for c in range(6):
                    v = clip(cfrc_ext[i, b, c], cf_lo, cf_hi)
                    cf_clipped[i, b * 6 + c] = v
                    if forces_from >= 0 and b >= forces_from:
                        out[i, k] = v
                        k += 1


@jit
def reward_done(qposvel, xpos, cf_clipped, actions, ctrl_w, before, after, params, flags, rewards, terminated):
    """Rewards and terminations of the copies after a step; after[i] = the main body's x, y.
    ctrl_w: the control cost weight as a 1-element array of the actions' type (numpy casts the
    Python float so: a float32 control cost); params: dt, forward weight, healthy reward,
    contact cost weight, healthy z low and high; flags: main body index, version,
    terminate_when_unhealthy, contact cost on."""
    dt, fw, hr, cw, zlo, zhi = params[0], params[1], params[2], params[3], params[4], params[5]
    body, version, terminate, contact_on = flags[0], flags[1], flags[2] != 0, flags[3] != 0
    n = qposvel.shape[0]
    squares = np.empty(actions.shape[1], actions.dtype)
    contact = np.empty(cf_clipped.shape[1], np.float64)
    for i in range(n):
        after[i, 0] = xpos[i, body, 0]
        after[i, 1] = xpos[i, body, 1]
        x_velocity = (after[i, 0] - before[i, 0]) / dt
        for j in range(actions.shape[1]):
            squares[j] = actions[i, j] * actions[i, j]
        ctrl_cost = ctrl_w[0] * pairwise_sum(squares)
        finite = True
        for j in range(qposvel.shape[1]):
            if not np.isfinite(qposvel[i, j]):
                finite = False
        z = qposvel[i, 2]
        healthy = finite and zlo <= z and z <= zhi
        forward = fw * x_velocity
        if version >= 5 or not terminate:
            reward = forward + (1.0 if healthy else 0.0) * hr
        else:  # v4, terminating: (healthy or terminate) * reward is the reward
            reward = forward + hr
        if contact_on:
            for j in range(cf_clipped.shape[1]):
                contact[j] = cf_clipped[i, j] * cf_clipped[i, j]
            costs = np.float64(ctrl_cost) + cw * pairwise_sum(contact)
        else:
            costs = np.float64(ctrl_cost)
        rewards[i] = reward - costs
        terminated[i] = terminate and not healthy
