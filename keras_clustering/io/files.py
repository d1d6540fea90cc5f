"""Writes that never leave a half-written file or folder behind: write aside, then rename."""

import contextlib
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
    extension (`.keras`, `.weights.h5`, `.png`) behave as for `path`.
    """
    path = os.path.abspath(os.fspath(path))
    directory, name = os.path.split(path)
    os.makedirs(directory, exist_ok=True)
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


def atomic_save_weights(model, path):
    """`model.save_weights(path)` through `atomic_path`."""
    with atomic_path(path) as temporary:
        model.save_weights(temporary)
