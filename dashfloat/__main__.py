"""`python -m dashfloat` runs the same entry point as the `dashfloat` command."""
import sys

from dashfloat.cli import main

sys.exit(main())
