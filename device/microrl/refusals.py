# The messages of refused inputs that need more than a line of code to write, kept out of the
# modules an inference-only board loads (fileformat.py imports this only when it refuses something).
_KINDS = {0o040000: "a directory", 0o010000: "a named pipe", 0o020000: "a character device", 0o060000: "a block device", 0o140000: "a socket"}


# A file's header and sizes refused (fileformat.refuse): one entry per reason, formatted with the
# file's name first.
HEADER = {
    "empty": "%s: empty file, not a whole policy",
    "magic": "%s: not a microrl %s file (its first bytes are %r, expected %r)",
    "short": "%s: truncated: %d bytes, shorter than the %d-byte header",
    "version": "%s: %s format version %d; this microrl reads versions 1 to %d (update microrl or re-export the policy)",
    "truncated": "%s: truncated: %d bytes of %d",
    "long": "%s: %d bytes where the header says %d (extra data after the policy)",
    "flags": "%s: flags %d, which a version %d file does not have",
    "header": "%s: inconsistent header (%d layers, %d header bytes, flags %d)",
    "layers": "%s: invalid layer sizes %r or activation codes %r",
    "sizes": "%s: header sizes do not add up to the file length",
    "references": "%s: the reference section does not add up to the file length",
    "pending": "%s: %d pending actions in the header, which a policy of %d inputs and %d outputs cannot take (1 to 32 steps, beside its observation)",
}


def not_a_file(path, mode):
    """The message for a path that is no regular file (its os.stat mode)."""
    return "%s: not a regular file (it is %s)" % (path, _KINDS.get(mode & 0o170000, "not a file"))


def not_zero(path):
    """The message for bytes the format says are zero that are not (fileformat.check_zero_bytes)."""
    return ("%s: the reserved header bytes 14-15 and the header's padding must be zero: not a file this microrl wrote (a newer "
            "format, or damaged before its checksum was made)" % path)


def _first_non_finite(values):
    for i in range(len(values)):
        v = values[i]
        if v - v != 0.0:
            return i
    return -1


def non_finite_observation(obs, i):
    """The ValueError for a policy input that is NaN, infinite, or beyond float32 once normalised."""
    v = obs[i]
    try:
        finite = float(v) - float(v) == 0.0
    except OverflowError:  # an int too large for a float
        finite = True
    except (TypeError, ValueError):
        finite = False
    if finite:
        return ValueError("observation[%d] = %r is beyond float32's range after the policy's normalisation" % (i, v))
    return ValueError("observation[%d] is %r: a policy takes finite numbers only (no NaN or infinity)" % (i, v))


def overflowing_observation(obs, layer, layers):
    """The ValueError for a finite observation whose forward pass leaves float32's range in layer
    `layer` (0-based; layers: the network's, layers itself: the scaled actions)."""
    i = 0
    for k in range(len(obs)):
        if abs(float(obs[k])) > abs(float(obs[i])):
            i = k
    where = "the action scaling" if layer >= layers else "layer %d of %d" % (layer + 1, layers)
    return ValueError("observation[%d] = %r is too far out for this policy: %s overflows float32 (infinite or NaN values)" % (i, obs[i], where))


def param_name(sizes, i):
    """'layer 2 weight [3, 1]' (W is [out, in]) or 'layer 2 bias [3]' for index i of the
    parameters in the network layout."""
    from .layout import layout

    offsets, _ = layout(sizes)
    for l in range(len(offsets) - 1, -1, -1):
        wo, bo = offsets[l]
        if i >= bo:
            return "layer %d bias [%d]" % (l + 1, i - bo)
        if i >= wo:
            k = i - wo
            return "layer %d weight [%d, %d]" % (l + 1, k // sizes[l], k % sizes[l])
    return "parameter %d" % i


def invalid_values(policy, where):
    """The message naming the first bad number of a policy (see fileformat.check_values)."""
    for name in ("obs_mean", "obs_std", "act_scale", "act_offset", "in_low", "in_high", "act_low", "act_high"):
        block = getattr(policy, name, None)
        i = -1 if block is None else _first_non_finite(block)
        if i >= 0:
            return "%s: %s[%d] is %r, not a finite number" % (where, name, i, block[i])
    for what in ("in", "act"):
        low, high = getattr(policy, what + "_low", None), getattr(policy, what + "_high", None)
        for i in range(0 if low is None else len(low)):
            if low[i] > high[i]:
                return "%s: %s_low[%d] is %r, above %s_high[%d] (%r): a clipping range must not be empty" % (where, what, i, low[i], what, i, high[i])
    params = getattr(policy, "params", None)  # a QuantisedPolicy's integers are always finite
    i = -1 if params is None else _first_non_finite(params)
    if i >= 0:
        return "%s: %s is %r, not a finite number (the training that wrote it diverged)" % (where, param_name(policy.sizes, i), params[i])
    std = policy.obs_std
    for i in range(0 if std is None else len(std)):
        if not std[i] > 0.0:
            return "%s: obs_std[%d] is %r: a standard deviation must be positive (the normalisation divides by it)" % (where, i, std[i])
        if not std[i] >= 1.1754943508222875e-38:  # the smallest normal float32 (fileformat.check_values)
            return ("%s: obs_std[%d] is %r, below the smallest normal float32 (1.2e-38): dividing an observation by it overflows, "
                    "and the actions would be NaN" % (where, i, std[i]))
    return "%s: invalid values" % where


def out_of_memory(step, need):
    """A MemoryError naming the step that failed and the heap it needs against the heap free."""
    try:
        import gc

        gc.collect()
        free = gc.mem_free()
    except (ImportError, AttributeError):  # CPython cannot say
        return MemoryError("%s: out of memory (it needs about %d bytes)" % (step, need))
    return MemoryError("%s: out of memory: it needs about %d bytes of heap, %d are free%s" % (step, need, free, " but in pieces too small" if free >= need else ""))


def count(n, noun, plural=None):
    """'1 episode', '3 episodes', '0 episodes' (plural: for nouns that do not just take an s):
    every message with a count says it so, on the host and on the board."""
    return "%d %s" % (n, noun if n == 1 else plural or noun + "s")
