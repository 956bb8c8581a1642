"""microrl board sim: a virtual MicroPython board on a pseudo-terminal."""
import os
import sys

from . import CommandError


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
        description="Start a virtual MicroPython board and print its port; runs until Ctrl-C. Its filesystem is FOLDER; "
        "Ctrl-D, machine.reset() and crashes reboot it as a board reboots.",
    )
    s.add_argument("--folder", default="board-fs", help="the board's filesystem (a folder, created if missing; default ./board-fs)")
    s.add_argument("--heap", default=None, help="MicroPython heap, e.g. 160K, 256K, 2M (default: %s, a typical ESP32's free heap)" % _default_heap())
    s.add_argument("--flash", default=None, help="make the filesystem a littlefs image of this size (e.g. 1M) in FOLDER/flash.img, "
                   "mounted at /flash, which fills up as a board's flash does (default: FOLDER itself, unlimited)")
    s.set_defaults(func=run_sim)
    p.set_defaults(func=lambda args: (p.print_help(), 0)[1])


def _default_heap():
    from ..board.virtual import DEFAULT_HEAP

    return DEFAULT_HEAP


def run_sim(args):
    from ..board.virtual import DEFAULT_HEAP, BoardError, VirtualBoard

    try:
        board = VirtualBoard(args.folder, heap=args.heap or DEFAULT_HEAP, log=lambda m: print(m, file=sys.stderr, flush=True), flash=args.flash)
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
    print("virtual board on %s (heap %s, filesystem %s); try: mpremote connect %s repl   (Ctrl-C here stops it)"
          % (board.port, args.heap or DEFAULT_HEAP, os.path.abspath(args.folder), board.port), file=sys.stderr, flush=True)
    try:
        board.wait()
    except KeyboardInterrupt:
        pass
    finally:
        board.stop()
    return 0
