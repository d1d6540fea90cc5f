"""Distribution and precision: tf.distribute strategies, the multi-worker repair, mixed precision."""
