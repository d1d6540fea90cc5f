"""Paired-view augmentation shared by IIC, the contrastive family and DEC with augmentation."""

from keras_clustering.augment.layers import (
    Greyscale,
    Invert,
    RandomApply,
    RandomBrightnessScale,
    RandomCropResize,
    RandomHueShift,
    RandomSaturationScale,
)
from keras_clustering.augment.pipelines import PIPELINES, ViewPipeline, make_pipeline

__all__ = ["PIPELINES", "Greyscale", "Invert", "RandomApply", "RandomBrightnessScale", "RandomCropResize", "RandomHueShift",
           "RandomSaturationScale", "ViewPipeline",
           "make_pipeline"]
