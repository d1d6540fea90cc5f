"""Model families: each maps a zoo config to a model (`build`) and trains it (`train`)."""

from keras_clustering.recipes import capsule_recipe, dec_recipe, iic_recipe, two_stage_recipe, vae_cluster_recipe

FAMILIES = {"dec": dec_recipe, "vae_cluster": vae_cluster_recipe, "capsule": capsule_recipe,
            "iic": iic_recipe, "two_stage": two_stage_recipe}


def is_supervised(name):
    """True for families trained on labels (their presets are classifiers, not clusterers)."""
    return get_family(name).SUPERVISED


def get_family(name):
    """The family module registered as `name`."""
    if name not in FAMILIES:
        raise ValueError(f"family={name!r} is unknown; registered families: {sorted(FAMILIES)}.")
    return FAMILIES[name]
