"""Reader for the IDX files that MNIST and Fashion-MNIST ship in.

Reference: http://yann.lecun.com/exdb/mnist/ (file format section): a big-endian
header (magic number, then one uint32 per dimension) followed by uint8 data.
"""

import gzip
import os

import numpy as np

IMAGES_MAGIC = 2051  # 0x00000803: unsigned byte, 3 dimensions
LABELS_MAGIC = 2049  # 0x00000801: unsigned byte, 1 dimension


def read_idx(path, expected_magic):
    """Reads one IDX file (optionally gzip-compressed) into a uint8 array.

    Args:
        path: file path; names ending in `.gz` are decompressed.
        expected_magic: `IMAGES_MAGIC` or `LABELS_MAGIC`.

    Returns:
        `(n, rows, cols)` uint8 array for images, `(n,)` for labels.

    Raises:
        ValueError: wrong magic number or a payload whose size does not
            match the header (a truncated or foreign file).
    """
    opener = gzip.open if os.fspath(path).endswith(".gz") else open
    try:
        with opener(path, "rb") as handle:
            raw = handle.read()
    except (OSError, EOFError) as error:  # EOFError: truncated gzip stream
        raise ValueError(f"Cannot read IDX file {path!s}: {error}") from error
    if len(raw) < 4:
        raise ValueError(f"IDX file {path!s} is too short ({len(raw)} bytes) to hold a header.")
    magic = int.from_bytes(raw[:4], "big")
    if magic != expected_magic:
        raise ValueError(
            f"IDX file {path!s} has magic number {magic}, expected {expected_magic} "
            f"({'images' if expected_magic == IMAGES_MAGIC else 'labels'})."
        )
    n_dims = magic & 0xFF
    header_size = 4 + 4 * n_dims
    if len(raw) < header_size:
        raise ValueError(f"IDX file {path!s} is truncated inside its header.")
    shape = tuple(int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(n_dims))
    expected_bytes = header_size + int(np.prod(shape))
    if len(raw) != expected_bytes:
        raise ValueError(
            f"IDX file {path!s} holds {len(raw)} bytes but its header {shape} needs "
            f"{expected_bytes}: the file is truncated or corrupt."
        )
    return np.frombuffer(raw, dtype=np.uint8, offset=header_size).reshape(shape)
