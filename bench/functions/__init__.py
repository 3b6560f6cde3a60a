"""The library's pure functions (kernel tables, losses with gradients, the Monte Carlo Eq. 1 estimator)
against reference implementations (PyTorch, NumPy, naive Python), and their scaling with batch size."""
