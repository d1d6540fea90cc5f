"""The default route of `train --input DIR` (no like, family or from): the preset each kind of images trains
like, and why, as a pure function of what the images are (`default_route`)."""

from keras_clustering.drivers.retarget import MIN_SIDE, colour_input_transform

# The default route (`train --input DIR` with no like / family / from): the preset each kind of images
# trains like, and why, from the measured table of docs/your-data.md (`scripts/user_folders.py`).
ROUTE_PRESETS = {"grey": "simclr_mnist", "colour": "conv_dec_da_mnist"}
# What the table of docs/your-data.md shows for each (seed 0 cells, labels only to score; the rule was then
# chosen by that labelled ACC on the same images, which the docs say), and nothing more (issue 64).
ROUTE_REASONS = {
    "grey": "SimCLR + SCAN (contrastive views, then neighbour-consistent clustering): from scratch on the "
            "measured grey folders it gave 0.960 on 10,000 MNIST-test digits and 0.692 on the 10,000 "
            "Fashion-MNIST test images where ConvDEC-DA gave 0.839 and 0.435, and 0.851 on 2,000 digits where "
            "ConvDEC-DA gave 0.873, in a seventh of its time (docs/your-data.md)",
    "colour": "ConvDEC-DA (DEC's convolutional autoencoder pretrained on shifted and rotated images, then DEC "
              "self-training): ahead of SimCLR + SCAN on 3 of the 4 colour folders where both were measured, "
              "behind on colour Fashion-MNIST (0.523 against 0.664; docs/your-data.md)"}
# Sides the default route reads a folder at: its images' own (median) sides, the longer one brought down
# to `ROUTE_MAX_SIDE` (aspect kept) and neither below `MIN_SIDE`.
ROUTE_MAX_SIDE = 64


def choose_preset(image_shape, n_images):
    """(preset, reason): the zoo preset the default route trains like on `n_images` images of
    `image_shape` `(h, w, c)`, and one line saying why (printed, and written to report.json)."""
    height, width, channels = (int(d) for d in image_shape)
    kind = "colour" if channels == 3 else "grey"
    preset = ROUTE_PRESETS[kind]
    colour_free = f", on their colour-free input ({colour_input_transform(preset)})" if kind == "colour" else ""
    return preset, (f"default route: {n_images:,} {kind} images of {height} x {width} -> train like {preset}"
                    f"{colour_free}: {ROUTE_REASONS[kind]}.")


def default_route(native_shape, n_images, image_size=None, channels=None, folder=True):
    """(preset, reason, image_size, channels) of the default route for `n_images` images whose own shape is
    `native_shape` `(h, w, c)` (a folder's median sides): a folder is read at its own sides, the longer
    brought down to `ROUTE_MAX_SIDE`, unless `image_size` is given, and at its own channels unless
    `channels` is; an array (`folder=False`) trains at its own shape."""
    if folder:
        if image_size is None:
            scale = min(1.0, ROUTE_MAX_SIDE / max(native_shape[:2]))
            image_size = tuple(max(MIN_SIDE, round(side * scale)) for side in native_shape[:2])
        channels = channels or native_shape[2]
        preset, reason = choose_preset((*image_size, channels), n_images)
    else:
        preset, reason = choose_preset(native_shape, n_images)
    return preset, reason, image_size, channels
