"""The loop around the step: the runner's overhead against a bare jit loop, the cost of a run's records,
the device-idle figure against a simulated accelerator, and the accelerator acceptance run
(``make accel-check``)."""
