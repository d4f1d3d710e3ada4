# The entry point of dist/dashfloat-<arch> (tests/exebuild.py builds it with PyInstaller).
#
# The one-file executable is a bootloader that unpacks Python and the compiled modules into
# a private directory ($TMPDIR/_MEIxxxxxx, mode 700, removed at exit) and runs this script
# in a child process. The bootloader leaves its marks in that child's environment, which
# every command DashFloat runs would inherit: LD_LIBRARY_PATH pointing at the unpacked
# libraries (the server's bash, git or ssh would load the bundle's libssl, libz, libtinfo
# instead of their own) and its _PYI_* variables (a dashfloat-<arch> started by a command
# would take itself for this one's child and look for a directory that is not its own).
# The loader reads LD_LIBRARY_PATH once, at start, so this process is unaffected.
import os
import sys


def restore_environment(environ, bundle_dir):
    """Undo what the bootloader added to `environ` (a dict, changed in place)."""
    original = environ.pop("LD_LIBRARY_PATH_ORIG", None)
    if original is not None:
        environ["LD_LIBRARY_PATH"] = original
    elif bundle_dir and "LD_LIBRARY_PATH" in environ:
        kept = [p for p in environ["LD_LIBRARY_PATH"].split(os.pathsep) if p and p != bundle_dir]
        if kept:
            environ["LD_LIBRARY_PATH"] = os.pathsep.join(kept)
        else:
            del environ["LD_LIBRARY_PATH"]
    for key in [k for k in environ if k.startswith("_PYI_") or k == "_MEIPASS2"]:
        del environ[key]


def main():
    restore_environment(os.environ, getattr(sys, "_MEIPASS", None))
    from dashfloat.cli import main as dashfloat_main

    return dashfloat_main()


if __name__ == "__main__":
    sys.exit(main())
