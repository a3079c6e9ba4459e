"""Summarise a pytest-benchmark JSON file: per group, each implementation's
median and its ratio to the fastest peer (anything not secea_fast).

    python bench/report.py bench/results/run.json
"""
import json
import sys
from collections import defaultdict


def main(path):
    data = json.load(open(path))
    groups = defaultdict(list)
    for b in data["benchmarks"]:
        groups[b["group"]].append(b)
    for group in sorted(groups):
        rows = groups[group]
        peers = [b["stats"]["median"] for b in rows if b["extra_info"].get("impl") != "secea_fast"]
        print(group)
        for b in sorted(rows, key=lambda b: b["stats"]["median"]):
            med = b["stats"]["median"]
            info = b["extra_info"]
            rate = ""
            if "macs" in info:
                rate = f"{info['macs'] / med / 1e9:7.2f} G MAC/s"
            elif "bytes" in info:
                rate = f"{info['bytes'] / med / 1e9:7.2f} GB/s"
            ratio = f"  {min(peers) / med:5.2f}x best peer" if peers and info.get("impl") == "secea_fast" else ""
            extra = f" ({info['threads']}t)" if "threads" in info else ""
            print(f"  {info.get('impl', b['name'])+extra:32s} {med * 1e3:10.3f} ms {rate}{ratio}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "bench/results/run.json")
