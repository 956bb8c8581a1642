# Reference vectors in a policy file: observations and the actions the host computed for them, so
# that any runtime (a board, another port, another backend) can check that it computes the same
# actions: microrl.load(path, check=True). Imported only for that, or to write them: a board that
# only runs policies never loads this module.
#
# The section (float and int16 files alike, flag 16, after the network; docs/policy-format.md):
#   u32 count N (1 to 65535)   f32 tolerance   then N times: n_in f32 observation, n_out f32 action
# An action a computed here agrees with the stored r when |a - r| <= tolerance * max(1, |r|).
import struct
from array import array

from .compat import zeros
from .fileformat import CorruptPolicyError, PolicyFileError

class MissingReferencesError(PolicyFileError):
    """load(path, check=True) on a file without reference vectors: there is nothing to check."""


class ReferenceMismatchError(PolicyFileError):
    """The actions computed here differ from the file's reference actions by more than its
    tolerance (load(path, check=True))."""


TOLERANCE = 1e-4  # float32 arithmetic in another order, on another runtime: about 1e-6 here
MAX_COUNT = 65535


class References:
    """Reference observations (raw, as the policy receives them) and the actions computed for
    them, with the tolerance a runtime's actions must keep to. observations: N rows of n_in
    numbers; actions: N rows of n_out."""

    def __init__(self, observations, actions, tolerance=TOLERANCE):
        n = len(observations)
        if n != len(actions) or not 1 <= n <= MAX_COUNT:
            from .refusals import count

            raise ValueError("references: %s and %s; give the same number, 1 to %d" % (count(n, "observation"), count(len(actions), "action"), MAX_COUNT))
        self.count = n
        self.obs_dim = len(observations[0])
        self.act_dim = len(actions[0])
        self.observations = _flat(observations, self.obs_dim, "observation")
        self.actions = _flat(actions, self.act_dim, "action")
        tolerance = float(tolerance)
        if not 0.0 < tolerance < 1e30:
            raise ValueError("references: the tolerance must be a finite number above 0, not %r" % tolerance)
        self.tolerance = tolerance

    def observation(self, k):
        return self.observations[k * self.obs_dim : (k + 1) * self.obs_dim]

    def action(self, k):
        return self.actions[k * self.act_dim : (k + 1) * self.act_dim]


def _flat(rows, width, what):
    out = zeros(len(rows) * width)
    k = 0
    for row in rows:
        if len(row) != width:
            raise ValueError("references: a %s has %d values, another %d" % (what, len(row), width))
        for v in row:
            v = float(v)
            if v - v != 0.0:
                raise ValueError("references: a %s holds %r, not a finite number" % (what, v))
            out[k] = v
            k += 1
    return out


def section(refs, sizes):
    """The bytes of the reference section for a policy of these layer sizes."""
    n_in, n_out = sizes[0], sizes[-1]
    if refs.obs_dim != n_in or refs.act_dim != n_out:
        from .refusals import count

        raise ValueError("references have %s and %s, the policy %d and %d" % (count(refs.obs_dim, "observation"), count(refs.act_dim, "action"), n_in, n_out))
    parts = [struct.pack("<If", refs.count, refs.tolerance)]
    for k in range(refs.count):
        parts.append(_le(refs.observation(k)))
        parts.append(_le(refs.action(k)))
    return b"".join(parts)


def _le(block):
    import sys

    block = array("f", block)
    if sys.byteorder == "big":  # pragma: no cover - every supported board is little-endian
        block.byteswap()
    return bytes(block)


def _read_into(f, block, where):
    import sys

    if f.readinto(memoryview(block)) != 4 * len(block):
        raise CorruptPolicyError("%s: the file ended inside its reference section" % where)
    if sys.byteorder == "big":  # pragma: no cover
        block.byteswap()


def _section(policy, f):
    """Where the reference section starts in the open file f of a loaded policy: it ends the file,
    before the CRC."""
    f.seek(0, 2)
    return f.tell() - 4 - 8 - 4 * policy.reference_count * (policy.sizes[0] + policy.sizes[-1])


def compare(policy, f, where, tolerance=None):
    """Run policy on the reference observations in the open file f (the one policy was loaded
    from) and compare. Returns (largest difference, tolerance, count, detail):
    detail is None, or (k, i, action here, stored action) of the largest difference. The
    difference of an action a from the stored r is |a - r| / max(1, |r|); a NaN one is inf."""
    if not policy.reference_count:
        raise MissingReferencesError("%s has no reference vectors to check against (written by an older microrl, "
                                     "on a board, or with --references 0): re-export or re-import it with references" % where)
    n_in, n_out = policy.sizes[0], policy.sizes[-1]
    f.seek(_section(policy, f))
    count, stored = struct.unpack("<If", f.read(8))
    if not 0.0 < stored < 1e30:
        raise CorruptPolicyError("%s: its reference tolerance is %r, not a finite number above 0" % (where, stored))
    if tolerance is None:
        tolerance = stored
    obs, ref, out = zeros(n_in), zeros(n_out), zeros(n_out)
    worst = 0.0
    detail = None
    for k in range(count):
        _read_into(f, obs, where)
        _read_into(f, ref, where)
        _finite(obs, "observation", k, count, where)
        _finite(ref, "action", k, count, where)
        try:
            policy(obs, out)
        except ValueError as e:  # an observation the policy refuses (too far out for its network)
            raise CorruptPolicyError("%s: its reference section's observation %d of %d is refused by the policy: %s" % (where, k + 1, count, e)) from None
        for i in range(n_out):
            r = ref[i]
            d = abs(out[i] - r) / max(1.0, abs(r))
            if d != d:
                d = float("inf")
            if d > worst:
                worst = d
                detail = (k, i, out[i], r)
    return worst, tolerance, count, detail


def _finite(block, what, k, count, where):
    """CorruptPolicyError naming the reference section when a stored value is NaN or infinite (a
    file whose CRC holds: written so, not damaged since)."""
    for i in range(len(block)):
        v = block[i]
        if v - v != 0.0:
            raise CorruptPolicyError("%s: its reference section's %s %d of %d holds %r at [%d], not a finite number" % (where, what, k + 1, count, v, i))


def check(policy, f, where, tolerance=None):
    """compare(), then ReferenceMismatchError when the largest difference is above the tolerance;
    sets policy.reference_difference (and reference_tolerance) and returns the difference."""
    worst, tolerance, count, detail = compare(policy, f, where, tolerance)
    policy.reference_difference = worst
    policy.reference_tolerance = tolerance
    if not worst <= tolerance:
        k, i, here, r = detail
        raise ReferenceMismatchError(
            "%s: on this runtime (%s) the policy's actions differ from the reference actions stored in the file by up to %.3g "
            "(reference %d of %d, action[%d]: %r here, %r stored), more than the tolerance %.3g: this runtime or this microrl computes "
            "something else than the host that wrote the file (a damaged install, a wrong native module), or the file was changed "
            "after its references were made" % (where, _runtime(policy), worst, k + 1, count, i, here, r, tolerance))
    return worst


def _runtime(policy):
    if hasattr(policy, "fx"):  # a fixedpoint.QuantisedPolicy
        return "the int16 kernel"
    from . import backend_name

    return "the %s backend" % backend_name()


def compare_file(policy, path, tolerance=None):
    """compare() on the file at path (the one policy was loaded from), without raising for a
    mismatch: (largest difference, tolerance, count, detail). deploy uses it on the board."""
    with open(path, "rb") as f:
        return compare(policy, f, path, tolerance)


def read(policy, path):
    """The References of the file at path that policy was loaded from (float or int16), or None
    if it has none (host tools)."""
    if not policy.reference_count:
        return None
    n_in, n_out = policy.sizes[0], policy.sizes[-1]
    with open(path, "rb") as f:
        f.seek(_section(policy, f))
        count, tolerance = struct.unpack("<If", f.read(8))
        if not 0.0 < tolerance < 1e30:
            raise CorruptPolicyError("%s: its reference tolerance is %r, not a finite number above 0" % (path, tolerance))
        observations, actions = [], []
        for k in range(count):
            obs, act = zeros(n_in), zeros(n_out)
            _read_into(f, obs, path)
            _read_into(f, act, path)
            _finite(obs, "observation", k, count, path)
            _finite(act, "action", k, count, path)
            observations.append(obs)
            actions.append(act)
    return References(observations, actions, tolerance)
