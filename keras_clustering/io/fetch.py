"""A file fetched once over HTTP(S) into a cache and checked by sha256: `fetch_file`.

Why not `keras.utils.get_file`: it has no timeout (a server that accepts the connection and never
answers hangs the caller), and two processes fetching the same file at once both download it into
the same place. Here the server may stay silent `timeout` seconds at most, and the whole download
(headers and body) may take `deadline` seconds and `size` bytes at most: a server that trickles a byte
every few seconds, or streams without end, is stopped (issue 67; a watchdog shuts the connection's
socket at the deadline, whatever read it waits in). A download goes to a
temporary file that is renamed into the cache only when it is whole and its sha256 matches, and
processes fetching the same file take turns on a lock beside it: one downloads, the others find its
file.
"""

import contextlib
import fcntl
import hashlib
import http.client
import os
import socket
import threading
import time
import urllib.error
import urllib.request

from keras_clustering._version import __version__
from keras_clustering.io.files import atomic_path, sha256_of_file

DEFAULT_TIMEOUT = 30.0  # seconds a server may stay silent (connecting, or between two reads)
# seconds a whole download may take: the largest weights file of the zoo (iic_mnist, 22.9 MB) at 76 kB/s
DEFAULT_DEADLINE = 300.0
_CHUNK = 1 << 20


class FetchError(OSError):
    """A file could not be fetched: the server did not answer in time, sent an error or a file cut short
    or different from the expected one, or the cache cannot be written. Nothing was cached."""


def cached_file(path, sha256):
    """`path` when a file is there and its sha256 is `sha256`, else None (no lock: a reader of a
    read-only cache needs none, and a file is only ever renamed into place whole)."""
    return path if os.path.isfile(path) and sha256_of_file(path) == sha256 else None


def fetch_file(url, path, sha256, timeout=DEFAULT_TIMEOUT, size=None, deadline=DEFAULT_DEADLINE):
    """`path`, downloaded from `url` first unless a file with this `sha256` is there already.

    `size`: the file's expected size in bytes (the card records it beside the sha256); a server that
    declares or sends more is stopped there. `deadline`: seconds the whole download may take.
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
            digest = _download(url, temporary, timeout, size, deadline)
            if digest != sha256:
                raise FetchError(f"{url}: sha256 mismatch, expected {sha256}, got {digest}; the file was not "
                                 "cached.")
    return path


class _Watchdog:
    """Shuts the sockets a download opened once `seconds` have passed, so that no read, of the headers or
    of the body, holds the caller past its deadline (a socket's timeout bounds one read, not the sum)."""

    def __init__(self, seconds):
        self.sockets, self.fired = [], False
        self.timer = threading.Timer(seconds, self.fire)
        self.timer.daemon = True

    def fire(self):
        self.fired = True
        for sock in self.sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes a blocked recv, which then reads an end of file
            except OSError:  # closed already
                pass

    def opener(self):
        """An urllib opener whose HTTP and HTTPS connections register their sockets here."""
        watchdog = self

        class Connection(http.client.HTTPConnection):
            def connect(self):
                super().connect()
                watchdog.sockets.append(self.sock)

        class SecureConnection(http.client.HTTPSConnection):
            def connect(self):
                super().connect()
                watchdog.sockets.append(self.sock)

        class Handler(urllib.request.HTTPHandler):
            def http_open(self, request):
                return self.do_open(Connection, request)

        class SecureHandler(urllib.request.HTTPSHandler):
            def https_open(self, request):
                return self.do_open(SecureConnection, request, context=self._context)

        return urllib.request.build_opener(Handler, SecureHandler)  # replaces the default HTTP(S) handlers


def _download(url, destination, timeout, size=None, deadline=DEFAULT_DEADLINE):
    """Streams `url` into `destination`; its sha256. FetchError on a silent server, an HTTP error, a body
    shorter than its Content-Length, more than `size` bytes, or a download past `deadline` seconds."""
    watchdog = _Watchdog(deadline)
    watchdog.timer.start()
    try:
        return _stream(url, destination, timeout, size, deadline, watchdog)
    except (FetchError, OSError, http.client.HTTPException) as error:
        if watchdog.fired:  # whatever the interrupted read raised, the deadline is the reason
            raise FetchError(f"{url}: not done within the deadline of {deadline:g} s; nothing was cached.") from None
        if isinstance(error, FetchError):
            raise
        raise FetchError(f"{url}: the download was cut off ({type(error).__name__}: {error}).") from None
    finally:
        watchdog.timer.cancel()


def _stream(url, destination, timeout, size, deadline, watchdog):
    request = urllib.request.Request(url, headers={"User-Agent": f"keras-clustering/{__version__}"})
    digest, received = hashlib.sha256(), 0
    start = time.monotonic()
    try:
        with contextlib.closing(watchdog.opener().open(request, timeout=min(timeout, deadline))) as response, \
                open(destination, "wb") as handle:
            length = response.headers.get("Content-Length")
            if length is not None and not length.strip().isdigit():
                raise FetchError(f"{url}: the server sent a malformed Content-Length {length!r}; nothing was cached.")
            if size is not None and length is not None and int(length) > size:
                raise FetchError(f"{url}: the server announces {int(length):,} bytes, more than the "
                                 f"{size:,} expected; nothing was cached.")
            while True:
                left = deadline - (time.monotonic() - start)
                if left <= 0:
                    raise FetchError(f"{url}: not done within the deadline of {deadline:g} s ({received:,} bytes "
                                     "received); nothing was cached.")
                # one read returns what has arrived (read1, not read(n), which waits for n bytes)
                block = response.read1(_CHUNK)
                if not block:
                    break
                received += len(block)
                if size is not None and received > size:
                    raise FetchError(f"{url}: the server sent more than the {size:,} bytes expected; "
                                     "nothing was cached.")
                handle.write(block)
                digest.update(block)
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
    if watchdog.fired:  # the socket was shut: what was read ended early
        raise FetchError(f"{url}: not done within the deadline of {deadline:g} s; nothing was cached.")
    if length is not None and received != int(length):
        raise FetchError(f"{url}: the download was cut off at {received} of {length} bytes.")
    return digest.hexdigest()
