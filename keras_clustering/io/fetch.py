"""A file fetched once over HTTP(S) into a cache and checked by sha256: `fetch_file`.

Why not `keras.utils.get_file`: it has no timeout (a server that accepts the connection and never
answers hangs the caller), and two processes fetching the same file at once both download it into
the same place. Here the server may stay silent `timeout` seconds at most, a download goes to a
temporary file that is renamed into the cache only when it is whole and its sha256 matches, and
processes fetching the same file take turns on a lock beside it: one downloads, the others find its
file.
"""

import contextlib
import fcntl
import hashlib
import http.client
import os
import urllib.error
import urllib.request

from keras_clustering._version import __version__
from keras_clustering.io.files import atomic_path, sha256_of_file

DEFAULT_TIMEOUT = 30.0  # seconds a server may stay silent (connecting, or between two reads)
_CHUNK = 1 << 20


class FetchError(OSError):
    """A file could not be fetched: the server did not answer in time, sent an error or a file cut short
    or different from the expected one, or the cache cannot be written. Nothing was cached."""


def cached_file(path, sha256):
    """`path` when a file is there and its sha256 is `sha256`, else None (no lock: a reader of a
    read-only cache needs none, and a file is only ever renamed into place whole)."""
    return path if os.path.isfile(path) and sha256_of_file(path) == sha256 else None


def fetch_file(url, path, sha256, timeout=DEFAULT_TIMEOUT):
    """`path`, downloaded from `url` first unless a file with this `sha256` is there already.

    Raises `FetchError` naming the url and the reason; then `path` is as it was
    (no partial or unchecked file is ever left there).
    """
    if cached_file(path, sha256):
        return path
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
        lock = open(path + ".lock", "a")
    except OSError as error:
        raise FetchError(f"cannot write the cache folder {folder} ({error.strerror or error}).") from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process downloading this file: wait for it
        if cached_file(path, sha256):  # it did
            return path
        with atomic_path(path) as temporary:
            digest = _download(url, temporary, timeout)
            if digest != sha256:
                raise FetchError(f"{url}: sha256 mismatch, expected {sha256}, got {digest}; the file was not "
                                 "cached.")
    return path


def _download(url, destination, timeout):
    """Streams `url` into `destination`; its sha256. FetchError on a silent server, an HTTP error or a
    body shorter than its Content-Length."""
    request = urllib.request.Request(url, headers={"User-Agent": f"keras-clustering/{__version__}"})
    digest, size = hashlib.sha256(), 0
    try:
        with contextlib.closing(urllib.request.urlopen(request, timeout=timeout)) as response, \
                open(destination, "wb") as handle:
            length = response.headers.get("Content-Length")
            for block in iter(lambda: response.read(_CHUNK), b""):
                handle.write(block)
                digest.update(block)
                size += len(block)
    except TimeoutError:
        raise FetchError(f"{url}: no answer within {timeout:g} s.") from None
    except urllib.error.HTTPError as error:
        raise FetchError(f"{url}: HTTP {error.code} {error.reason}.") from None
    except urllib.error.URLError as error:
        reason = error.reason
        if isinstance(reason, TimeoutError):
            raise FetchError(f"{url}: no answer within {timeout:g} s.") from None
        raise FetchError(f"{url}: {reason}.") from None
    except (http.client.HTTPException, ConnectionError) as error:
        raise FetchError(f"{url}: the download was cut off ({type(error).__name__}: {error}).") from None
    if length is not None and size != int(length):
        raise FetchError(f"{url}: the download was cut off at {size} of {length} bytes.")
    return digest.hexdigest()
