"""The golden corpus: queries recorded from the accounting code before the issue-30 redesign, replayed by
``tests/test_golden_corpus.py`` (see :mod:`golden.queries`)."""
