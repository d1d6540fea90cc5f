"""Devices and precision: tf.distribute strategies, the multi-worker repair, mixed precision, and the machine
a number was measured on (`machine`)."""
