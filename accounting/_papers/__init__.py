"""Floor 6 of ``accounting``: the papers' parameters and the reports that set them beside the accountant.

``_paper_params`` (the ICLR 2023 paper's parameter choices for its distributed protocols, computed
exactly) and ``_reports`` (its closed forms beside the certified routes, e.g. Dist-RDP-SE for a
returning user).
"""
