"""Floor 3 of ``accounting``: amplification of a mechanism (below it: ``_core``, PLDs, mechanisms).

``_subsampling`` (Poisson sampling and sampling without replacement) and ``_shuffling``
(amplification by shuffling of eps0-LDP reports, with its own routes).
"""
