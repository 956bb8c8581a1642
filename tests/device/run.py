# Runs device test modules with no pytest, on MicroPython or CPython:
#   micropython tests/device/run.py test_nn test_rng ...   (MICROPYPATH=device:tests/device)
# Every function named test_* runs; the last line is "N passed, N failed".
import sys


def run(names):
    passed = 0
    failed = 0
    for name in names:
        module = __import__(name)
        for attr in sorted(dir(module)):
            if not attr.startswith("test_"):
                continue
            fn = getattr(module, attr)
            try:
                fn()
                passed += 1
                print("PASS %s.%s" % (name, attr))
            except Exception as e:
                failed += 1
                print("FAIL %s.%s: %s: %s" % (name, attr, type(e).__name__, e))
                if hasattr(sys, "print_exception"):
                    sys.print_exception(e)
                else:
                    import traceback

                    traceback.print_exc()
    print("%d passed, %d failed" % (passed, failed))
    return failed


if __name__ == "__main__":
    sys.exit(1 if run(sys.argv[1:]) else 0)
