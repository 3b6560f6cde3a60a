import numpy as np
import pytest

B, D = 8, 5

LAYOUTS = {
    "distinct": (np.arange(B), np.ones(B, bool)),
    "all_equal": (np.zeros(B, int), np.ones(B, bool)),
    "mixed": (np.array([0, 1, 0, 2, 1, 0, 3, 2]), np.ones(B, bool)),
    "padded": (np.array([0, 1, 0, 1, 2, 2, 0, 0]), np.array([1, 1, 1, 1, 1, 0, 0, 0], bool)),
}


@pytest.fixture(params=sorted(LAYOUTS))
def layout(request):
    labels, valid = LAYOUTS[request.param]
    z = np.random.default_rng(abs(hash(request.param)) % 2**32).normal(size=(B, D)).astype(np.float32)
    return request.param, z, labels, valid
