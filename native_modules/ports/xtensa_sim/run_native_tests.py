"""Run MicroPython's own tests of native code (tests/micropython/native_*.py and viper_*.py in a
MicroPython source tree) on the xtensa_sim firmware, the way MicroPython's run-tests.py judges them:
a test passes when its output equals its .exp file (or, without one, CPython's output), is skipped
when it prints SKIP. Each test gets a fresh board (run-tests.py soft-resets between tests).

    python3 run_native_tests.py FIRMWARE MPY_DIR [PATTERN ...]

Prints one line per test and the totals; exit status 1 if any failed."""
import glob
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sim_board  # noqa: E402

PATTERNS = ("micropython/native_*.py", "micropython/viper_*.py")


def expected(test):
    exp = test + ".exp"
    if os.path.isfile(exp):
        with open(exp, encoding="utf-8", errors="replace") as f:
            return f.read()
    proc = subprocess.run([sys.executable, test], capture_output=True, text=True, timeout=60, cwd=os.path.dirname(test))
    return proc.stdout


def run_one(firmware, test):
    with open(test, encoding="utf-8") as f:
        code = f.read()
    try:
        with sim_board.SimBoard(firmware, boot_timeout=30) as board:
            return board.run(code, timeout=30)
    except RuntimeError as e:
        return "CRASH %s" % e


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    firmware, mpy_dir = argv[0], argv[1]
    patterns = argv[2:] or PATTERNS
    tests = sorted(t for p in patterns for t in glob.glob(os.path.join(mpy_dir, "tests", p)))
    if not tests:
        sys.exit("no tests match %s in %s/tests" % (patterns, mpy_dir))
    counts = {"pass": 0, "fail": 0, "skip": 0}
    failed = []
    for test in tests:
        out = run_one(firmware, test)
        name = os.path.relpath(test, os.path.join(mpy_dir, "tests"))
        if out.strip() == "SKIP" or out.startswith("SKIP\n"):
            verdict = "skip"
        elif out == expected(test):
            verdict = "pass"
        else:
            verdict = "fail"
            failed.append((name, out))
        counts[verdict] += 1
        print("%-4s %s" % (verdict, name), flush=True)
    for name, out in failed:
        print("---- %s\n%s" % (name, out[-1500:]))
    print("%d tests: %d passed, %d failed, %d skipped" % (len(tests), counts["pass"], counts["fail"], counts["skip"]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
