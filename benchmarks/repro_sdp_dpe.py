"""SDP-DPE beside DPE, CDP-DPE and LDP-DPE at T = 1e6 (the numbers of REPRODUCTION.md, "SDP-DPE").

Run from the repository root: ``python benchmarks/repro_sdp_dpe.py exact|paper [out.json]``:
``li_fig2(runs=4, horizon=1_000_000, epsilons=(1, 10), privacy_width=..., path="aggregate")`` on
the synthetic instance, 2 worker processes; writes the figure's JSON (panels a-c, with every
protocol's bits per client) and prints the wall time.
"""

import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dpverify._bandits.linear import li_fig2  # noqa: E402

if __name__ == "__main__":
    width = sys.argv[1] if len(sys.argv) > 1 else "exact"
    out = sys.argv[2] if len(sys.argv) > 2 else f"sdp-dpe-{width}.json"
    started = time.time()
    with ProcessPoolExecutor(2) as executor:
        result = li_fig2(runs=4, horizon=1_000_000, epsilons=(1.0, 10.0), privacy_width=width, path="aggregate", executor=executor)
    result["seconds"] = time.time() - started
    Path(out).write_text(json.dumps(result, indent=1))
    print("wrote", out, "in", round(result["seconds"]), "s")
