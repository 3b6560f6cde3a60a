"""Independent reference implementations (PyTorch models) that tests and benchmarks compare against."""
