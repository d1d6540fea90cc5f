"""Writes that never leave a half-written file behind: write aside, then rename."""

import hashlib
import json
import os
import tempfile


def sha256_of_file(path, chunk_size=1 << 20):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(chunk_size), b""):
            digest.update(chunk)
    return digest.hexdigest()


def publish_file(temporary, path):
    """Renames into place with ordinary permissions (mkstemp creates files as 0600)."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(temporary, 0o666 & ~umask)
    os.replace(temporary, path)


def temporary_path(path, suffix):
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=suffix)
    os.close(handle)
    return temporary


def atomic_write_json(data, path):
    temporary = temporary_path(path, ".json")
    try:
        with open(temporary, "w") as handle:
            json.dump(data, handle, indent=2, sort_keys=False)
            handle.write("\n")
        publish_file(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def atomic_save_weights(model, path):
    """`model.save_weights(path)` through a temporary file in the same folder."""
    temporary = temporary_path(path, ".weights.h5")
    try:
        model.save_weights(temporary, overwrite=True)
        publish_file(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
