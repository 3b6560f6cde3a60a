"""One training step: throughput against PyTorch, where its time goes (per-op profile, the quadrilaterals
step), how convolutions are evaluated, XLA:CPU compiler options, and accelerator throughput (MFU)."""
