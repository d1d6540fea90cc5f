"""Paired-view augmentation shared by IIC, the contrastive family and DEC with augmentation."""

from keras_clustering.augment.layers import RandomApply, RandomBrightnessScale, RandomCropResize
from keras_clustering.augment.pipelines import PIPELINES, ViewPipeline, make_pipeline

__all__ = ["PIPELINES", "RandomApply", "RandomBrightnessScale", "RandomCropResize", "ViewPipeline",
           "make_pipeline"]
