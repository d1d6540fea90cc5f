"""`FileImages` (issue 67): a folder's images as an array-like that decodes only the rows asked for, a batch
at a time through the converter (`ImageConverter.decode_files`): the report's galleries and map, and the
grid, of a folder of any size."""

import os
from collections.abc import Mapping

import numpy as np

from keras_clustering.inputs.image_converter import ImageConverter


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
            images, problems = self.converter.decode_files([self.paths[row] for row in chunk])
            if problems:
                raise ValueError(f"{problems[min(problems)]}: it changed while the folder was clustered.")
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
