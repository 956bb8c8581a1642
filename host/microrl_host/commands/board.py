"""microrl board sim: a virtual MicroPython board on a pseudo-terminal."""
import os
import sys

from . import CommandError
from .options import FOLDER_HELP, check_output


def register(sub):
    p = sub.add_parser(
        "board",
        help="virtual board: the real MicroPython unix port behind a serial port",
        description="Tools for boards. 'microrl board sim' starts a virtual board: the MicroPython unix port behind a "
        "pseudo-terminal (/dev/pts/N) that mpremote, pyserial and every microrl --port command use as a real board.",
    )
    bsub = p.add_subparsers(dest="board_command", metavar="ACTION")
    s = bsub.add_parser(
        "sim",
        help="start a virtual board, print its port and run until Ctrl-C",
        description="Start a virtual MicroPython board and print its port; runs until Ctrl-C. FOLDER is the board's / "
        "and its whole filesystem, held so by the kernel against any code on the board, machine code included: "
        "bubblewrap's namespaces (uid 65534, no capabilities, no network, no other process in sight) or Landlock, "
        "each with a seccomp filter and limits (--confine; docs/virtual-board.md says what holds in each). "
        "Where neither works it does not start, unless you pass --unconfined. "
        "Ctrl-D, machine.reset() and crashes reboot it as a board reboots.",
    )
    s.add_argument("--folder", default="board-fs", help="the board's filesystem, its / (default ./board-fs): a new or empty "
                   "folder, or one a board has used (it holds .microrl-board); never a system folder" + FOLDER_HELP)
    s.add_argument("--heap", default=None, help="MicroPython heap, e.g. 160K, 256K, 2M (default: %s, a typical ESP32's free heap). The unix port is 64-bit: "
                   "its objects take about twice a 32-bit board's bytes, so for training a 32-bit board with F free is about "
                   "--heap F+16K (docs/on-board-training.md)" % _default_heap())
    s.add_argument("--flash", default=None, help="make the filesystem a littlefs image of this size (e.g. 1M) in FOLDER/flash.img, "
                   "mounted at /flash, which fills up as a board's flash does and is all the board can write "
                   "(default: FOLDER itself, no bound on its total size)")
    add_confinement_options(s)
    s.set_defaults(func=run_sim)
    p.set_defaults(func=lambda args: (p.print_help(), 0)[1])


def add_confinement_options(parser):
    """--confine and --unconfined, for every command that starts a virtual board."""
    parser.add_argument("--confine", choices=("auto", "bwrap", "landlock"), default="auto",
                        help="how the kernel holds a virtual board in its folder: auto (default) takes the first that works here "
                        "of bwrap (bubblewrap) and landlock, and refuses to start the board if neither does")
    parser.add_argument("--unconfined", action="store_true",
                        help="run a virtual board with no confinement at all: code on it can read and write your files and run "
                        "your programs (only for code you would run on the host yourself)")


def confinement_option(args):
    """VirtualBoard's confine= from --confine and --unconfined."""
    if getattr(args, "unconfined", False):
        if args.confine != "auto":
            raise CommandError("--unconfined and --confine %s: give one of them" % args.confine)
        return "none"
    return getattr(args, "confine", "auto")


def _default_heap():
    from ..board.virtual import DEFAULT_HEAP

    return DEFAULT_HEAP


def run_sim(args):
    from ..board.virtual import DEFAULT_HEAP, BoardError, VirtualBoard

    for option, value in (("--heap", args.heap), ("--flash", args.flash)):
        if value is not None and not value.strip():  # not the default in disguise
            raise CommandError("%s: give a size: bytes, or a number with K or M (e.g. 160K)" % option)
    from ..board.virtual import folder_problem

    confine = confinement_option(args)
    problem = folder_problem(args.folder)  # first: a system folder is refused as one, whatever else is wrong with it
    if problem:
        raise CommandError("--folder " + problem)
    check_output(args.folder, "--folder", folder=True)
    folder = os.path.abspath(args.folder)
    try:
        board = VirtualBoard(folder, heap=DEFAULT_HEAP if args.heap is None else args.heap, log=lambda m: print(m, file=sys.stderr, flush=True),
                             flash=args.flash, confine=confine)
        board.start()
    except BoardError as e:
        raise CommandError(str(e)) from None
    import signal

    def stop(signum, frame):  # kill PID / a closed terminal: stop MicroPython too (it has its own session)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:  # started in the background by a script
        signal.signal(signal.SIGINT, stop)
    print(board.port, flush=True)
    print("virtual board on %s (heap %s, filesystem %s, confined by %s); try: mpremote connect %s repl   (Ctrl-C here stops it)"
          % (board.port, args.heap or DEFAULT_HEAP, board.folder, board.confinement, board.port), file=sys.stderr, flush=True)
    if board.confinement == "none":
        print("warning: the board is NOT confined to %s (--unconfined): code on it can read and write the host's files and run "
              "its programs (docs/virtual-board.md)" % board.folder, file=sys.stderr, flush=True)
    try:
        board.wait()
    except KeyboardInterrupt:
        pass
    finally:
        board.stop()
    return 0
