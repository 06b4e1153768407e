"""Floor 1 of ``accounting``: privacy-loss distributions (PLD), built on ``_core`` only.

``_pld`` (the distribution of a pair or a release, its certified eps(delta) and delta(eps)),
``_pld_measure`` (certified loss measures), ``_pld_fft_power`` (k-fold composition in one FFT pass)
and ``_pld_continuous`` (connect-the-dots PLDs of monotone continuous losses).
"""
