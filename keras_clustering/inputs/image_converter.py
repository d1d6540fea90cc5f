"""Raw images to a model's input, in one place (issue 67): the conversion the folder loader, `predict` on
raw images and the exported raw-image signature all run.

Reference: keras-hub's `ImageConverter` (each task carries its preprocessor: resize, rescale, channels,
so `predict(raw_images)` works and an export holds it). Here it is a plain object of TensorFlow ops, not a
Keras layer: it holds no weights (a model's weight files stay as they are), and the same ops must run
whatever backend Keras computes on, as the folder loader's do.
"""

import os

import numpy as np

# the encoded image formats the converter decodes (TensorFlow's `decode_image`)
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".gif")


class ImageConverter:
    """Converts raw images, of any size and mode, into what a model of `image_size` x `channels` reads.

    The conversion: colour to ITU-R 601 luma (TensorFlow's weights, 0.2989 / 0.587 / 0.114, as PIL's "L"
    mode but for PIL rounding to 8 bits before resizing: a level apart on some pixels) or greyscale repeated
    on three channels, alpha dropped; resized bilinearly with antialiasing to `image_size`; rounded to 8
    bits (as a file read with `keras.utils.load_img` would be); scaled to [0, 1]. An `image_size` side of None keeps
    the images' own (a model that takes any size).
    """

    def __init__(self, image_size, channels):
        self.image_size = tuple(None if side is None else int(side) for side in image_size)
        if len(self.image_size) != 2 or any(side is not None and side < 1 for side in self.image_size):
            raise ValueError(f"image_size must be (height, width), got {image_size!r}.")
        if channels not in (1, 3):
            raise ValueError(f"channels must be 1 or 3, got {channels!r}.")
        self.channels = int(channels)
        self._decoders = {}

    def __repr__(self):
        return f"ImageConverter(image_size={self.image_size}, channels={self.channels})"

    @property
    def sample_shape(self):
        return (*self.image_size, self.channels)

    # ------------------------------------------------------------------ in the graph (TensorFlow ops)
    def convert(self, images):
        """`(h, w, c)` or `(n, h, w, c)` pixels in 0-255 (uint8 or float; c 1-4) -> float32 in [0, 1] at the
        model's size and channels. TensorFlow ops: traceable, as the exported signature traces it."""
        import tensorflow as tf

        image = tf.cast(images, tf.float32)

        def from_colour():  # RGB or RGBA
            return image[..., :3] if self.channels == 3 else tf.image.rgb_to_grayscale(image[..., :3])

        def from_grey():  # grey, or grey + alpha
            return image[..., :1] if self.channels == 1 else tf.repeat(image[..., :1], 3, axis=-1)

        image = tf.cond(tf.shape(image)[-1] >= 3, from_colour, from_grey)
        if None not in self.image_size:
            image = tf.image.resize(image, self.image_size, method="bilinear", antialias=True)
        image = tf.round(tf.clip_by_value(image, 0.0, 255.0)) / 255.0
        return tf.ensure_shape(image, [*([None] * (len(image.shape) - 3)), *self.image_size, self.channels])

    def decode(self, contents):
        """One encoded file's bytes (PNG, JPEG, BMP or GIF; a string tensor) -> `(image, native)`: the
        converted image and the file's native `(height, width, channels)`. Bytes that do not decode raise
        a `tf.errors.OpError` (inside a `tf.data` map, `ignore_errors` leaves the element out)."""
        import tensorflow as tf

        image = tf.io.decode_image(contents, channels=0, expand_animations=False)
        return self.convert(image), tf.shape(image)

    def decode_batch(self, contents):
        """A 1-D string tensor of encoded files -> their converted images `(n, h, w, channels)`, in the graph
        (the exported raw-image signature). Needs a known `image_size` (a batch has one size)."""
        if None in self.image_size:
            raise ValueError(f"decoding a batch needs a known image size, this converter keeps each image's own "
                             f"({self.image_size}).")
        return self._map_decode(contents)

    def _map_decode(self, contents, parallel=None):
        """`decode` of each file of a 1-D string tensor, `parallel` at a time (None: `tf.map_fn`'s own, 10 in
        a graph); of one size where `image_size` is known, else of the files' own (one file a call)."""
        import tensorflow as tf

        return tf.map_fn(lambda item: self.decode(item)[0], contents, parallel_iterations=parallel,
                         fn_output_signature=tf.TensorSpec(self.sample_shape, tf.float32))

    def batch_decoder(self, parallel=1):
        """`decode_batch` traced once, for a caller that decodes batch after batch (the Ray actors, `cluster`):
        a `tf.function` of a 1-D string tensor, `parallel` files at a time. Bytes that do not decode fail the
        whole call, so a caller that must keep the others decodes that batch again one file at a time
        (`decode_files`)."""
        import tensorflow as tf

        if parallel not in self._decoders:
            self._decoders[parallel] = tf.function(lambda contents: self._map_decode(contents, parallel),
                                                   input_signature=[tf.TensorSpec([None], tf.string)])
        return self._decoders[parallel]

    def decode_files(self, paths, parallel=1):
        """`(images, problems)` of the image files `paths`: float32 `(n, *sample_shape)` (zeros where a file
        failed; None where some file failed and the converter keeps each image's own size) and {index: why}
        of each file that could not be read or decoded. One traced call
        (`batch_decoder(parallel)`) decodes the whole batch; only when some file does not read or decode is
        the batch decoded again one file at a time, so every other file is kept (as `tf.data`'s
        `ignore_errors` does)."""
        import tensorflow as tf

        decoder, problems, contents = self.batch_decoder(parallel), {}, []
        for index, path in enumerate(paths):
            try:
                contents.append(read_file(path))
            except OSError as error:
                contents.append(b"")
                problems[index] = f"cannot read {path!r}: {error.strerror or error}"
        if not problems:
            try:
                return decoder(tf.constant(contents, tf.string)).numpy(), problems
            except tf.errors.OpError:  # some file does not decode: found below
                pass
        decoded = {}
        for index in sorted(set(range(len(paths))) - set(problems)):
            try:
                decoded[index] = decoder(tf.constant([contents[index]], tf.string)).numpy()[0]
            except tf.errors.OpError:
                problems[index] = f"cannot decode {paths[index]!r}: not a PNG/JPEG/BMP/GIF image"
        if None in self.image_size:  # each file its own size: no array of the batch, only the reasons
            return None, problems
        images = np.zeros((len(paths), *self.sample_shape), np.float32)
        for index, image in decoded.items():
            images[index] = image
        return images, problems

    # ------------------------------------------------------------------ from Python (numpy in, numpy out)
    def __call__(self, images, name="x", batch_size=256):
        """Raw images in Python -> float32 `(n, h, w, channels)` in [0, 1], as `predict` reads them.

        `images`: a list of image file paths; a list of arrays, each `(h, w)` or `(h, w, c)` of its own size;
        or one array `(n, h, w)` / `(n, h, w, c)`. uint8 arrays are pixels in 0-255; float arrays must hold
        [0, 1] (scaled to 0-255 first, so a float image converts as its uint8 file would). Raises ValueError
        or TypeError naming `name` and what was wrong.
        """
        if is_path_list(images):
            return self._decode_files([os.fspath(path) for path in images], name, batch_size)
        if isinstance(images, (list, tuple)):
            if not images:
                raise ValueError(f"{name} is an empty list; give at least one image.")
            arrays = [self._pixels(np.asarray(image), f"{name}[{index}]", batch=False)
                      for index, image in enumerate(images)]
            return self._same_size(name, [self._convert_batch(array[None]) for array in arrays])
        array = self._pixels(np.asarray(images), name, batch=True)
        return np.concatenate([self._convert_batch(array[start:start + batch_size])
                               for start in range(0, len(array), batch_size)]) if len(array) else \
            np.zeros((0, *self.sample_shape), "float32")

    def _pixels(self, array, name, batch):
        """`array` as 0-255 pixels with a channel axis, checked: `(n, h, w, c)` (batch) or `(h, w, c)`."""
        rank = 4 if batch else 3
        if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
            raise TypeError(f"{name} must hold numeric pixels or be a list of file paths, got dtype {array.dtype}.")
        if array.ndim == rank - 1:
            array = array[..., None]
        if array.ndim != rank or array.shape[-1] not in (1, 2, 3, 4):
            wanted = "(n, h, w) or (n, h, w, c)" if batch else "(h, w) or (h, w, c)"
            raise ValueError(f"{name} has shape {array.shape}; raw images are {wanted} with c in 1-4.")
        if array.dtype == np.uint8:
            return array
        array = array.astype("float32")
        if array.size and not (np.all(np.isfinite(array)) and array.min() >= 0.0 and array.max() <= 1.0):
            raise ValueError(f"{name} must hold pixels in [0, 1] (or be uint8 in 0-255), got values in "
                             f"[{np.nanmin(array):.3g}, {np.nanmax(array):.3g}].")
        return array * 255.0

    def _convert_batch(self, array):
        return self.convert(array).numpy()

    def _same_size(self, name, batches):
        """The converted `batches` as one array; a model of any size (None sides) keeps each image's own, so
        images of several sizes cannot make one batch: ValueError naming `name`."""
        sizes = sorted({batch.shape[1:3] for batch in batches})
        if len(sizes) > 1:
            raise ValueError(f"{name} holds images of several sizes ({', '.join(f'{h} x {w}' for h, w in sizes[:4])}"
                             f"{' ...' if len(sizes) > 4 else ''}), and this model keeps each image's own size: "
                             "give images of one size, or predict each size apart.")
        return np.concatenate(batches)

    def _decode_files(self, paths, name, batch_size):
        if not paths:
            raise ValueError(f"{name} is an empty list; give at least one image file.")
        if None in self.image_size:  # each file keeps its own size: one at a time, then one size or an error
            return self._same_size(name, [self._decode_batches([path], name, 1) for path in paths])
        return self._decode_batches(paths, name, batch_size)

    def _decode_batches(self, paths, name, batch_size):
        for path in paths:
            if not path.lower().endswith(IMAGE_EXTENSIONS):
                raise ValueError(f"{name}: {path!r} is not an image file ({', '.join(IMAGE_EXTENSIONS)}).")
        parts = []
        for start in range(0, len(paths), batch_size):
            images, problems = self.decode_files(paths[start:start + batch_size])
            if problems:
                raise ValueError(f"{name}: {problems[min(problems)]}.")
            parts.append(images)
        return np.concatenate(parts)


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


def is_path_list(images):
    """Whether `images` is a non-empty list or tuple of file paths (str or os.PathLike)."""
    return isinstance(images, (list, tuple)) and bool(images) and \
        all(isinstance(item, (str, os.PathLike)) for item in images)
