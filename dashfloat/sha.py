"""SHA-256 without OpenSSL: the interpreter's own implementation, where it has one.

`import hashlib` loads _hashlib, which maps libcrypto (3.3 MiB of RSS, ~5 ms): a tenth of
DashFloat's memory at rest (issue 16) for the few short digests it takes (the journal's
project key, file snapshots, a call's fingerprint). The digest is the same bytes whichever
implementation computes it; hashlib is the fallback on an interpreter built without its own.
"""

from __future__ import annotations

try:
    from _sha2 import sha256  # CPython 3.12+
except ImportError:  # pragma: no cover - which one exists depends on the interpreter
    try:
        from _sha256 import sha256  # CPython 3.11
    except ImportError:
        from hashlib import sha256

__all__ = ["sha256", "sha256_hex"]


def sha256_hex(data: bytes) -> str:
    """The hex SHA-256 of `data`."""
    return sha256(data).hexdigest()
