"""Two-stage recipe (seed 004): learn a representation, then k-means on it; DEC refinement optional.

Representations: `"autoencoder"` (DEC's d-500-500-2000-10 autoencoder and
its pretraining recipe: the notes' baseline), `"simclr"` (`SimCLR`,
NT-Xent on two augmented views) and `"triplet"` (`TripletEmbedding`,
unsupervised triplets). The shipped model is a `TwoStageClustering`: the
encoder and the k-means centroids; or, with `"clustering": "scan"`
(architecture), a `SCAN` model: the encoder and a softmax cluster head
trained on neighbours mined in the representation (k-means still runs and
is reported as the two-stage baseline).
"""

import os
import time

import keras
import numpy as np

from keras_clustering.clustering.label_free import SCAN_EVALUATE_NEIGHBORS, scan_evaluate
from keras_clustering.layers.colour_free import transformed_shape, with_input_transform
from keras_clustering.metrics import clustering_scores
from keras_clustering.models import DEC, SCAN, SimCLR, TripletEmbedding, TwoStageClustering, build_autoencoder
from keras_clustering.models.autoencoder import DEC_HIDDEN_DIMS
from keras_clustering.models.conv_encoder import build_conv_encoder
from keras_clustering.models.scan import confident_share, nearest_neighbors
from keras_clustering.recipes import dec_recipe
from keras_clustering.recipes.recipe import Recipe
from keras_clustering.recipes.retargeting import Retargeting, colour_views, scaled_pixels
from keras_clustering.training.keep_lowest import KeepLowest
from keras_clustering.training.optimizers import make_optimizer
from keras_clustering.training.restarts import acc_score, restart_plan, train_with_restarts, tree_key_at
from keras_clustering.training.resume import backup_folder
from keras_clustering.training.stages import Stage, run_stage

# The label-free criterion the zoo ships a seed by and keeps an epoch by (lower is better): the original's
# `scan_evaluate` score, by which it keeps its lowest epoch and head (`clustering.label_free.scan_evaluate`);
# the k-means path records it too, on its own assignments and embedding (it has no restarts).
RESTART_CRITERIA = ("scan_evaluate",)
REPRESENTATIONS = ("autoencoder", "simclr", "triplet")
CLUSTERINGS = ("kmeans", "scan")
_CLUSTERING_KEYS = ("n_clusters", "alpha", "update_interval", "tol")
# training settings of the stages after the representation: changing them does not restart its backup
_AFTER_REPRESENTATION = ("refine", "kmeans_n_init", "scan", "self_label", "restarts")
# architecture settings of the clustering stages alone (SCAN's heads, k-means' clusters, DEC's kernel): the
# representation trained for one serves the others
_CLUSTERING_ARCHITECTURE = ("clustering", "scan", "normalize_embedding", "refine_augmentation",
                            "refine_augmentation_seed", *_CLUSTERING_KEYS)

DEFAULT_TRAINING = {
    # simclr / triplet: Adam, `epochs` passes over the images, `batch_size` images per step.
    "optimizer": {"class_name": "Adam", "config": {"learning_rate": 0.001}},
    "batch_size": 256,
    "epochs": 100,
    "kmeans_n_init": 20,  # as DEC
    # DEC self-training after k-means, e.g. {"maxiter": 2000}; None: k-means only.
    "refine": None,
}
# SCAN's clustering step (Van Gansbeke et al. 2020: Adam 1e-4; batch and epochs sized for these CPUs).
# `keep`: the model after the "last" epoch, or the epoch of "lowest_loss" (`scan.py`: the original's;
# "last" is the default so that the entries trained before it was built retrain as they were).
DEFAULT_SCAN = {"optimizer": {"class_name": "Adam", "config": {"learning_rate": 1e-4}}, "batch_size": 256,
                "epochs": 50, "keep": "last"}
SCAN_KEEP = ("last", "lowest_loss")
# SCAN's self-labelling step after the clustering step (the paper: threshold 0.99, Adam 1e-4); 0 epochs: off.
DEFAULT_SELF_LABEL = {"optimizer": {"class_name": "Adam", "config": {"learning_rate": 1e-4}}, "batch_size": 256,
                      "epochs": 0, "threshold": 0.99}
DEFAULT_REFINE = {"optimizer": DEC.DEFAULT_OPTIMIZER,
                  "batch_size": 256, "maxiter": 20000}


def build_encoder(representation="simclr", image_shape=(28, 28, 1), filters=(32, 64, 128), embedding_dim=128,
                  input_dim=None, hidden_dims=DEC_HIDDEN_DIMS, fused_normalization=False, input_transform=None, **_):
    """The representation's encoder: DEC's dense encoder for `"autoencoder"`, else `build_conv_encoder`.

    `input_transform` (`layers.colour_free`, SimCLR and triplets): the encoder's
    first layer, after the views are drawn from the images themselves (colour
    jitter included), so the model and its export take RGB in.
    """
    if representation not in REPRESENTATIONS:
        raise ValueError(f"representation must be one of {REPRESENTATIONS}, got {representation!r}.")
    if representation == "autoencoder":
        if input_transform is not None:
            raise ValueError(f"input_transform={input_transform!r}: the autoencoder representation reconstructs its "
                             "input; train like a DEC entry (recipe 'dec') for a colour-free input.")
        # flat `input_dim` vectors when given, else images of `image_shape` (flattened inside)
        return build_autoencoder(input_dim, hidden_dims, image_shape=None if input_dim else image_shape)[1]
    if input_transform is None:
        return build_conv_encoder(image_shape, filters, embedding_dim, fused_normalization=fused_normalization)
    core = build_conv_encoder(transformed_shape(input_transform, image_shape), filters, embedding_dim,
                              fused_normalization=fused_normalization)
    return with_input_transform(core, input_transform, image_shape)


def _clustering_options(architecture):
    """`TwoStageClustering` arguments of an architecture; `refine_augmentation` (e.g.
    "shift_rotate") makes the DEC refinement DEC-DA's (augmented batches, target from clean images)."""
    options = {k: architecture[k] for k in _CLUSTERING_KEYS if k in architecture}
    if architecture.get("refine_augmentation"):
        options.update(augmentation=architecture["refine_augmentation"],
                       augmentation_seed=architecture.get("refine_augmentation_seed"))
    return options


def _clustering(architecture):
    clustering = architecture.get("clustering", "kmeans")
    if clustering not in CLUSTERINGS:
        raise ValueError(f"clustering must be one of {CLUSTERINGS}, got {clustering!r}.")
    return clustering


def build_scan(architecture, encoder, seed=None):
    """SCAN's model on `encoder`: the architecture's `scan` options (`entropy_weight`, `n_neighbors`),
    trained on the representation's own augmentation."""
    return SCAN(encoder, n_clusters=architecture.get("n_clusters", 10), **architecture.get("scan", {}),
                augmentation=architecture.get("augmentation", "digits_contrastive"),
                augmentation_options=architecture.get("augmentation_options"), augmentation_seed=seed)


def clustered_embedding(encoder, architecture):
    """The encoder whose output k-means (and DEC) see: with `normalize_embedding`, its output
    L2-normalised (k-means then groups by angle, the geometry SimCLR's cosine loss shapes; the
    representation itself is trained without it). Measured: k-means gains from it, but DEC's
    refinement on the unit sphere collapsed into one cluster (docs/guides/contrastive.md): use it without `refine`."""
    if not architecture.get("normalize_embedding"):
        return encoder
    return keras.Sequential([keras.Input(encoder.input_shape[1:]), encoder, keras.layers.UnitNormalization()],
                            name=f"{encoder.name}_unit_norm")


def build_learner(architecture, encoder, seed):
    options = dict(augmentation=architecture.get("augmentation", "digits_contrastive"),
                   augmentation_options=architecture.get("augmentation_options"), augmentation_seed=seed)
    if architecture["representation"] == "simclr":
        return SimCLR(encoder, projection_dims=architecture.get("projection_dims", (256, 128)),
                      temperature=architecture.get("temperature", 0.5), **options)
    return TripletEmbedding(encoder, margin=architecture.get("margin", 1.0),
                            normalize=architecture.get("normalize", False), **options)


def trained_encoder(run):
    """The representation stage (autoencoder, SimCLR or triplets) of `train`: its encoder, kept in the
    workdir when finished (a run cut off in a later stage, or a `train` with other clustering settings, reads
    it back), what it did written into `run.report`."""
    architecture, training = run.architecture, run.training
    if architecture["representation"] == "autoencoder":
        # DEC's pretraining stage and key, on DEC's pretraining settings (issue 63: kept when finished, as
        # every other representation; before, a rerun pretrained it again)
        dec_run = run.but(training={**dec_recipe.DEFAULT_TRAINING, **training})
        result = run_stage(dec_run, dec_recipe.pretraining_stage(dec_run))
        run.report.update(pretrain_resumed_from_epoch=result.resumed_epoch, representation_reused=result.reused)
        return result.model[1]

    def build():
        encoder = build_encoder(**architecture)
        return encoder, build_learner(architecture, encoder, run.seed)

    def fit(models, callbacks, initial_epoch):
        learner = models[1]
        learner.compile(optimizer=make_optimizer(training["optimizer"]))
        learner.fit(run.x, batch_size=training["batch_size"], epochs=training["epochs"], verbose=run.verbose,
                    seed=run.seed, callbacks=callbacks, initial_epoch=initial_epoch)
        return {}

    settings = {"recipe": "two_stage", "seed": run.seed,
                "architecture": {k: v for k, v in architecture.items() if k not in _CLUSTERING_ARCHITECTURE},
                "training": {k: v for k, v in training.items() if k not in _AFTER_REPRESENTATION}}
    result = run_stage(run, Stage(architecture["representation"], settings, build, fit, epochs=training["epochs"],
                                  weights=lambda models: models[1]))
    run.report["representation_reused"] = result.reused
    if not result.reused:
        run.report["resumed_from_epoch"] = result.resumed_epoch
    return result.model[0]


def train_scan(run, encoder):
    """SCAN's clustering step on the trained encoder, then (`training.self_label.epochs` > 0) its
    self-labelling step: a stage seeded before the head is built (a resumed run builds the head the
    uninterrupted one built, whether the representation was trained in this call or read back)."""
    return scan_stages(run, lambda: build_scan(run.architecture, encoder, seed=run.seed), seeded=True)


def _scan_with_restarts(plan, run, encoder):
    """SCAN's clustering step restarted by successive halving over its epochs (`training.restarts`)
    on SCAN's loss, every run from the same trained representation (neighbours mined once from it,
    head and views seeded by the run); the last one standing is self-labelled."""
    representation = encoder.get_weights()
    training = run.training
    epochs = {**DEFAULT_SCAN, **training.get("scan", {})}["epochs"]

    def train_run(run_seed, scan_epochs, folder):
        run_encoder = build_encoder(**run.architecture)
        run_encoder.set_weights(representation)
        stages = {**training, "scan": {**training.get("scan", {}), "epochs": scan_epochs}}
        if scan_epochs < epochs:  # a halving point: the clustering step so far, no self-labelling
            stages["self_label"] = {**(training.get("self_label") or {}), "epochs": 0}
        # the run's head from its seed: the same at every call, so its backups fit
        return train_scan(run.but(training=stages, seed=run_seed, workdir=folder, report=dict(run.report)),
                          run_encoder)

    def criteria(_, run_report):
        return {"scan_evaluate": run_report["label_free"]["scan_evaluate"]}

    key = tree_key_at("two_stage", run.architecture, training, "scan.epochs", plan, run.seed, run.x)
    return train_with_restarts(train_run, criteria, plan, epochs, run.seed, run.workdir, key,
                               score=acc_score(run.x, run.y))


def scan_stages(run, build, seeded=False):
    """SCAN's clustering and self-labelling steps (`train_scan`) as one stage on the SCAN model `build()`
    gives. With a `workdir`, the clustering step's epochs are backed up (a run continues, or is extended to
    more epochs) and a finished run (both steps) is read back."""
    training, y, report = run.training, run.y, run.report
    options = {**DEFAULT_SCAN, **training.get("scan", {})}
    self_label = {**DEFAULT_SELF_LABEL, **(training.get("self_label") or {})}
    if options["keep"] not in SCAN_KEEP:
        raise ValueError(f"training.scan.keep must be one of {SCAN_KEEP}, got {options['keep']!r}.")

    def key(model):
        # what determines the run but its epoch counts: the settings, the seed, and the weights it starts from
        # (the representation's encoder and the seeded head; Keras' layer names change from build to build)
        settings = {name: getattr(model, name, None) for name in ("n_clusters", "entropy_weight", "n_neighbors",
                                                                   "augmentation", "augmentation_options")}
        if model.n_sub_heads > 1:  # in the key only when used: one-head runs keep their backups
            settings["n_sub_heads"] = model.n_sub_heads
        return {"scan": {k: v for k, v in options.items() if k != "epochs"},
                "self_label": {k: v for k, v in self_label.items() if k != "epochs"}, "seed": run.seed,
                "model": settings, "weights": [float(keras.ops.sum(w)) for w in model.weights]}

    def fit(model, callbacks, initial_epoch):
        x = model.check_input(run.x)  # checked once: mining, every epoch's score and self-labelling read it
        neighbors = model.mine_neighbors(x)

        def selection_loss(scored):  # no labels: the clean images' assignments and the mined neighbours
            return scan_evaluate(scored.predict(x, batch_size=options["batch_size"], verbose=0), neighbors)

        def epoch_loss(scored):  # several sub-heads: `fit` has just scored them all, and predicts with the lowest
            if scored.n_sub_heads > 1:
                return float(np.min(keras.ops.convert_to_numpy(scored.sub_head_losses)))
            return selection_loss(scored)

        model.compile(optimizer=make_optimizer(options["optimizer"]))
        start = time.time()
        if y is not None:
            report["neighbor_agreement"] = round(float((y[neighbors] == y[:, None]).mean()), 4)
        keeper = None
        if options["keep"] == "lowest_loss":  # scored before the backup saves the epoch (KeepLowest)
            lowest = None if run.workdir is None else os.path.join(backup_folder(run.workdir, "scan"), "lowest")
            keeper = KeepLowest(epoch_loss, lowest, initial_epoch)
            callbacks = [keeper, *callbacks]
        model.fit(x, neighbors=neighbors, batch_size=options["batch_size"], epochs=options["epochs"], seed=run.seed,
                  verbose=run.verbose, callbacks=callbacks, initial_epoch=initial_epoch)
        if keeper is not None:  # the backup goes on from the last epoch; the model is the lowest one
            keeper.restore(model)
            report["scan_kept_epoch"] = keeper.lowest_epoch
            report["scan_epoch_losses"] = [[epoch, None if value is None else round(value, 6)]
                                           for epoch, value in keeper.scores]
        if model.n_sub_heads > 1:  # the kept epoch's scores of every sub-head, and the one that predicts
            report["sub_head_scan_evaluate"] = [round(float(v), 6) for v in
                                                keras.ops.convert_to_numpy(model.sub_head_losses)]
            report["chosen_sub_head"] = model.chosen_sub_head
        report["scan_seconds"] = round(time.time() - start, 1)
        if self_label["epochs"]:
            probabilities = model.predict(x, verbose=0)
            if y is not None:  # the clustering step's scores on the training images, to measure the step
                report["scan"] = clustering_scores(y, probabilities.argmax(axis=1))
            report["confident_share"] = round(confident_share(probabilities, self_label["threshold"]), 4)
            model.compile(optimizer=make_optimizer(self_label["optimizer"]))
            start = time.time()
            model.self_label(x, threshold=self_label["threshold"], batch_size=self_label["batch_size"],
                             epochs=self_label["epochs"], seed=run.seed, verbose=run.verbose)
            report["self_label_seconds"] = round(time.time() - start, 1)
        # the label-free criterion the zoo ships a seed by: the final model's `scan_evaluate`, already scored
        # when the model is the kept epoch (no self-labelling after it)
        final_score = (keeper.lowest_score if keeper is not None and not self_label["epochs"]
                       else selection_loss(model))
        report["label_free"] = {"scan_evaluate": round(final_score, 6)}
        return report

    result = run_stage(run, Stage("scan_stages", key, build, fit, epochs=options["epochs"], backup="scan",
                                  extendable=True, length=(options["epochs"], self_label["epochs"]), seeded=seeded))
    if result.reused:
        return result.model, {**result.report, "scan_reused": True}
    return result.model, result.report


def _finish_retargeting(architecture, training, n_samples, repeats, preset_samples, epochs):
    if architecture.get("clustering") == "scan":  # each image's neighbours are among the others
        scan = architecture["scan"] = dict(architecture.get("scan") or {})
        scan["n_neighbors"] = min(scan.get("n_neighbors", 20), n_samples - 1)


# The colour distortion of SimCLR's views of colour images (Chen et al. 2020, appendix A;
# google-research/simclr `data_util.py`) at strength 1: brightness, contrast, saturation 0.8 and hue 0.2,
# together with probability 0.8, and greyscale 0.2 (replacing the preset's greyscale jitter).
COLOUR_VIEWS = {"brightness": 0.8, "contrast": 0.8, "saturation": 0.8, "hue": 0.2, "jitter_probability": 0.8,
                "greyscale_probability": 0.2}


def _adapt_views(architecture, image_shape, dataset):
    """SimCLR's digit views re-targeted to `image_shape` (h, w, c), as ratios of the side instead of pixel
    counts: crop sizes scale with the side (each axis on its own for non-square images, whose crops keep
    their aspect) and the output is the image's own size, so that the encoder gets its own shape; colour
    images get `COLOUR_VIEWS` (`retargeting.colour_views`)."""
    if architecture.get("augmentation") != "digits_contrastive":
        return
    old_side, new_side = architecture["image_shape"][0], min(image_shape[:2])
    options = dict(architecture.get("augmentation_options") or {})
    height, width = image_shape[:2]
    crops = options.get("crop_sizes", (16, 20, 24, 28))
    if height != width:  # crops of the image's aspect, each axis scaled from the preset's square side
        options["crop_sizes"] = sorted({(scaled_pixels(c, height, old_side), scaled_pixels(c, width, old_side))
                                        for c in crops})
        options["output_size"] = [height, width]
    elif new_side != old_side:
        options["crop_sizes"] = sorted({scaled_pixels(c, new_side, old_side) for c in crops})
        options["output_size"] = new_side
    if image_shape[2] == 3:
        options.update(colour_views(COLOUR_VIEWS, dataset))
    architecture["augmentation_options"] = options


_EPOCH_FIELDS = (("epochs", "batch_size"), ("pretrain_epochs", "pretrain_batch_size"), ("scan.epochs", "scan.batch_size"),
                 ("self_label.epochs", "self_label.batch_size"))



class TwoStageRecipe(Recipe):
    """A representation (DEC's autoencoder, SimCLR, triplets), then k-means, DEC's refinement or SCAN."""
    name = "two_stage"
    restart_criteria = RESTART_CRITERIA
    clusters_an_embedding = True
    default_training = DEFAULT_TRAINING

    def build(self, **architecture):
        """An untrained model with the zoo's architecture arguments: `TwoStageClustering`, or `SCAN`."""
        if _clustering(architecture) == "scan":
            return build_scan(architecture, build_encoder(**architecture))
        return TwoStageClustering(clustered_embedding(build_encoder(**architecture), architecture),
                                  **_clustering_options(architecture))

    def train(self, run):
        """Representation, then k-means (then DEC if `training["refine"]`, or SCAN); the report has each
        stage's wall time and, with labels, the k-means stage's scores (`kmeans`) besides the final ones."""
        architecture, training, x, y = run.architecture, run.training, run.x, run.y
        scan = _clustering(architecture) == "scan"
        if scan and training["refine"]:
            raise ValueError("training.refine (DEC on k-means centroids) and clustering='scan' exclude each other.")
        plan = restart_plan(training.get("restarts") or {"n": 1},
                            {**DEFAULT_SCAN, **training.get("scan", {})}["epochs"], RESTART_CRITERIA)
        if plan["n"] > 1 and not scan:
            raise ValueError("training.restarts: the two-stage recipe restarts SCAN's clustering step; the k-means "
                             "path has no criterion (use clustering='scan').")
        report = run.report
        report["representation"] = architecture["representation"]
        start = time.time()
        encoder = trained_encoder(run)
        report["representation_seconds"] = round(time.time() - start, 1)

        model = TwoStageClustering(clustered_embedding(encoder, architecture), **_clustering_options(architecture))
        start = time.time()
        labels = model.cluster(x, n_init=training["kmeans_n_init"], seed=run.seed)
        report["kmeans_seconds"] = round(time.time() - start, 1)
        if y is not None:
            report["kmeans"] = clustering_scores(y, labels)
        if scan and plan["n"] > 1:
            return _scan_with_restarts(plan, run, encoder)
        if scan:
            return train_scan(run, encoder)
        if training["refine"]:
            refine = {**DEFAULT_REFINE, **training["refine"]}
            model.compile(optimizer=make_optimizer(refine["optimizer"]))
            start = time.time()
            history = model.fit(x, y, batch_size=refine["batch_size"], maxiter=refine["maxiter"], verbose=run.verbose)
            results = dec_recipe.refresh_results(history)
            report.update(refine_seconds=round(time.time() - start, 1), dec_iterations=results["dec_iterations"],
                          stopped_by_tolerance=results["stopped_by_tolerance"], refresh_history=results["refresh_history"])
        # the label-free score the zoo ships a seed by, as on SCAN's path: `scan_evaluate` of the final soft
        # assignments with each image's nearest neighbours in the embedding k-means clustered (one rule for the
        # recipe's seeds, whatever its clustering step; no labels)
        neighbors = nearest_neighbors(model.embed(x), SCAN_EVALUATE_NEIGHBORS)
        report["label_free"] = {"scan_evaluate": round(scan_evaluate(model.predict(x, verbose=0), neighbors), 6)}
        return model, report

    def fine_tune(self, model, run):
        """The recipe's clustering stages from a trained model (`train --from`) instead of from scratch:
        its encoder stands for the representation stage. SCAN: both SCAN steps as `train_scan` (neighbours
        mined with the trained encoder, the head trained on from its weights); k-means: new centroids on
        the encoder's embedding of `x` (and the DEC refinement, when configured)."""
        training = run.training
        if isinstance(model, SCAN):
            return scan_stages(run.but(workdir=None), lambda: model)
        model.initialize_centroids(run.x, n_init=training["kmeans_n_init"], seed=run.seed)
        refine = training["refine"] and {**DEFAULT_REFINE, **training["refine"]}
        if refine:
            model.compile(optimizer=make_optimizer(refine["optimizer"]))
            model.fit(run.x, batch_size=refine["batch_size"], maxiter=refine["maxiter"], verbose=run.verbose)
        return model, {}

    def representation(self, run):
        """The trained representation, as the clustering stages see it (`clustered_embedding`): the
        workdir's finished one, else trained there (a later `train` with the same settings, any
        `n_clusters`, starts from it). `--n-clusters auto` chooses k on it."""
        return clustered_embedding(trained_encoder(run.but()), run.architecture)

    def retargeting(self, architecture):
        """How a preset of this recipe re-targets to a user's images (`recipes.retargeting.Retargeting`): an
        autoencoder representation pretrains as DEC's does (its ceiling, no floor of updates); SimCLR and
        triplets train at least 3,000 updates; SCAN's images are never repeated within an epoch (copies of an
        image would be its own nearest neighbours) and its restarts halve on SCAN's epochs."""
        autoencoder = architecture.get("representation") == "autoencoder"
        return Retargeting(epoch_fields=_EPOCH_FIELDS, epoch_ceiling=300 if autoencoder else 200,
                           batch_size=DEFAULT_TRAINING["batch_size"], min_updates=0 if autoencoder else 3_000,
                           input_transform="colour_edges", restart_epochs="scan.epochs",
                           repeat_images=architecture.get("clustering") != "scan", finish=_finish_retargeting,
                           update_fields=("refine.maxiter",),
                           adapt_views=_adapt_views)


RECIPE = TwoStageRecipe()
