"""dpverify's core: what is executed (samplers, noise, mechanisms, protocols, the privatizer).

``_kernels`` / ``_inversion`` (numba kernels and their certified inversion tables), ``_samplers``
(validated exact samplers), ``_noise`` (float-safe and idealised noise), ``_noise_mechanisms``
(a sampler bound to its accounting mechanism), ``_protocol_kernels`` / ``_protocols`` (the papers'
protocols P = (R, S, A)) and ``_privatizer`` (a protocol bound to a ledger). Imports from
``accounting`` only its public API and :mod:`accounting.internal`.
"""
