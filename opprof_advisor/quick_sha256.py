"""sha256 for the index signature every `advisor search` computes, without loading OpenSSL.

hashlib loads OpenSSL's libcrypto before it hashes anything (~3 ms of a 0.08 s search); Python's own
sha256 module gives the same digests. Builds keep hashlib: OpenSSL hashes thousands of files faster.
"""

try:
    from _sha256 import sha256  # Python 3.11's own module
except ImportError:  # another Python: hashlib's
    from hashlib import sha256

__all__ = ["sha256"]
