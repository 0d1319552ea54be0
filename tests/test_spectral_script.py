"""Acceptance: an fft-based model (tests/scripts/spectral_operator.py: a Fourier neural operator with complex
weights, then stft and fft2/fftshift checks) runs unmodified under `python -m tidal.compat` and follows torch."""
import numpy as np

from script_runs import check_losses, run_both


def test_spectral_operator_follows_torch(tmp_path):
    theirs, ours = run_both("spectral_operator", tmp_path)
    check_losses(theirs, ours)
    for key in set(theirs) - {"losses"}:
        np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-3, atol=1e-4, err_msg=key)
