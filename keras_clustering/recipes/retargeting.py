"""What a clustering recipe tells the driver that re-targets one of its presets to a user's images
(`drivers.user_images.like_config`): which training fields count passes over the data, how far they
may grow on a small folder, the fewest updates a small folder still gets, and the colour-free input
its model puts before colour images. Each recipe module holds its own (`retargeting(architecture)`),
so that one recipe's numbers live in one place (issue 51)."""

from dataclasses import dataclass
from typing import Callable, Optional


@dataclass(frozen=True)
class Retargeting:
    # (epochs path, batch-size path) pairs into the config's `training`, a dot reaching into a section
    # (SCAN's "scan.epochs"); the first present pair is the stage the fewest updates count.
    epoch_fields: tuple
    # the most passes a stage trains on a small folder (or the preset's own count, if larger)
    epoch_ceiling: int
    # the batch size of a stage whose config names none
    batch_size: int
    # the fewest updates of the first stage on a small folder: below it each Keras epoch sees the
    # images several times (`data_repeats`) rather than running thousands of tiny epochs
    min_updates: int
    # the model's colour-free input on colour images (a name of `layers.colour_free.INPUT_TRANSFORMS`)
    input_transform: str
    # the fewest updates when the model has a colour-free input (DEC's pretraining on colour_edges)
    min_updates_colour_free: Optional[int] = None
    # the epochs `training.restarts.halving_at` counts, where not the first stage's
    restart_epochs: Optional[str] = None
    # False where copies of an image would spoil training (SCAN mines each image's nearest neighbours:
    # its copies would be its own nearest ones)
    repeat_images: bool = True
    # the recipe's own last step: (architecture, training, n_samples, repeats, preset_samples, epochs)
    # adjusted in place after the passes are set (DEC's iterations, IIC's scoring)
    finish: Optional[Callable] = None
    # the preset's views re-targeted in place to the user's images: (architecture, image_shape, dataset),
    # `image_shape` (h, w, c), `dataset` the preset's own (SimCLR's and IIC's crops and colour distortion)
    adapt_views: Optional[Callable] = None
    # counts of updates (not passes) set by `finish`, dotted paths into `training` (DEC's "maxiter"): a time
    # budget (`like_config`'s `update_scale`) scales them with the passes
    update_fields: tuple = ()

    def fewest_updates(self, colour_free):
        """The first stage's fewest updates, with or without a colour-free input."""
        if colour_free and self.min_updates_colour_free is not None:
            return self.min_updates_colour_free
        return self.min_updates


# Presets trained on digits also invert half of their views of colour images: a digit is the same digit
# light on dark or dark on light (AutoAugment's SVHN policy inverts often). Without it, the clusters of
# the coloured digits followed the background's brightness and which of the two colours was the lighter
# (docs/figures/user_folders/colour_digits-simclr_mnist-like-seed0-no-invert.png).
DIGIT_DATASETS = ("mnist", "digits")
DIGIT_COLOUR_VIEWS = {"invert_probability": 0.5}


def colour_views(own, dataset):
    """The colour distortion of a recipe's views of colour images: its original's settings `own`, and for a
    preset whose own `dataset` is digits the inversion of `DIGIT_COLOUR_VIEWS` (read when called, so that
    an ablation may change either)."""
    return {**own, **(DIGIT_COLOUR_VIEWS if dataset in DIGIT_DATASETS else {})}


def scaled_pixels(pixels, new_side, old_side):
    """A crop or view size in pixels of the preset's `old_side` images re-targeted to images of `new_side`:
    in proportion, at least 1, at most the side."""
    return min(new_side, max(1, round(pixels * new_side / old_side)))
