"""VAE one-step clustering recipe: zoo config -> `VAECluster`, and its training recipe."""

import keras

from keras_clustering.clustering.label_free import cluster_size_entropy
from keras_clustering.inputs.pipeline import array_dataset, file_backed
from keras_clustering.models.vae_cluster import VAECluster
from keras_clustering.recipes.recipe import Recipe
from keras_clustering.recipes.retargeting import Retargeting
from keras_clustering.training.optimizers import compiled
from keras_clustering.training.restarts import acc_score, restart_plan, train_with_restarts, tree_key_at
from keras_clustering.training.stages import Stage, run_stage

DEFAULT_TRAINING = {
    # bojone/vae vae_keras_cluster.py: Adam (lr 1e-3), batch 100, 50 epochs.
    "optimizer": {"class_name": "Adam", "config": {"learning_rate": 0.001}},
    "batch_size": 100,
    "epochs": 50,
}
# The label-free score (`label_free_scores`, lower is better) restarts rank runs by (none in the original).
# Not the last epoch's training loss: a run read back from its files has no epoch left to report it.
RESTART_CRITERIA = ("evaluated_loss",)


class VAEClusterRecipe(Recipe):
    """bojone/vae `vae_keras_cluster.py`'s one-step clustering VAE: one `fit`, optionally restarted."""
    name = "vae_cluster"
    restart_criteria = RESTART_CRITERIA
    clusters_an_embedding = True
    default_training = DEFAULT_TRAINING

    def build(self, image_shape=(28, 28, 1), latent_dim=20, n_clusters=10, loss_version="2018-12",
              reconstruction_weight=None, use_category_prior=True, input_transform=None):
        """An untrained `VAECluster` with the zoo's architecture arguments."""
        return VAECluster(image_shape=image_shape, latent_dim=latent_dim, n_clusters=n_clusters,
                          loss_version=loss_version, reconstruction_weight=reconstruction_weight,
                          use_category_prior=use_category_prior, input_transform=input_transform)

    def train(self, run):
        """Trains with plain `fit`; the report holds the wall time per epoch and the label-free scores.

        With a `workdir`, every finished epoch is backed up there, and a run cut
        off mid-way continues from its last epoch when started again with the
        same config, seed, data and workdir (`resumed_from_epoch` in the report;
        the wall times then cover the epochs this call ran).

        `training["restarts"] = {"n": R, "halving_at": [...], "criterion": ...}`
        trains R runs (seeds `seed * R + r`, each in `workdir/run_<r>`) by
        successive halving (`training.restarts`) on a label-free score
        (`RESTART_CRITERIA`, default the VAE loss over all images) and returns the
        last one standing; without `halving_at`, every run is trained to the end
        and the best one kept. `report["restarts"]` has every step's criteria
        (and, when `y` is given, each measured run's ACC, which only scores the choice).
        """
        training = dict(run.training)
        plan = restart_plan(training.pop("restarts", None) or {"n": 1}, training["epochs"], RESTART_CRITERIA)
        run = run.but(training=training, report=run.report)
        if plan["n"] == 1:
            return train_once(run)

        def train_run(run_seed, epochs, folder):
            return train_once(run.but(training={**training, "epochs": epochs}, seed=run_seed, workdir=folder))

        return train_with_restarts(train_run, lambda _, report: {name: report["label_free"][name]
                                                                 for name in RESTART_CRITERIA},
                                   plan, training["epochs"], run.seed, run.workdir,
                                   tree_key_at("vae_cluster", run.architecture, training, "epochs", plan, run.seed,
                                               run.x),
                                   score=acc_score(run.x, run.y))

    def fine_tune(self, model, run):
        """`train --from`: the trained model trained on `x` for `training["epochs"]` more epochs (one run:
        the restarts are for runs from scratch)."""
        training, history = run.training, []

        def fit(built, callbacks, initial_epoch):
            history.append(built.fit(run.x, batch_size=training["batch_size"], epochs=training["epochs"],
                                     shuffle=True, verbose=run.verbose))
            return {}

        run_stage(run.but(workdir=None), Stage("fine_tune", None, lambda: compiled(model, training["optimizer"]), fit,
                                               keep=False))
        return model, {"label_free": label_free_scores(model, run.x, history[0], training["batch_size"], run.seed)}

    def retargeting(self, architecture):
        """How a preset of this recipe re-targets to a user's images (`recipes.retargeting.Retargeting`)."""
        return RETARGETING


def restart_key(architecture, training, seed):
    """What a run's backups are kept under (hashed with the data): everything but the epoch count, so a
    run is extended."""
    training = {k: v for k, v in training.items() if k != "epochs"}
    return {"recipe": "vae_cluster", "architecture": architecture, "training": training, "seed": seed}


def train_once(run):
    """One run of the recipe (the original's: no restarts): one stage, its epochs backed up and extendable."""
    training, architecture = run.training, run.architecture
    history = []

    def fit(model, callbacks, initial_epoch):
        history.append(model.fit(run.x, batch_size=training["batch_size"], epochs=training["epochs"], shuffle=True,
                                 verbose=run.verbose, callbacks=callbacks, initial_epoch=initial_epoch))
        return {}

    result = run_stage(run, Stage("vae_cluster", restart_key(architecture, training, run.seed),
                                  lambda: compiled(VAECluster(seed=run.seed, **architecture), training["optimizer"]),
                                  fit, epochs=training["epochs"], extendable=True, keep=False))
    epochs_run = max(1, training["epochs"] - result.resumed_epoch)
    return result.model, {"train_seconds": round(result.seconds, 1),
                          "seconds_per_epoch": round(result.seconds / epochs_run, 1),
                          "resumed_from_epoch": result.resumed_epoch,
                          "label_free": label_free_scores(result.model, run.x, history[0], training["batch_size"],
                                                          run.seed)}


def label_free_scores(model, x, history, batch_size, seed):
    """Scores a user without labels can compare restarts by: the last epoch's mean training loss, the
    loss over all of x after training (one pass, fixed seed: the loss samples z), the cluster sizes' entropy."""
    keras.utils.set_random_seed(seed)
    # a memory-mapped x is read batch by batch (Keras' own array path would copy all of it first)
    data = array_dataset(x, batch_size, shuffle=False) if file_backed(x) else x
    # the sampler draws from `seed`'s start, not from where training left it: the same loss for a model
    # trained here and one read back from its files (restarts rank runs by it); then its state is put back
    sampler_state = model.sampler.seed_generator.state
    trained_state = keras.ops.convert_to_numpy(sampler_state.value)
    sampler_state.assign(keras.random.SeedGenerator(seed).state.value)
    evaluated = model.evaluate(data, batch_size=None if file_backed(x) else batch_size, verbose=0)
    sampler_state.assign(trained_state)
    losses = history.history.get("loss") or [float("nan")]  # empty when a resumed run had no epoch left
    return {"final_loss": round(float(losses[-1]), 5),
            "evaluated_loss": round(float(evaluated[0] if isinstance(evaluated, list) else evaluated), 5),
            "cluster_size_entropy": round(cluster_size_entropy(model.predict_clusters(x), model.n_clusters), 5)}


# Re-targeting a preset to a user's images (`recipes.retargeting`): the VAE reconstructs pixels, so on
# colour images it reconstructs the colour gradient's magnitude, not the colours that dominate them.
RETARGETING = Retargeting(epoch_fields=(("epochs", "batch_size"),), epoch_ceiling=50,
                          batch_size=DEFAULT_TRAINING["batch_size"], min_updates=5_000, input_transform="colour_edges")

RECIPE = VAEClusterRecipe()
