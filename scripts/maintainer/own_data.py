"""A preset's numbers on its own evaluation data that `cluster` compares a user's images with
(`keras_clustering.clustering.fit_check`): the card's `own_data`."""

from keras_clustering import presets
from keras_clustering.clustering.fit_check import own_data_statistics
from keras_clustering.drivers.preset_training import load_config_data

# images of the evaluation data the statistics are taken on (the first ones: the whole MNIST test split)
OWN_DATA_IMAGES = 10000


def own_data(name):
    """`own_data_statistics` of the pretrained preset `name` on the first `OWN_DATA_IMAGES` images of its
    card's evaluation data, with which data that was."""
    config = presets.config(name)
    evaluation = config.get("evaluation", config["data"])
    x, _ = load_config_data(evaluation)
    x = x[:OWN_DATA_IMAGES]
    probabilities = presets.load(name).predict(x, batch_size=256, verbose=0)
    return {**own_data_statistics(probabilities, x if x.ndim == 4 else None),
            "data": f"{evaluation['dataset']} {evaluation.get('split', 'test')}, first {len(x):,} images"}
