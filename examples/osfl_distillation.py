"""One-shot knowledge distillation with objective hiding (Egger, Urbanke,
Bitar 2025, Sec. III): clients label a public set for the objectives they
hold, the federator retrieves the label sums of its hidden objective and
trains a student on them.  Prints the accuracies and the protocol's costs.

    python examples/osfl_distillation.py [--clients 20] [--seed 0]
"""
import argparse
import json

from secea_fast.protocols import osfl
from secea_fast.jobs import jsonable


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    res = osfl.distillation_example(n=args.clients, seed=args.seed)
    res = {k: v for k, v in res.items() if not k.startswith("_")}
    print(json.dumps(jsonable(res), indent=2))
    return 0 if res["exact_sum"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
