# The __main__.py of dist/dashfloat.pyz (tests/pyzbuild.py puts it there).
#
# It must run on any Python a server may have, so that an old one gets one clear line
# instead of a SyntaxError from deep inside the package: no syntax newer than Python 2.7
# and 3.0 (no f-strings, no annotations, no print statement), nothing imported but sys
# before the version is checked, and dashfloat imported only after.
import sys

NEEDED = (3, 11)


def version_problem(found):
    """The line to print when Python `found` (a sys.version_info-like tuple) is too old to
    run DashFloat, or None when it will do."""
    if tuple(found[:2]) >= NEEDED:
        return None
    return ("dashfloat: this is Python " + ".".join(str(part) for part in found[:3])
            + "; DashFloat needs Python " + ".".join(str(part) for part in NEEDED)
            + " or later (python3.11, python3.12... if the server has one)")


def main():
    problem = version_problem(sys.version_info)
    if problem is not None:
        sys.stderr.write(problem + "\n")
        sys.stderr.flush()
        return 2
    import os

    try:  # compiled modules cached outside the zip (dashfloat/pyzimport.py)
        from dashfloat import pyzimport

        pyzimport.install(os.path.dirname(__file__))
    except Exception:  # slower without it, nothing else
        pass
    from dashfloat.cli import main as dashfloat_main

    return dashfloat_main()


if __name__ == "__main__":
    sys.exit(main())
