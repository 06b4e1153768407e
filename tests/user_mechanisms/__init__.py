"""A tiny package OUTSIDE dpverify, standing for a user's own mechanisms in the audit gate.

It imports nothing from dpverify: the gate and :func:`dpverify.testing.assert_private` must
audit any importable callable ``f(data, rng, size, **parameters)``.
"""
