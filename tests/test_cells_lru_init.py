"""The ring initialisation of LRU and RTU by distribution, not only by range: ``|lambda|^2`` uniform on
``[r_min^2, r_max^2]`` (uniform by area), the phase uniform on ``(0, max_phase]``, B and C at their documented
variances. A draw uniform in the radius, or a phase on a wrong interval, stays inside the ring and passes a range
check; a Kolmogorov-Smirnov distance against the documented law does not."""

import jax
import numpy as np
import pytest

from rtrl.cells import LRU, RTU

N = 4000
KS_LIMIT = 1.95 / np.sqrt(N)  # the 0.1% critical value of the one-sample KS statistic; the seeds are fixed


def ks_uniform(samples, lo, hi):
    """sup |F_n - F| against the uniform law on [lo, hi], computed here from the sorted sample."""
    s = np.sort((np.asarray(samples) - lo) / (hi - lo))
    n = len(s)
    return max(np.max(np.arange(1, n + 1) / n - s), np.max(s - np.arange(n) / n))


@pytest.mark.parametrize(("cls", "output_map"), [(LRU, "matrix"), (RTU, "matrix"), (LRU, "concat"), (RTU, "concat")])
@pytest.mark.parametrize(("r_min", "r_max", "max_phase"), [(0.4, 0.9, 6.28), (0.0, 0.99, 0.5)])
def test_ring_is_uniform_by_area_and_phase_uniform(cls, output_map, r_min, r_max, max_phase):
    """The same law for N units whether ``h`` is the matrix's output (width N) or the parts concatenated (2 N)."""
    width = N if output_map == "matrix" else 2 * N
    cell = cls(2, width, r_min=r_min, r_max=r_max, max_phase=max_phase, output_map=output_map)
    params = cell.init(jax.random.PRNGKey(7))
    # lambda = RHO exp(-exp(nu) + i exp(theta)) with RHO = 1 - 1e-6 (the cells' docstrings)
    nu, theta = np.asarray(params["nu"]), np.asarray(params["theta"])
    modulus, angle = (1 - 1e-6) * np.exp(-np.exp(nu)), np.exp(theta)
    assert ks_uniform(modulus**2, r_min**2, r_max**2) < KS_LIMIT
    # the radius itself is not uniform (a radius-uniform draw is the plausible bug)
    assert ks_uniform(modulus, r_min, r_max) > 2 * KS_LIMIT
    assert ks_uniform(angle, 0, max_phase) < KS_LIMIT


@pytest.mark.parametrize("output_map", ["matrix", "concat"])
def test_lru_projection_variances(output_map):
    D, Nh = 50, 400
    params = LRU(D, Nh if output_map == "matrix" else 2 * Nh, output_map=output_map).init(jax.random.PRNGKey(1))
    matrices = [("C_re", 1 / Nh), ("C_im", 1 / Nh)] if output_map == "matrix" else []
    assert params["B_re"].shape == (D, Nh) and ("C_re" in params) == (output_map == "matrix")
    for name, variance in [("B_re", 1 / (2 * D)), ("B_im", 1 / (2 * D)), *matrices]:
        sample = np.asarray(params[name]).ravel()
        # the sample variance of n normals is within 5 standard errors (sqrt(2/n) relative) of the truth
        assert abs(sample.var() / variance - 1) < 5 * np.sqrt(2 / sample.size), name
