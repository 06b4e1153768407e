"""dpverify's core: the statistics the auditor and the tail verifier share (neither imports the other).

``_confidence``: exact binomial confidence bounds and the alpha-spending rule.
"""
