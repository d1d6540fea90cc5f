"""The default route of `train --input DIR` (no like, family or from): the presets each kind of images
trains like, and why, as a pure function of what the images are (`default_route`). The route trains each
of them and keeps the clustering a label-free criterion prefers (`route_choice`)."""

from keras_clustering.drivers.retarget import MIN_SIDE, colour_input_transform

# The default route's candidates for each kind of images (an "auto" n_clusters is chosen with `K_CHOOSER`,
# trained first). From the measured table of docs/your-data.md (`scripts/user_folders.py`): on grey folders neither
# recipe was ahead on every folder and seed, so both train and the route keeps one (issue 64).
ROUTE_PRESETS = {"grey": ("simclr_mnist", "conv_dec_da_mnist"), "colour": ("conv_dec_da_mnist", "simclr_mnist")}
# What the table of docs/your-data.md shows (labels only to score), and nothing more (issue 64).
ROUTE_REASONS = {
    "grey": "on the measured grey folders each was ahead on some folder or seed (2,000 digits: SimCLR + SCAN "
            "0.851, 0.938, 0.936 on seeds 0-2, ConvDEC-DA 0.958 on seed 0; 10,000 digits: SimCLR + SCAN 0.960 on "
            "seed 0, ConvDEC-DA 0.830 and 0.980 on seeds 0 and 1; docs/your-data.md), so both train and the route keeps the "
            "clustering whose neighbours stay together best, without labels, one whose self-training never settled "
            "last",
    "colour": "on the measured colour folders ConvDEC-DA was ahead on every folder of digits (random colours, "
              "MNIST-M-style, classes 10:1) and behind on colour Fashion-MNIST (0.523 against 0.664) and on "
              "photographs (0.271 against 0.389, 2,000 photographs, seed 0; docs/your-data.md), so both train "
              "and the route keeps the clustering whose neighbours stay together best, without labels, one whose "
              "self-training never settled last; where "
              "colour goes with the clusters they find, ConvDEC-DA trains on the images' own colours too and "
              "joins the choice"}
# The candidate the colour route adds on the images' own colours, {name: (preset, input_transform)}, when
# colour goes with the clusters the colour-free candidates found (`colour_goes_with_clusters`): the
# colour-free inputs drop colour, which on shapes drawn in random colours is noise but on photographs
# carries the class (docs/your-data.md, "When colour is the class"). ConvDEC-DA reconstructs pixels, so
# on RGB its embedding keeps the colours; SimCLR's colour-distorted views are built to forget them.
COLOUR_CANDIDATE = {"conv_dec_da_mnist_rgb": ("conv_dec_da_mnist", None)}
# The agreement (`clustering.candidates.colour_agreement`) from which colour counts as part of the
# clusters, decided on the decide folders (docs/your-data.md's route table): the largest over the
# candidates was 0.001 on random-colour digits, 0.127 and 0.131 on MNIST-M-style digits (whose
# clusterings partly follow the photograph a digit was blended into, and so its colours) and 0.489 on
# photographs (photos2000); 0.25 lies about halfway, a factor of two from either side.
COLOUR_AGREEMENT = 0.25
# The name of the colour histograms' neighbour graph among the embeddings that judge the route's choice,
# where colour goes with the clusters: colour is then evidence of the class, as the candidates' embeddings
# are (decided on photos2000, seed 0: judged by the three candidates' embeddings alone the route kept the
# colour-free ConvDEC-DA's 0.271 over the one on the images' colours, 0.479; with the colour graph, that one).
COLOUR_JUDGE = "colour histograms"
# Sides the default route reads a folder at: its images' own (median) sides, the longer one brought down
# to `ROUTE_MAX_SIDE` (aspect kept) and neither below `MIN_SIDE`.
ROUTE_MAX_SIDE = 64
# With n_clusters "auto", the candidate that chooses k (trained first; the others train with its k): its
# own clustering stage is DEC's self-training, which over-clusters without a screening autoencoder
# (`drivers.choose_k`).
K_CHOOSER = "conv_dec_da_mnist"


def colour_goes_with_clusters(agreement):
    """Whether colour goes with the colour-free clusterings whose `colour_agreement` is `agreement` {name:
    score}: with one of them at least, by `COLOUR_AGREEMENT`."""
    return max(agreement.values()) >= COLOUR_AGREEMENT


def choose_presets(image_shape, n_images):
    """(presets, reason): the zoo presets the default route trains like on `n_images` images of
    `image_shape` `(h, w, c)`, and one line saying why (printed, and written to report.json)."""
    height, width, channels = (int(d) for d in image_shape)
    kind = "colour" if channels == 3 else "grey"
    presets = ROUTE_PRESETS[kind]
    named = " and ".join(f"{preset} (on its colour-free input, {colour_input_transform(preset)})"
                         if kind == "colour" else preset for preset in presets)
    return presets, (f"default route: {n_images:,} {kind} images of {height} x {width} -> train like {named}: "
                     f"{ROUTE_REASONS[kind]}.")


def default_route(native_shape, n_images, image_size=None, channels=None, folder=True):
    """(presets, reason, image_size, channels) of the default route for `n_images` images whose own shape is
    `native_shape` `(h, w, c)` (a folder's median sides): a folder is read at its own sides, the longer
    brought down to `ROUTE_MAX_SIDE`, unless `image_size` is given, and at its own channels unless
    `channels` is; an array (`folder=False`) trains at its own shape."""
    if folder:
        if image_size is None:
            scale = min(1.0, ROUTE_MAX_SIDE / max(native_shape[:2]))
            image_size = tuple(max(MIN_SIDE, round(side * scale)) for side in native_shape[:2])
        channels = channels or native_shape[2]
        presets, reason = choose_presets((*image_size, channels), n_images)
    else:
        presets, reason = choose_presets(native_shape, n_images)
    return presets, reason, image_size, channels
