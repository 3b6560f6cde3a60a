"""The host side of training: data pipelines against tf.data, augmentation on the host and on the device,
the ImageNet training stream on ImageNet-sized JPEGs, and host input work per process."""
