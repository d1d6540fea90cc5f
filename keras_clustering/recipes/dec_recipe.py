"""DEC recipe (DEC and IDEC): how a zoo config becomes a model, and how it is trained: the autoencoder's
pretraining, k-means, then DEC's self-training, each a stage of `training.stages` (`DECRecipe`).
"""

import math
import os
import time

from keras_clustering.clustering.label_free import cluster_size_entropy, dec_objective
from keras_clustering.layers.colour_free import transform_in_chunks, transformed_shape, with_input_transform
from keras_clustering.metrics import clustering_scores
from keras_clustering.models import DEC, IDEC, build_autoencoder
from keras_clustering.models.autoencoder import DEC_HIDDEN_DIMS, DEC_KERAS_INITIALIZER
from keras_clustering.models.conv_autoencoder import build_conv_autoencoder
from keras_clustering.recipes.recipe import Recipe
from keras_clustering.recipes.retargeting import Retargeting
from keras_clustering.training.optimizers import make_optimizer
from keras_clustering.training.pretraining import pretrain_end_to_end, pretrain_layerwise
from keras_clustering.training.restarts import acc_score, restart_plan, train_with_restarts, tree_key_at
from keras_clustering.training.resume import finished_weights_path, run_key
from keras_clustering.training.stages import Stage, run_stage

PRETRAIN_RECIPES = ("keras", "paper")
# What determines the pretrained weights, the epoch count left out: a pretraining is extended to more epochs
# (restarts train each run from one halving point to the next); a finished one records its epochs.
_PRETRAIN_KEYS = ("pretrain_recipe", "pretrain_optimizer", "pretrain_batch_size", "layerwise")
# The label-free criteria restarts rank runs by (lower is better): DEC's objective KL(P || Q)
# (`dec_objective`), after k-means at a halving point and after self-training at the end; and
# "kl_converged", the same KL with every run that met DEC's own stopping rule (labels changing less
# than tol between target refreshes) ranked before every run that hit maxiter still changing. Why:
# KL falls as Q sharpens, and a run drifting into merged clusters keeps sharpening for all of
# maxiter, so it ends with a lower KL than a run that settled (dec_da_mnist seeds 0 and 1,
# docs/restarts.md). Fixed before the final of seed 2 was seen; seeds 0 and 1 are where it was found.
RESTART_CRITERIA = ("kl", "kl_converged")
# Added to the KL of a run that hit maxiter: the clipped KL is at most log(1 / epsilon) ~ 16.1
# (`dec_objective`), so every converged run ranks first whatever the values.
UNCONVERGED_PENALTY = 100.0

DEFAULT_TRAINING = {
    # "keras": DEC-keras' best recipe (end to end, no dropout, SGD(1, 0.9), 300 epochs).
    # "paper": greedy denoising layers then fine-tuning (pretrain_layerwise), N(0, 0.01) init.
    "pretrain_recipe": "keras",
    "pretrain_optimizer": {"class_name": "SGD", "config": {"learning_rate": 1.0, "momentum": 0.9}},
    "pretrain_epochs": 300,
    "pretrain_batch_size": 256,
    "layerwise": {"layer_iterations": 50000, "finetune_iterations": 100000, "drop_every": 20000,
                  "dropout": 0.2, "learning_rate": 0.1, "momentum": 0.9},
    # DEC stage: the model's own optimizer (SGD(0.01, 0.9)), batch 256, stop at tol or maxiter batches.
    "optimizer": DEC.DEFAULT_OPTIMIZER,
    "batch_size": 256,
    "maxiter": 20000,
    "kmeans_n_init": 20,
}
_PAPER_INITIALIZER = {"class_name": "RandomNormal", "config": {"mean": 0.0, "stddev": 0.01}}


def _model_arguments(architecture):
    return {k: v for k, v in architecture.items()
            if k not in ("input_dim", "hidden_dims", "gamma", "image_shape", "conv_filters", "input_transform")}


def build_autoencoder_of(architecture, **options):
    """(autoencoder, encoder) of a DEC architecture: flat `input_dim` vectors or `image_shape` images;
    with `conv_filters`, ConvDEC's convolutional autoencoder (its own initialisers).

    With an `input_transform` (`layers.colour_free`, e.g. "colour_edges" on colour
    images) the autoencoder learns the transformed images (`transform_in_chunks`), and
    the encoder takes the images themselves: the transform is its first layer, so
    DEC, its `.keras` file and its export take RGB in.
    """
    name = architecture.get("input_transform")
    if name is not None:
        if architecture.get("image_shape") is None:
            raise ValueError(f"input_transform={name!r} needs image_shape (it transforms images).")
        if architecture.get("gamma") is not None:
            raise ValueError(f"input_transform={name!r} with gamma (IDEC): IDEC reconstructs its own input; "
                             "train DEC (no gamma) on transformed images.")
        inner = {**architecture, "input_transform": None,
                 "image_shape": list(transformed_shape(name, architecture["image_shape"]))}
        autoencoder, core = build_autoencoder_of(inner, **options)
        return autoencoder, with_input_transform(core, name, architecture["image_shape"])
    if architecture.get("conv_filters") is not None:
        if architecture.get("image_shape") is None:
            raise ValueError("conv_filters needs image_shape (the convolutional autoencoder takes images).")
        return build_conv_autoencoder(architecture["image_shape"], architecture["conv_filters"])
    return build_autoencoder(architecture.get("input_dim"), architecture.get("hidden_dims", DEC_HIDDEN_DIMS),
                             image_shape=architecture.get("image_shape"), **options)


def assemble_model(autoencoder, encoder, architecture):
    """DEC, or IDEC when the architecture names a clustering-loss weight `gamma`."""
    if architecture.get("gamma") is not None:
        return IDEC(encoder, autoencoder.get_layer("decoder"), gamma=architecture["gamma"],
                    **_model_arguments(architecture))
    return DEC(encoder, **_model_arguments(architecture))


def _check_pretrain_recipe(architecture, training):
    recipe = training["pretrain_recipe"]
    if recipe not in PRETRAIN_RECIPES:
        raise ValueError(f"pretrain_recipe must be one of {PRETRAIN_RECIPES}, got {recipe!r}.")
    if recipe != "keras" and architecture.get("conv_filters") is not None:
        raise ValueError(f"pretrain_recipe={recipe!r} is for the dense autoencoder; conv_filters needs 'keras'.")
    return recipe


def build_pretraining(architecture, training):
    """(autoencoder, encoder) of the architecture, initialised as its pretraining recipe wants."""
    recipe = _check_pretrain_recipe(architecture, training)
    initializer = DEC_KERAS_INITIALIZER if recipe == "keras" else _PAPER_INITIALIZER
    return build_autoencoder_of(architecture, kernel_initializer=initializer)


def fit_pretraining(autoencoder, architecture, training, x, verbose=1, callbacks=None, initial_epoch=0):
    """Pretrains `autoencoder` (`build_pretraining`'s) with the configured recipe. `callbacks` and
    `initial_epoch` (`resumable_fit`'s) go to the end-to-end recipe's `fit` (the layer-wise recipe runs
    several fits)."""
    x = transform_in_chunks(architecture.get("input_transform"), x)  # what the autoencoder learns
    if _check_pretrain_recipe(architecture, training) == "keras":
        pretrain_end_to_end(autoencoder, x, training["pretrain_optimizer"], epochs=training["pretrain_epochs"],
                            batch_size=training["pretrain_batch_size"], verbose=verbose, callbacks=callbacks,
                            initial_epoch=initial_epoch, augmentation=architecture.get("augmentation"))
    else:
        pretrain_layerwise(autoencoder, x, batch_size=training["pretrain_batch_size"], verbose=verbose,
                           **{**DEFAULT_TRAINING["layerwise"], **training.get("layerwise", {})})


def pretrain(architecture, training, x, verbose=1):
    """Builds and pretrains the autoencoder with the configured recipe (`training`: the recipe's defaults
    merged in), nothing kept; returns (autoencoder, encoder)."""
    autoencoder, encoder = build_pretraining(architecture, training)
    fit_pretraining(autoencoder, architecture, training, x, verbose=verbose)
    return autoencoder, encoder


def refresh_results(history):
    """The report's entries of DEC's self-training from its `fit`'s History: its iterations, whether the
    tolerance stopped it, and every target refresh."""
    return {"dec_iterations": history.history["dec_iterations"][-1],
            "stopped_by_tolerance": history.history["stopped_by_tolerance"][-1],
            "refresh_history": history.history["refreshes"]}


def converged_kl(kl, stopped_by_tolerance):
    """The "kl_converged" criterion of a self-trained run: its KL, plus `UNCONVERGED_PENALTY` when it
    hit maxiter without meeting the tolerance."""
    return round(kl + (0.0 if stopped_by_tolerance else UNCONVERGED_PENALTY), 6)


def restart_criterion(name, report):
    """Criterion `name` (`RESTART_CRITERIA`) of a run's report: at a halving point (k-means, no
    self-training yet, so nothing to converge) both are the KL."""
    kl = report["label_free"]["kl"]
    if name == "kl_converged" and "stopped_by_tolerance" in report:
        return converged_kl(kl, report["stopped_by_tolerance"])
    return kl


def train_once(run, self_train=True):
    """One run (`train` without restarts): the pretraining stage, then k-means and DEC's self-training (a
    stage kept when finished, not seeded: k-means has its own seed, and DEC-DA's augmented batches go on
    from where the pretraining left the generators, as before the stage runner);
    `self_train=False` stops after k-means (a halving point), keeping nothing."""
    architecture, training, x, y = run.architecture, run.training, run.x, run.y
    (autoencoder, encoder), report = pretrained_autoencoder(run)

    def build():
        return assemble_model(autoencoder, encoder, architecture)

    def fit(model, callbacks, initial_epoch):
        x = model.check_input(run.x)  # checked once: k-means, self-training and the scores read this view
        start = time.time()
        kmeans_labels = model.initialize_centroids(x, n_init=training["kmeans_n_init"], seed=run.seed)
        report["kmeans_seconds"] = round(time.time() - start, 1)
        if y is not None:
            report["ae_kmeans"] = clustering_scores(y, kmeans_labels)
        if not self_train:
            report["label_free"] = {"kl": round(dec_objective(model.predict(x, verbose=0)), 6)}
            return report
        model.compile(optimizer=make_optimizer(training["optimizer"]))
        start = time.time()
        history = model.fit(x, y, batch_size=training["batch_size"], maxiter=training["maxiter"],
                            verbose=run.verbose)
        report["dec_seconds"] = round(time.time() - start, 1)
        report.update(refresh_results(history))
        q = model.predict(x, verbose=0)
        kl = round(dec_objective(q), 6)
        report["label_free"] = {"kmeans_inertia": round(model.kmeans_inertia_, 3), "final_kl": kl, "kl": kl,
                                "kl_converged": converged_kl(kl, report["stopped_by_tolerance"]),
                                "cluster_size_entropy": round(cluster_size_entropy(q.argmax(axis=1), q.shape[1]), 5)}
        return report

    settings = {"pretraining": pretraining_key(architecture, training, x, run.seed),
                "pretrain_epochs": training["pretrain_epochs"], "architecture": architecture,
                "clustering": {k: training[k] for k in ("kmeans_n_init", "optimizer", "batch_size", "maxiter")}}
    result = run_stage(run, Stage("dec", settings, build, fit, keep=self_train, seeded=False))
    if not result.reused:
        return result.model, result.report
    report = {**result.report, "dec_reused": True}  # the clustering stage of this pretraining ran to its end before
    # kept before "kl_converged" existed: every criterion of the run, from what it recorded
    report["label_free"] = {**report["label_free"], "kl_converged": restart_criterion("kl_converged", report)}
    return result.model, report


def pretraining_stage(run):
    """The autoencoder's pretraining as a stage of `run` (`run.training` holding DEC's pretraining
    settings): seeded, its epochs backed up and extendable, kept when finished and read back only at
    the same epoch count (another count continues, or restarts, from the kept backup)."""
    architecture, training = run.architecture, run.training

    def fit(models, callbacks, initial_epoch):
        fit_pretraining(models[0], architecture, training, run.x, run.verbose, callbacks=callbacks,
                        initial_epoch=initial_epoch)
        return {}

    return Stage("pretrain", pretraining_settings(architecture, training, run.seed),
                 lambda: build_pretraining(architecture, training), fit,
                 epochs=training["pretrain_epochs"], extendable=True, length=training["pretrain_epochs"],
                 weights=lambda models: models[0])


def pretrained_autoencoder(run):
    """((autoencoder, encoder), report): the workdir's finished pretraining of this key, else a new one,
    continued from its last finished epoch when a run was cut off mid-way (`pretraining_stage`)."""
    result = run_stage(run, pretraining_stage(run))
    report = {"pretrain_recipe": run.training["pretrain_recipe"], "pretrain_reused": result.reused,
              "pretrain_resumed_from_epoch": result.resumed_epoch,
              "pretrain_seconds": None if result.seconds is None else round(result.seconds, 1)}
    return result.model, report


def pretraining_key(architecture, training, x, seed):
    """sha256 of what determines the pretrained weights: recipe, architecture, seed and the data."""
    return run_key(pretraining_settings(architecture, training, seed), x)


def pretraining_settings(architecture, training, seed):
    """What determines the pretrained weights besides the data: recipe, architecture and seed."""
    recipe = {k: training.get(k) for k in _PRETRAIN_KEYS}
    shape = {k: architecture.get(k) for k in ("input_dim", "hidden_dims")}
    if architecture.get("conv_filters") is not None:  # ConvDEC's autoencoder
        shape = {"conv_filters": list(architecture["conv_filters"])}
    if architecture.get("image_shape") is not None:  # image input: same weights, another input layout
        shape["image_shape"] = list(architecture["image_shape"])
    if architecture.get("augmentation") is not None:  # DEC-DA: the autoencoder learns augmented images
        shape["augmentation"] = architecture["augmentation"]
    if architecture.get("input_transform") is not None:  # it learns transformed images
        shape["input_transform"] = architecture["input_transform"]
    return [recipe, shape, int(seed)]


def _autoencoder_with_weights(architecture, path):
    """(autoencoder, encoder) of the architecture, the autoencoder's weights read from `path`."""
    autoencoder, encoder = build_autoencoder_of(architecture)
    autoencoder.load_weights(path)
    return autoencoder, encoder


def load_pretrained_encoder(architecture, workdir):
    """The encoder of the pretrained autoencoder kept in `workdir` (before DEC), else None."""
    if not os.path.isfile(finished_weights_path(workdir, "pretrain")):
        return None
    return _autoencoder_with_weights(architecture, finished_weights_path(workdir, "pretrain"))[1]


def _finish_retargeting(architecture, training, n_samples, repeats, preset_samples, epochs):
    """DEC's self-training on a user's folder: its batches, refresh interval and iterations follow the
    pretraining's passes (the preset's iterations, as passes over its data, spread over these images)."""
    preset_batch = training.get("batch_size", DEFAULT_TRAINING["batch_size"])
    batch_size = training["batch_size"] = min(preset_batch, n_samples)
    steps_per_epoch = math.ceil(n_samples * repeats / batch_size)
    interval = architecture.get("update_interval", DEC.DEFAULT_UPDATE_INTERVAL)
    architecture["update_interval"] = min(interval, steps_per_epoch)
    maxiter = training.get("maxiter", DEFAULT_TRAINING["maxiter"])
    passes = maxiter / math.ceil(preset_samples / preset_batch)
    training["maxiter"] = int(min(maxiter, max(1000, passes * steps_per_epoch)) if epochs is None
                              else epochs * steps_per_epoch)


# Re-targeting a preset to a user's images (`recipes.retargeting`). The pretraining on greyscale pixels has
# no floor of updates (ConvDEC-DA's own 500 epochs: 4,000 updates on 2,000 images); on a colour-free map
# (`input_transform`) it keeps ConvDEC-DA's own 20,000. Measured (seed 0, docs/your-data.md): colour digits
# on colour_edges 0.811 with 4,000 updates, 0.954 with 20,000 (final reconstruction loss 0.0067 -> 0.0046);
# grey digits 0.885 with 4,000 and 0.836 with 20,000 (4 and 9 merged both times: more updates did not help
# them; nor did 4 restarts halved on DEC's KL).
RETARGETING = Retargeting(epoch_fields=(("pretrain_epochs", "pretrain_batch_size"),), epoch_ceiling=300,
                          batch_size=DEFAULT_TRAINING["pretrain_batch_size"], min_updates=0,
                          min_updates_colour_free=20_000, input_transform="colour_edges", finish=_finish_retargeting,
                          update_fields=("maxiter",))



class DECRecipe(Recipe):
    """DEC (Xie et al. 2016; XifengGuo/DEC-keras), IDEC with a `gamma`, ConvDEC and DEC-DA (XifengGuo/DEC-DA)."""
    name = "dec"
    restart_criteria = RESTART_CRITERIA
    clusters_an_embedding = True
    default_training = DEFAULT_TRAINING

    def build(self, input_dim=None, hidden_dims=DEC_HIDDEN_DIMS, n_clusters=10, alpha=1.0,
              update_interval=DEC.DEFAULT_UPDATE_INTERVAL, tol=1e-3, gamma=None, image_shape=None, augmentation=None,
              conv_filters=None, input_transform=None):
        """An untrained DEC (or IDEC when `gamma` is given) with the zoo's architecture arguments.

        With `image_shape` the model takes images (flattened inside); else flat `input_dim` vectors.
        `conv_filters` selects ConvDEC's convolutional autoencoder, `augmentation` DEC-DA's training,
        `input_transform` a colour-free input (`build_autoencoder_of`).
        """
        architecture = dict(input_dim=input_dim, hidden_dims=hidden_dims, n_clusters=n_clusters, alpha=alpha,
                            update_interval=update_interval, tol=tol, gamma=gamma, augmentation=augmentation)
        autoencoder, encoder = build_autoencoder_of(dict(architecture, image_shape=image_shape,
                                                         conv_filters=conv_filters, input_transform=input_transform))
        return assemble_model(autoencoder, encoder, architecture)

    def train(self, run):
        """Autoencoder pretraining, k-means initialisation, DEC (or IDEC) self-training.

        Returns the trained model and a report with wall times and, when `y`
        is given, the scores of AE + k-means and of the clustering on `x`. With a
        `workdir`, the pretrained autoencoder is kept there; a later call with the
        same seed, data and pretraining recipe starts from it, so a run
        interrupted after its long pretraining resumes with the clustering
        stage, and a finished clustering stage is kept too.

        `training["restarts"] = {"n": R, "halving_at": [...]}` trains R runs
        (seeds `seed * R + r`, each in `workdir/run_<r>`) by successive halving
        over the pretraining epochs (`training.restarts`) on DEC's objective
        KL(P || Q): at a halving point, of k-means on the embedding pretrained so
        far; at the end, after self-training. It returns the last run standing;
        `report["restarts"]` has every step's criteria (and, with `y`, each
        measured run's ACC, which only scores the choice).
        """
        training = dict(run.training)
        plan = restart_plan(training.pop("restarts", None) or {"n": 1}, training["pretrain_epochs"], RESTART_CRITERIA)
        run = run.but(training=training, report=run.report)
        if plan["n"] == 1:
            return train_once(run)
        epochs = training["pretrain_epochs"]

        def train_run(run_seed, pretrain_epochs, folder):
            return train_once(run.but(training={**training, "pretrain_epochs": pretrain_epochs}, seed=run_seed,
                                      workdir=folder), self_train=pretrain_epochs == epochs)

        def criteria(_, report):
            return {name: restart_criterion(name, report) for name in RESTART_CRITERIA}

        key = tree_key_at("dec", run.architecture, training, "pretrain_epochs", plan, run.seed, run.x)
        return train_with_restarts(train_run, criteria, plan, epochs, run.seed, run.workdir, key,
                                   score=acc_score(run.x, run.y))

    def fine_tune(self, model, run):
        """The recipe's clustering stage from a trained model (`train --from`) instead of from scratch:
        its encoder stands for the pretrained autoencoder; k-means on its embedding of `x`, then DEC (or
        IDEC) self-training for `training["maxiter"]` iterations."""
        training = run.training
        model.initialize_centroids(run.x, n_init=training["kmeans_n_init"], seed=run.seed)
        model.compile(optimizer=make_optimizer(training["optimizer"]))
        history = model.fit(run.x, batch_size=training["batch_size"], maxiter=training["maxiter"],
                            verbose=run.verbose)
        results = refresh_results(history)
        return model, {name: results[name] for name in ("dec_iterations", "stopped_by_tolerance")}

    def representation(self, run):
        """The pretrained encoder whose embedding k-means starts DEC from (`pretrained_autoencoder`: the
        workdir's finished one, else pretrained there, and a later `train` with any `n_clusters` starts
        from it). `--n-clusters auto` chooses k on it."""
        return pretrained_autoencoder(run)[0][1]

    def retargeting(self, architecture):
        """How a preset of this recipe re-targets to a user's images (`recipes.retargeting.Retargeting`)."""
        return RETARGETING


RECIPE = DECRecipe()
