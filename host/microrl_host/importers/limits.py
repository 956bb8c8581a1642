"""How big a source microrl import reads, checked before it is read (docs/import.md, "Limits"):
a zip bomb (a small file whose members inflate to gigabytes, headers that lie about it
included), a tensor that claims more values than it holds (a stride-0 view of one number), and
networks the policy file cannot hold are refused in one line instead of filling the memory."""
import zipfile

from microrl.filewrite import MAX_LAYERS, MAX_WIDTH  # noqa: F401  (the format's: 255 layers, 65,535 units)
from microrl.refusals import count

from .errors import ImportRefused

MAX_BYTES = 256 << 20  # a source, or all members of its zip archives together, inflated: 256 MiB
MAX_DATA_BYTES = 16 << 20  # SB3's 'data' (JSON, a few kB to a few hundred): 16 MiB
MAX_VALUES = 1 << 24  # values in one tensor, and parameters in the imported network: 16,777,216 (64 MiB of float32)
CHUNK = 1 << 20


def _mib(n):
    return "%d MiB" % (n >> 20)


def check_size(path, what="the source"):
    """ImportRefused when the file at path is larger than MAX_BYTES."""
    import os

    size = os.path.getsize(path)
    if size > MAX_BYTES:
        raise ImportRefused("%s: %s is %s bytes, more than microrl import reads (%s)" % (path, what, format(size, ","), _mib(MAX_BYTES)))


def check_archive(path):
    """Read every member of the zip at path (and of the zips inside it: a torch .pth in an SB3
    .zip) as a stream, without keeping it: ImportRefused when a member fails its CRC, when its
    header declares more than the limit, or when it inflates past the limit whatever its header
    says. Afterwards the libraries may read the archive: what they will inflate is bounded."""
    try:
        with zipfile.ZipFile(path) as z:
            _check(z, path, [0])
    except ImportRefused:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, NotImplementedError, ValueError, RuntimeError) as e:
        from .errors import brief

        raise ImportRefused("%s: a damaged zip archive (%s): an SB3 .zip or a PyTorch .pt file cut short or changed since it was saved; "
                            "save or copy it again" % (path, brief(e))) from None


def _check(z, where, total):
    infos = z.infolist()
    declared = sum(i.file_size for i in infos)
    if declared + total[0] > MAX_BYTES:
        raise ImportRefused("%s: its members declare %s bytes unpacked, more than microrl import reads (%s): a zip bomb, or not a policy"
                            % (where, format(declared, ","), _mib(MAX_BYTES)))
    for info in infos:
        with z.open(info) as f:
            while True:
                try:
                    chunk = f.read(CHUNK)
                except zipfile.BadZipFile as e:
                    if "CRC" not in str(e):
                        raise
                    raise ImportRefused("%s: a damaged zip archive (its member %r fails its CRC check): changed since it was saved; save or copy it again"
                                        % (where, info.filename)) from None
                if not chunk:
                    break
                total[0] += len(chunk)
                if total[0] > MAX_BYTES:
                    raise ImportRefused("%s: its member %r inflates past %s, more than its header says (%s bytes): a zip bomb"
                                        % (where, info.filename, _mib(MAX_BYTES), format(info.file_size, ",")))
        if info.filename.endswith((".pth", ".pt")) and info.file_size >= 4:
            with z.open(info) as f:
                nested = f.read(4) == b"PK\x03\x04"
            if nested:  # a torch archive inside (SB3's policy.pth): its own members count too
                with z.open(info) as f, zipfile.ZipFile(f) as inner:
                    _check(inner, "%s's %s" % (where, info.filename), total)


def read_member(z, name, limit, where):
    """The bytes of the zip member `name`, at most `limit` of them (ImportRefused past it)."""
    info = z.getinfo(name)
    if info.file_size > limit:
        raise ImportRefused("%s: its %r declares %s bytes, more than microrl import reads (%s)" % (where, name, format(info.file_size, ","), _mib(limit)))
    with z.open(info) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ImportRefused("%s: its %r inflates past %s: a zip bomb" % (where, name, _mib(limit)))
    return data


def check_values(n, what):
    """ImportRefused when a tensor or network of n values is more than MAX_VALUES."""
    if n > MAX_VALUES:
        raise ImportRefused("%s has %s values, more than microrl imports (%s; a policy file for a board holds thousands)"
                            % (what, format(n, ","), format(MAX_VALUES, ",")))


def check_shape(widths, what="the network"):
    """ImportRefused unless a policy file can hold layers of these widths (input first)."""
    if any(w < 1 for w in widths):
        raise ImportRefused("%s has a layer of zero width (%s): not a network that computes anything" % (what, "-".join(str(w) for w in widths)))
    if len(widths) - 1 > MAX_LAYERS:
        raise ImportRefused("%s has %s; a policy file holds at most %d" % (what, count(len(widths) - 1, "layer"), MAX_LAYERS))
    if max(widths) > MAX_WIDTH:
        raise ImportRefused("%s has a layer %s units wide; a policy file's layers are at most %s wide" % (what, format(max(widths), ","), format(MAX_WIDTH, ",")))


def check_source(path, what="the source"):
    """The checks before a source is read: a zip archive's members (check_archive), else the
    file's size."""
    if zipfile.is_zipfile(path):
        check_archive(path)
    else:
        check_size(path, what)


def check_tensor(t, what):
    """ImportRefused for a torch tensor that is not real floating point, or claims more than
    MAX_VALUES values (a stride-0 view of one number may claim billions): before its values are
    read."""
    if not (t.dtype.is_floating_point and not t.dtype.is_complex):
        raise ImportRefused("%s is a tensor of %s, not of real floating-point weights" % (what, str(t.dtype).replace("torch.", "")))
    check_values(t.numel(), what)
