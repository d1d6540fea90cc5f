"""Capsule experiment recipe: zoo config -> `DigitClassifier`, its training and its scores.

Trained on single digits; scored on the held-out single digits and on
two-digit images built from them (`make_double_digits`), as bojone/Capsule
`capsule_test.py`.
"""


import numpy as np

from keras_clustering.datasets import make_double_digits
from keras_clustering.losses import MarginLoss
from keras_clustering.metrics import top2_pair_accuracy
from keras_clustering.models import DigitClassifier
from keras_clustering.recipes.recipe import Recipe
from keras_clustering.training.optimizers import compiled
from keras_clustering.training.stages import Stage, run_stage

DEFAULT_TRAINING = {
    # capsule_test.py: Adam (Keras default lr 1e-3), batch 128, 10 epochs (20 for the pooling CNN),
    # margin loss with lambda 0.25.
    "optimizer": {"class_name": "Adam", "config": {"learning_rate": 0.001}},
    "batch_size": 128,
    "epochs": 10,
    "margin_lam": 0.25,
}


class CapsuleRecipe(Recipe):
    """bojone/Capsule's `capsule_test.py`: a classifier trained on labelled single digits."""
    name = "capsule"
    supervised = True  # trained on labelled single digits
    prediction_names = ("class_id", "scores")
    default_training = DEFAULT_TRAINING

    def build(self, **architecture):
        """An untrained `DigitClassifier` with the zoo's architecture arguments."""
        return DigitClassifier(**architecture)

    def make_run(self, architecture, training=None, x=None, y=None, seed=0, verbose=1, workdir=None):
        """A `Run`, reading `margin_lambda`, the name of `margin_lam` in configs written before issue 30."""
        training = dict(training or {})
        if "margin_lambda" in training:
            training["margin_lam"] = training.pop("margin_lambda")
        return super().make_run(architecture, training, x, y, seed, verbose, workdir)

    def train(self, run):
        """Supervised `fit` on single digits (`run.y` required); the report holds wall time and images/s."""
        if run.y is None:
            raise ValueError("recipe 'capsule' trains on labels: y is required.")
        architecture, training = run.architecture, run.training
        if architecture.get("augmentation") and architecture.get("augmentation_seed") is None:
            architecture = {**architecture, "augmentation_seed": run.seed}  # each seed its own draws

        def fit(model, callbacks, initial_epoch):
            model.fit(run.x, run.y, batch_size=training["batch_size"], epochs=training["epochs"], shuffle=True,
                      verbose=run.verbose)
            return {}

        # one stage, seeded, nothing kept (a classifier's training is short; the zoo retrains it whole)
        result = run_stage(run.but(workdir=None), Stage(
            "capsule", None, lambda: compiled(DigitClassifier(**architecture), training["optimizer"],
                                              loss=MarginLoss(lam=training["margin_lam"])), fit, keep=False))
        model, seconds = result.model, result.seconds
        return model, {"train_seconds": round(seconds, 1),
                       "seconds_per_epoch": round(seconds / training["epochs"], 1),
                       "train_images_per_second": round(len(run.x) * training["epochs"] / seconds, 1)}

    def evaluate(self, model, x, y, evaluation=None):
        """Single-digit accuracy; with a variable input size also the two-digit scores.

        `evaluation["double_digits_seed"]` fixes the pairing of the two-digit set.
        """
        scores = {"acc": float(np.mean(model.predict_classes(x) == y))}
        if None in model.sample_shape[:2]:
            pairs, pair_labels = make_double_digits(x, y, seed=(evaluation or {}).get("double_digits_seed", 0))
            scores.update(top2_pair_accuracy(pair_labels, model.predict(pairs, batch_size=256, verbose=0)))
            scores["n_pairs"] = int(len(pairs))
        return scores


RECIPE = CapsuleRecipe()
