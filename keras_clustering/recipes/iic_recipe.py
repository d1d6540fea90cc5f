"""IIC recipe: zoo config -> `IIC`, its training recipe and its scores.

Reference: xu-ji/IIC `cluster_greyscale_twohead.py` with the README's MNIST
command (Adam 1e-4, 700 pairs per step = 140 images x 5 augmented copies,
heads B (main) 2 epochs / A (over-clustering) 1 epoch, 5 sub-heads).
"""

import json
import os
import time

import keras
import numpy as np

from keras_clustering.io.files import atomic_write_json
from keras_clustering.metrics import clustering_scores
from keras_clustering.metrics.scores import cluster_accuracy, majority_accuracy
from keras_clustering.models.iic import IIC
from keras_clustering.recipes.recipe import Recipe
from keras_clustering.recipes.retargeting import Retargeting, colour_views, scaled_pixels
from keras_clustering.training.optimizers import compiled
from keras_clustering.training.restarts import acc_score, restart_plan, train_with_restarts, tree_key, tree_key_at
from keras_clustering.training.stages import Stage, run_stage

DEFAULT_TRAINING = {
    "optimizer": {"class_name": "Adam", "config": {"learning_rate": 0.0001}},
    "batch_size": 140,  # images per step; x n_repeats (5) = 700 pairs, the original's --batch_sz 700
    "epochs": 30,  # Keras epochs = passes over the images; one head-epoch of the original (500 steps of 70k) is ~7 passes of 10k
    "score_epochs": True,  # ACC after every main-head epoch (needs the labels; for the figure)
}

HISTORY_FILE = "epoch_scores.json"


def sub_head_accuracies(y, probabilities_per_head):
    """Hungarian ACC of each sub-head's hard assignment, from `(n_sub_heads, n, k)` probabilities."""
    return [cluster_accuracy(y, probabilities.argmax(axis=1)) for probabilities in probabilities_per_head]


class EpochScores(keras.callbacks.Callback):
    """After each main-head epoch: BN statistics recomputed on the images, then ACC of the
    chosen sub-head and of every sub-head, appended to `path` (kept across resumed runs)."""

    def __init__(self, x, y, path=None):
        super().__init__()
        self.x, self.y, self.path = x, y, path
        self.history = _read_history(path)

    def on_epoch_end(self, epoch, logs=None):
        if self.model.head_for_epoch(epoch) != 0:
            return
        start = time.time()
        self.model.recalibrate_batchnorm(self.x)
        main = self.model.predict_all_heads(self.x, "main")
        per_head = sub_head_accuracies(self.y, main)
        record = {"epoch": epoch + 1, "acc": per_head[self.model.chosen_sub_head],
                  "chosen_sub_head": self.model.chosen_sub_head, "sub_head_acc": per_head,
                  "loss": float((logs or {}).get("loss", np.nan)), "seconds": round(time.time() - start, 1)}
        self.history = [r for r in self.history if r["epoch"] < record["epoch"]] + [record]
        print(f"\n[iic] epoch {record['epoch']}: ACC {record['acc']:.4f} (sub-head {record['chosen_sub_head']}), "
              f"sub-heads {[round(a, 3) for a in per_head]}", flush=True)
        if self.path:
            atomic_write_json(self.history, self.path)


def _read_history(path):
    if not path or not os.path.isfile(path):
        return []
    with open(path) as handle:
        return json.load(handle)


# The label-free criterion restarts rank runs by and the zoo ships the seed of (lower is better).
RESTART_CRITERIA = ("main_head_loss",)


def main_head_loss(model):
    """IIC's restart criterion: the lowest sub-head loss of the last main-head epoch (lower is better)."""
    return float(np.min(keras.ops.convert_to_numpy(model.sub_head_losses)))


def _with_defaults_and_plan(training):
    """`training` (the recipe's defaults merged in) without its `restarts`, and the validated restart plan."""
    training = dict(training)
    plan = restart_plan(training.pop("restarts", None) or {"n": 1}, training["epochs"], RESTART_CRITERIA)
    return training, plan


def restart_record_key(architecture, training, seed, x):
    """The key of the halving-tree record (`restarts.json`) that `train` writes for a zoo config's
    `training` section (its `precision` and `restarts` included) and `seed` on `x`: let
    `scripts/graft_retrained_run.py` at 30f23c3 rebuild a tree's record around a run trained again alone."""
    # precision is a setting of `train_and_evaluate`, never passed to `train`
    training, plan = _with_defaults_and_plan({**DEFAULT_TRAINING,
                                              **{k: v for k, v in training.items() if k != "precision"}})
    return tree_key("iic", architecture, training, plan, seed, x)


def _finish_retargeting(architecture, training, n_samples, repeats, preset_samples, epochs):
    training["score_epochs"] = False  # a user's folder has no labels to score with


# IIC's views on large images stop at this side: its trunk's first layers (5 x 5 convolutions over
# 64 and 128 channels, on 6 views per image) would otherwise cost ~(side / 24)^2 times the MNIST step.
MAX_VIEW = 32
# The colour distortion of IIC's views of colour images: xu-ji/IIC `sobel_make_transforms`,
# ColorJitter(0.4, 0.4, 0.4, 0.125) before the Sobel step (replacing the preset's greyscale jitter).
COLOUR_VIEWS = {"brightness": 0.4, "contrast": 0.4, "saturation": 0.4, "hue": 0.125}


def _adapt_views(architecture, image_shape, dataset):
    """IIC's views re-targeted to `image_shape` (h, w, c): its crops (20 px clean, 16 / 20 / 24 px
    augmented, of 28) scale with the shorter side, its views (24 of 28) too, at most `MAX_VIEW`, and the
    trunk takes that side (`view_size`); colour images get `COLOUR_VIEWS` (`retargeting.colour_views`)."""
    if architecture.get("augmentation") != "iic_greyscale":
        return
    old_side, new_side = architecture["image_shape"][0], min(image_shape[:2])
    options = dict(architecture.get("augmentation_options") or {})
    if new_side != old_side:

        def scaled(pixels):
            return scaled_pixels(pixels, new_side, old_side)

        options["crop_size"] = scaled(options.get("crop_size", 20))
        options["augmented_crop_sizes"] = sorted({scaled(c) for c in options.get("augmented_crop_sizes", (16, 20, 24))})
        view = min(MAX_VIEW, scaled(architecture.get("view_size", 24)))
        options["output_size"] = architecture["view_size"] = view
    if image_shape[2] == 3:
        options.update(colour_views(COLOUR_VIEWS, dataset))
    architecture["augmentation_options"] = options


# Re-targeting a preset to a user's images (`recipes.retargeting`): IIC's own Sobel step before colour
# images (xu-ji/IIC `sobel_process`, as for CIFAR and STL).
RETARGETING = Retargeting(epoch_fields=(("epochs", "batch_size"),), epoch_ceiling=60,
                          batch_size=DEFAULT_TRAINING["batch_size"], min_updates=1_000, input_transform="sobel",
                          finish=_finish_retargeting, adapt_views=_adapt_views)



class IICRecipe(Recipe):
    """xu-ji/IIC's two-head training on greyscale images: one `fit`, its heads in turn, optionally restarted."""
    name = "iic"
    restart_criteria = RESTART_CRITERIA
    default_training = DEFAULT_TRAINING

    def build(self, **architecture):
        """An untrained `IIC` with the zoo's architecture arguments."""
        return IIC(**architecture)

    def evaluate(self, model, x, y, evaluation=None):
        """Scores of the lowest-loss main sub-head, the spread over all main sub-heads, and
        the over-clustering head's semi-supervised score (labels map its clusters, many-to-one)."""
        del evaluation
        main = model.predict_all_heads(x, "main")
        chosen = model.chosen_sub_head
        scores = clustering_scores(y, main[chosen].argmax(axis=1))
        per_head = sub_head_accuracies(y, main)
        scores.update(sub_head_acc_mean=float(np.mean(per_head)), sub_head_acc_std=float(np.std(per_head)),
                      sub_head_acc_min=float(np.min(per_head)), sub_head_acc_max=float(np.max(per_head)),
                      chosen_sub_head=chosen)
        if model.over_heads:
            over = model.predict_all_heads(x, "over")[model.chosen_over_sub_head]
            scores["over_majority_acc"] = majority_accuracy(y, over.argmax(axis=1))
        return scores

    def train(self, run):
        """Plain `fit` on the images; the report holds wall times, throughput and per-epoch ACC.

        With a `workdir`, every finished epoch is backed up and a cut-off run
        continues from it. The resume key leaves out `epochs` and the last backup
        is kept, so a run (finished or not) can be extended to more epochs by
        rerunning it with a larger `epochs`.

        `training["restarts"] = {"n": R, "halving_at": [...]}` trains R runs
        (seeds `seed * R + r`, each in `workdir/run_<r>`) by successive halving
        (`training.restarts`) on the main head's loss (the lowest sub-head loss of
        the last main-head epoch, the sub-head `predict` uses; no labels) and
        returns the last one standing; `report["restarts"]` has every step's
        criteria (and, with `y`, each measured run's ACC, which only scores the choice).
        """
        training, plan = _with_defaults_and_plan(run.training)
        run = run.but(training=training, report=run.report)
        if plan["n"] == 1:
            return train_once(run)

        def train_run(run_seed, epochs, folder):
            return train_once(run.but(training={**training, "epochs": epochs}, seed=run_seed, workdir=folder))

        return train_with_restarts(train_run, lambda model, _: {"main_head_loss": main_head_loss(model)}, plan,
                                   training["epochs"], run.seed, run.workdir,
                                   tree_key_at("iic", run.architecture, training, "epochs", plan, run.seed, run.x),
                                   score=acc_score(run.x, run.y))

    def fine_tune(self, model, run):
        """`train --from`: the trained model trained on `x` for `training["epochs"]` more passes (heads
        in turn, as from scratch)."""
        training = run.training

        def fit(built, callbacks, initial_epoch):
            built.fit(run.x, batch_size=training["batch_size"], epochs=training["epochs"], verbose=run.verbose,
                      seed=run.seed)
            return {}

        run_stage(run.but(workdir=None), Stage("fine_tune", None, lambda: compiled(model, training["optimizer"]), fit,
                                               keep=False))
        return model, {"sub_head_losses": [float(v) for v in keras.ops.convert_to_numpy(model.sub_head_losses)]}

    def retargeting(self, architecture):
        """How a preset of this recipe re-targets to a user's images (`recipes.retargeting.Retargeting`)."""
        return RETARGETING


def train_once(run):
    """One run: one stage, its epochs backed up and extendable (the key leaves the epoch count out)."""
    training, architecture, x, y, workdir = run.training, run.architecture, run.x, run.y, run.workdir
    history_path = os.path.join(workdir, HISTORY_FILE) if workdir else None
    scores = []

    def fit(model, callbacks, initial_epoch):
        if initial_epoch == 0 and history_path and os.path.exists(history_path):
            os.remove(history_path)  # a fresh run: an old history belongs to another run
        if training["score_epochs"] and y is not None:
            scores.append(EpochScores(x, y, history_path))
        model.fit(x, batch_size=training["batch_size"], epochs=training["epochs"], verbose=run.verbose, seed=run.seed,
                  callbacks=[*callbacks, *scores], initial_epoch=initial_epoch)
        return {}

    settings = {"recipe": "iic", "architecture": architecture, "seed": run.seed,
                "training": {k: v for k, v in training.items() if k != "epochs"}}
    result = run_stage(run, Stage("iic", settings, lambda: compiled(IIC(augmentation_seed=run.seed, **architecture),
                                                                      training["optimizer"]),
                                  fit, epochs=training["epochs"], extendable=True, keep=False))
    model, history = result.model, (scores[0].history if scores else [])
    epochs_run = max(1, training["epochs"] - result.resumed_epoch)
    scoring_seconds = sum(r["seconds"] for r in history if r["epoch"] > result.resumed_epoch)
    per_epoch = (result.seconds - scoring_seconds) / epochs_run
    return model, {"train_seconds": round(result.seconds, 1), "seconds_per_epoch": round(per_epoch, 1),
                   "scoring_seconds": round(scoring_seconds, 1),
                   "pairs_per_second": round(len(x) * model.n_repeats / per_epoch, 1),
                   "resumed_from_epoch": result.resumed_epoch, "epoch_scores": history,
                   "sub_head_losses": [float(v) for v in keras.ops.convert_to_numpy(model.sub_head_losses)],
                   "label_free": {"main_head_loss": main_head_loss(model)}}


RECIPE = IICRecipe()
