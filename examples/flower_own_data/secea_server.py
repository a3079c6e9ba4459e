"""The ServerApp of the own-data example: SecEA rounds among exactly the
roster's clients (``client-<i>``, role ``client``); the server sees
neither the embeddings nor the results, only the stage sizes.  Writes the
last round's summary to ``<out-dir>/summary.json`` (``secea-fast flower
report OUT_DIR`` prints its stage table and verdict)."""
from __future__ import annotations

import json
from pathlib import Path

from flwr.app import Context
from flwr.serverapp import Grid, ServerApp

from secea_fast.flower import secea as secea_flower
from secea_fast.protocols.common.roster import Roster

app = ServerApp()


@app.main()
def main(grid: Grid, context: Context) -> None:
    rc = context.run_config
    if not rc.get("roster-file"):
        raise ValueError("run config: 'roster-file' is missing (the federation's roster on this host)")
    roster = Roster.load(str(rc["roster-file"]))
    union = None
    for rnd in range(1, int(rc.get("rounds", 1)) + 1):
        # ... your training stage would go here: each client updates its embeddings file
        res = secea_flower.run_secea(grid, roster, d=int(rc["d"]), T=int(rc["T"]), K=int(rc["K"]) or None,
                                     precision=int(rc["precision"]), timeout=float(rc["stage-timeout"]),
                                     round_index=rnd, union=union)
        union = res.union                      # the entity union is computed once (Sec. 4.1)
        if rc.get("out-dir"):
            out = Path(str(rc["out-dir"]))
            out.mkdir(parents=True, exist_ok=True)
            (out / "summary.json").write_text(json.dumps(res.summary(), indent=1))
