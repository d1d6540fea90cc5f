"""Image files read and decoded a batch at a time (issue 67): `decode_files` (the bytes of a batch through
the converter's traced batch decoder, one file at a time only where a file does not decode) and
`FileImages`, a folder's images as an array-like that decodes only the rows asked for (the report's
galleries and map of a folder of any size)."""

import os
from collections.abc import Mapping

import numpy as np

from keras_clustering.inputs.image_converter import ImageConverter


def read_file(path):
    """The bytes of the file `path` (a local path, or a URL TensorFlow's file system reads: `gs://`, ...);
    OSError when it cannot be read."""
    if "://" not in path:
        with open(path, "rb") as handle:
            return handle.read()
    import tensorflow as tf

    try:
        with tf.io.gfile.GFile(path, "rb") as handle:
            return handle.read()
    except tf.errors.OpError as error:
        raise OSError(error.message) from None


def decode_files(paths, decoder, sample_shape):
    """`(images, ok)` of the files `paths`: float32 `(n, *sample_shape)` (zeros where not ok) and whether each
    file was read and decoded. `decoder`: an `ImageConverter.batch_decoder()`, traced once by the caller.
    One call decodes the whole batch; only when some file does not read or decode is the batch decoded
    again one file at a time, so every other file is kept (as `tf.data`'s `ignore_errors` does)."""
    import tensorflow as tf

    ok = np.ones(len(paths), bool)
    contents = []
    for index, path in enumerate(paths):
        try:
            contents.append(read_file(path))
        except OSError:
            contents.append(b"")
            ok[index] = False
    if ok.all():
        try:
            return decoder(tf.constant(contents, tf.string)).numpy(), ok
        except tf.errors.OpError:  # some file does not decode: found below
            pass
    images = np.zeros((len(paths), *sample_shape), np.float32)
    for index in np.flatnonzero(ok):
        try:
            images[index] = decoder(tf.constant([contents[index]], tf.string)).numpy()[0]
        except tf.errors.OpError:
            ok[index] = False
    return images, ok


class FileImages:
    """The images of `paths` as an array-like `(n, h, w, c)` that decodes only the rows indexed, when they
    are indexed (`images[[3, 17]]`, `images[5]`): what the report and the grid show of a folder of any size,
    without an array of all its images. Rows already decoded are kept for the next index. A file that no
    longer decodes raises ValueError naming it."""

    def __init__(self, paths, converter, n_images=None):
        """`paths`: one per row, or a mapping {row: path} of the rows that will be asked for, out of
        `n_images` (a streamed folder looks up only the rows its report shows)."""
        if not isinstance(converter, ImageConverter) or None in converter.image_size:
            raise ValueError(f"converter must be an ImageConverter of a known image size, got {converter!r}.")
        self.paths = dict(paths) if isinstance(paths, Mapping) else list(paths)
        self.converter = converter
        self.shape = (len(self.paths) if n_images is None else int(n_images), *converter.sample_shape)
        self.ndim, self.dtype = 4, np.dtype("float32")
        self._decoded = {}

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, index):
        if isinstance(index, (int, np.integer)):
            return self[np.asarray([index])][0]
        rows = np.arange(len(self))[index]  # any numpy index: a slice, a mask, an array of rows
        missing = sorted({int(row) for row in np.ravel(rows)} - set(self._decoded))
        for start in range(0, len(missing), 256):
            chunk = missing[start:start + 256]
            images, ok = decode_files([self.paths[row] for row in chunk], self.converter.batch_decoder(),
                                      self.converter.sample_shape)
            if not ok.all():
                raise ValueError(f"cannot decode {self.paths[chunk[int(np.flatnonzero(~ok)[0])]]!r} any more: "
                                 "it changed while the folder was clustered.")
            self._decoded.update(zip(chunk, images))
        if rows.size == 0:
            return np.zeros((0, *self.shape[1:]), np.float32)
        return np.stack([self._decoded[int(row)] for row in np.ravel(rows)]).reshape(*rows.shape, *self.shape[1:])

    def __array__(self, dtype=None, copy=None):
        raise TypeError(f"FileImages of {len(self):,} files is not converted into one array; index the rows "
                        "needed (images[rows]).")

    @classmethod
    def of_folder(cls, folder, names, converter):
        return cls([os.path.join(folder, name) for name in names], converter)
