"""Both ways evaluate_batch ranks scored runs, as a pytest parameter: the compiled kernel and the numpy path."""

from __future__ import annotations

import pytest

from ragmorph.metrics import BATCH_BACKEND

__all__ = ["BACKENDS", "KERNEL_BUILT"]

KERNEL_BUILT = BATCH_BACKEND == "compiled"

# The compiled half is skipped, and says why, only where ragmorph was installed without a C compiler;
# tests/metrics/test_batch_kernel.py fails if a compiler was there and the kernel is still missing.
BACKENDS = pytest.mark.parametrize(
    "backend",
    [
        pytest.param(
            "compiled", marks=pytest.mark.skipif(not KERNEL_BUILT, reason="ragmorph.metrics._ranks was not compiled")
        ),
        "numpy",
    ],
)
