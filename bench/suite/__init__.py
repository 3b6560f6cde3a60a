"""The test suite's own cost: compile time under sets of XLA:CPU flags, and a per-worker profile of a
pytest session."""
