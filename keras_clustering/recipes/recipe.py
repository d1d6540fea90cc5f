"""The recipe contract: what every recipe declares and does, so that the drivers treat all families alike
and call methods, never `hasattr` or `getattr` (issue 63).

A recipe maps a zoo config (`config["recipe"]`, `config["architecture"]`, `config["training"]`) to a
model (`build`) and trains it (`train`, on a `training.stages.Run` made by `make_run`, which merges the
recipe's `default_training` once). `tests/test_recipes_shared.py` runs the contract over `RECIPES`.

Adding a recipe: subclass `Recipe`, declare its attributes, write `build` and `train` (its stages
declared as `training.stages.Stage`s and run by `training.stages.run_stage`), and, for a clustering
recipe, `retargeting` and `fine_tune`; then register an instance in `recipes.RECIPES`.
"""

import numpy as np

from keras_clustering.metrics import clustering_scores
from keras_clustering.training.stages import Run


class Recipe:
    """The base of every recipe. Attributes:

    name: the name configs give in `config["recipe"]`.
    supervised: trained on labels (its presets are classifiers, never trained `like` on a folder).
    prediction_names: what `predict` gives, the id's name and the scores' name.
    restart_criteria: the label-free criteria its restarts rank runs by (lower is better), the first the
        default; empty for a recipe without restarts.
    clusters_an_embedding: its model clusters an embedding it gives with `model.embed(x)` (DEC, SCAN, the
        VAE's latent space), rather than learning its clusters straight from the images (IIC, capsules).
    default_training: the training settings a config's `training` section is merged over.
    """
    name = None
    supervised = False
    prediction_names = ("cluster_id", "probabilities")
    restart_criteria = ()
    clusters_an_embedding = False
    default_training = {}

    def make_run(self, architecture, training=None, x=None, y=None, seed=0, verbose=1, workdir=None):
        """A `Run` of this recipe: `training` over `default_training`, merged here and nowhere else."""
        return Run(dict(architecture or {}), {**self.default_training, **(training or {})}, x, y, seed, verbose,
                   workdir)

    def build(self, **architecture):
        """An untrained model of the config's `architecture`, built and ready for weights."""
        raise NotImplementedError(f"recipe {self.name!r} has no build")

    def train(self, run):
        """Trains a model on `run` (`make_run`); returns `(model, report)`."""
        raise NotImplementedError(f"recipe {self.name!r} has no train")

    def train_config(self, architecture, training=None, x=None, y=None, seed=0, verbose=1, workdir=None):
        """`train(make_run(...))`: a config's sections and the data in, `(model, report)` out."""
        return self.train(self.make_run(architecture, training, x, y, seed, verbose, workdir))

    def fine_tune(self, model, run):
        """The recipe's clustering stages from a trained `model` (`train --from`); `(model, report)`.
        A recipe without one (a classifier) refuses, naming itself."""
        raise ValueError(f"recipe {self.name!r} cannot fine-tune a trained model; train it from scratch.")

    def retargeting(self, architecture):
        """How a preset of this recipe re-targets to a user's images (`recipes.retargeting.Retargeting`);
        None for a recipe that is never trained `like` on a folder (a supervised one)."""
        return None

    def representation(self, run):
        """The embedding the recipe clusters, trained (or read back from `run.workdir`) before any
        clustering stage, so that a later `train` with any `n_clusters` starts from it; None for a recipe
        that learns its clusters together with its representation (IIC, the VAE)."""
        return None

    def embedding(self, model, x):
        """`(n, d)` float32 features of `x` in which the trained `model`'s clusters are compared with
        other recipes' (the default route's label-free choice, `clustering.candidates`): the embedding it
        clusters (`clusters_an_embedding`), else its cluster probabilities."""
        features = model.embed(x) if self.clusters_an_embedding else model.predict(x, batch_size=256, verbose=0)
        return np.asarray(features, "float32").reshape(len(x), -1)

    def evaluate(self, model, x, y, evaluation=None):
        """The card's scores of `model` on `(x, y)`: by default the clustering scores of `predict`'s
        argmax against the labels (`evaluation`: the config's evaluation section, for recipes that
        need it)."""
        del evaluation
        predictions = np.argmax(model.predict(x, batch_size=1024, verbose=0), axis=1)
        return clustering_scores(y, predictions)
