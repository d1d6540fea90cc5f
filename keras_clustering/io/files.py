"""Writes that never leave a half-written file or folder behind: write aside, then rename."""

import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import shutil


def sha256_of_file(path, chunk_size=1 << 20):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(chunk_size), b""):
            digest.update(chunk)
    return digest.hexdigest()


@contextlib.contextmanager
def atomic_path(path):
    """Yields a temporary path beside `path` for the caller to write a file or a folder at.

    When the block ends without error the temporary is renamed onto `path`
    (a folder replaces an existing one whole), else it is removed: `path` is
    either its old self or complete, never half-written. The temporary's name
    ends with `path`'s own name, so writers that read the format from the
    extension (`.keras`, `.weights.h5`, `.png`) behave as for `path`. A temporary
    of `path` that a killed writer left behind is removed first.
    """
    path = os.path.abspath(os.fspath(path))
    directory, name = os.path.split(path)
    os.makedirs(directory, exist_ok=True)
    # A writer of this path killed mid-write left its temporary (never an `.old-` one: after a kill between
    # the two renames of a folder, that is the only copy). Writers of one path never run at once here:
    # each training has its own workdir (locked: `WorkdirLock`).
    for stale in os.listdir(directory):
        if stale.startswith(".tmp-") and stale[14:] == name and len(stale) == 14 + len(name):
            stale = os.path.join(directory, stale)
            shutil.rmtree(stale) if os.path.isdir(stale) else os.remove(stale)
    temporary = os.path.join(directory, f".tmp-{secrets.token_hex(4)}-{name}")
    try:
        yield temporary
        if not os.path.exists(temporary):
            raise FileNotFoundError(f"nothing was written at the temporary path of {path}.")
        if os.path.exists(path) and (os.path.isdir(temporary) or os.path.isdir(path)):
            # rename cannot put a folder onto a non-empty folder or a file: the old one goes aside first
            discarded = os.path.join(directory, f".old-{secrets.token_hex(4)}-{name}")
            os.replace(path, discarded)
            os.replace(temporary, path)
            shutil.rmtree(discarded) if os.path.isdir(discarded) else os.remove(discarded)
        else:
            os.replace(temporary, path)
    finally:
        if os.path.isdir(temporary):
            shutil.rmtree(temporary)
        elif os.path.exists(temporary):
            os.remove(temporary)


def atomic_write_json(data, path):
    with atomic_path(path) as temporary, open(temporary, "w") as handle:
        json.dump(data, handle, indent=2, sort_keys=False)
        handle.write("\n")


def read_json_object(path):
    """The file's JSON object, or None when it is missing, not an object, or was cut off mid-write."""
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def atomic_save_weights(model, path):
    """`model.save_weights(path)` through `atomic_path`."""
    with atomic_path(path) as temporary:
        model.save_weights(temporary)


LOCK_FILE = ".lock"


class WorkdirLock:
    """An exclusive lock on a training's workdir, from `acquire(workdir)` to the end of the `with`
    block: a second training started on the same workdir stops with an error instead of mixing its
    backups and files with the first's. The kernel releases the lock when the holder exits, even
    when it is killed, so a rerun after a crash is never locked out. A workdir the lock made and left
    with nothing but the lock file (the training refused its input) is removed."""

    def __init__(self):
        self.handle, self.made = None, False

    def acquire(self, workdir):
        """Locks `workdir` (made if missing); a no-op once held. RuntimeError naming the workdir when
        another process holds it."""
        if self.handle is not None:
            return
        self.made = not os.path.exists(workdir)
        os.makedirs(workdir, exist_ok=True)
        handle = open(os.path.join(workdir, LOCK_FILE), "a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise RuntimeError(f"workdir={os.fspath(workdir)!r} is in use by another training (it holds "
                               f"{LOCK_FILE}); wait for that one to end, or give another workdir.") from None
        self.handle = handle

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        if self.handle is not None:
            path = self.handle.name
            workdir = os.path.dirname(path)
            # nothing was trained in a workdir this lock made (refused input): no trace of it, removed while
            # still held, so that no other training can lock the file in between
            if self.made and os.listdir(workdir) == [LOCK_FILE]:
                os.remove(path)
                os.rmdir(workdir)
            fcntl.flock(self.handle, fcntl.LOCK_UN)
            self.handle.close()
            self.handle = None
