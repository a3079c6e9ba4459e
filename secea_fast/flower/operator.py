"""An operator's tools for a multi-host deployment: ``secea-fast flower certs``
and ``secea-fast flower report``.

    secea-fast flower certs --out DIR --host NAME[,NAME...] [--host ...] [--days D]
    secea-fast flower report OUT_DIR [--json FILE]

``certs`` writes a CA (``ca.crt``: to every SuperNode and the operator) and
one server certificate per ``--host`` (``<first name>.pem`` and
``<first name>.key``, mode 0600: to that host only), each valid for every
name and IP address listed in its ``--host`` (its subject alternative
names), via ``cryptography``
(:func:`~secea_fast.flower.localfed.make_host_certificates`).  The CA's
private key is not kept: issue all certificates in one call.  E.g. for a
SuperLink reached as ``hostA.example.org`` / ``10.0.0.1`` and, behind its
proxy, on its own loopback::

    secea-fast flower certs --out certs/ --host hostA.example.org,10.0.0.1,localhost,127.0.0.1

``report`` reads the summary the ServerApp of a round wrote in its
``out-dir`` (``summary.json``: :meth:`SecEAFlowerResult.summary
<secea_fast.flower.secea.SecEAFlowerResult.summary>` or
``SecEmbFlowerResult.summary``) and prints the stage table and a PASS/FAIL
verdict (:func:`round_verdict`); exit 0 on PASS, 1 on FAIL, 2 when there is
no readable summary.  That is the verdict of the round as the server saw
it (every party finished, nothing failed); checking the result against a
plaintext computation needs the data, which only the nodes have.
"""
from __future__ import annotations

import argparse
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["parse_hosts", "round_verdict", "read_summary", "report_table", "certs_main", "report_main"]


def parse_hosts(values: Sequence[str]) -> dict[str, list[str]]:
    """``--host`` values (``NAME[,NAME...]``) as {file stem: names}: the
    stem is the first name (``:`` of an IPv6 address as ``-``).  ValueError
    naming the ``--host`` value that is empty, repeated or not a host."""
    from .localfed import check_host
    if not values:
        raise ValueError("--host: name at least one host (NAME[,NAME...]: its names and IP addresses)")
    out: dict[str, list[str]] = {}
    for v in values:
        names = [check_host(x, f"--host {v!r}") for x in str(v).split(",") if x.strip()]
        if not names:
            raise ValueError(f"--host: {v!r} names no host")
        stem = re.sub(r"[^A-Za-z0-9._-]", "-", names[0].replace("*.", "wildcard."))
        if stem in out or stem == "ca":
            raise ValueError(f"--host {v!r}: a certificate named {stem!r} is already asked for")
        out[stem] = names
    return out


def certs_main(argv: Sequence[str]) -> int:
    """``secea-fast flower certs``: the exit status (2 with one line for a bad option)."""
    from .localfed import make_host_certificates
    p = argparse.ArgumentParser(prog="secea-fast flower certs",
                                description="A CA and one server certificate per --host (its names and IP "
                                            "addresses as subject alternative names).")
    p.add_argument("--out", required=True, metavar="DIR", help="directory for ca.crt, <host>.pem, <host>.key")
    p.add_argument("--host", action="append", metavar="NAME[,NAME...]", required=True,
                   help="one certificate, valid for these names and addresses (repeatable)")
    p.add_argument("--days", type=float, default=365.0, help="validity in days (default 365)")
    args = p.parse_args(list(argv))
    try:
        hosts = parse_hosts(args.host)
        out = Path(args.out)
        if out.exists() and not out.is_dir():
            raise ValueError(f"--out: {out} exists and is not a directory")
        if (out / "ca.crt").exists():
            raise ValueError(f"--out: {out / 'ca.crt'} exists: a new CA would not sign the certificates "
                             "the nodes already trust; choose another directory")
        files = make_host_certificates(out, hosts, days=args.days)
    except ValueError as exc:
        p.error(str(exc))
    except OSError as exc:
        p.error(f"--out: {exc}")
    print(f"ca\t{files['ca']['cert']}")
    for stem, names in hosts.items():
        print(f"{stem}\t{files[stem]['cert']}\t{files[stem]['key']}\t{','.join(names)}")
    return 0


def read_summary(out_dir: str | Path) -> dict[str, Any]:
    """The ``summary.json`` a round's ServerApp wrote in ``out_dir``;
    ValueError naming the file when it is missing or not a round summary."""
    path = Path(out_dir) / "summary.json"
    if not Path(out_dir).is_dir():
        raise ValueError(f"OUT_DIR: {out_dir} is not a directory")
    if not path.is_file():
        raise ValueError(f"{path}: no summary: the ServerApp writes it when a round ends (run config "
                         "out-dir); the run failed before, or out-dir was another directory")
    try:
        summary = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not JSON ({str(exc)[:80]})") from None
    if not isinstance(summary, dict) or summary.get("protocol") not in ("secea", "secemb") \
            or not isinstance(summary.get("stages"), list):
        raise ValueError(f"{path}: not a round summary (no protocol secea/secemb and stages)")
    for i, s in enumerate(summary["stages"]):
        if not isinstance(s, dict) or not all(isinstance(s.get(k), (int, float))
                                              for k in ("wall", "server_seconds", "bytes_down", "bytes_up")):
            raise ValueError(f"{path}: stage {i} lacks wall, server_seconds, bytes_down or bytes_up")
    return summary


def round_verdict(summary: Mapping[str, Any]) -> tuple[bool, str]:
    """(ok, one line) for a round summary.  SecEA: PASS when every party of
    the final attempt decoded all its blocks and no block failed (dropped
    clients and blocks decoded without redundancy are named); SecEmb: PASS
    when at least one user uploaded and the aggregate covers every user
    answered (dropouts named)."""
    if summary.get("protocol") == "secea":
        parties = {str(k) for k in summary.get("parties", {})}
        done = {str(k) for k in summary.get("done", [])}
        names = summary.get("names", {})
        failed = summary.get("failed_blocks", [])
        dropped = summary.get("dropped", {})
        notes = []
        if dropped:
            notes.append("dropped " + ", ".join(f"{names.get(k, k)} ({v[-1] if v else '?'})"
                                                for k, v in dropped.items()))
        if summary.get("unchecked"):
            notes.append(f"{len(summary['unchecked'])} block(s) decoded without redundancy")
        tail = ("; " + "; ".join(notes)) if notes else ""
        if not parties:
            return False, "secea: no party took part" + tail
        if failed:
            return False, f"secea: {len(failed)} block(s) could not be decoded" + tail
        missing = sorted(names.get(k, k) for k in parties - done)
        if missing:
            return False, f"secea: {', '.join(missing)} did not finish" + tail
        return True, (f"secea: {len(done)} clients decoded every block, union of {summary.get('union_size')} "
                      f"entities, {summary.get('attempts')} attempt(s)") + tail
    users, uploaded = int(summary.get("users", 0)), int(summary.get("uploaded", 0))
    drop = summary.get("dropouts", {})
    tail = ("; dropouts: " + ", ".join(f"node {k} ({v[-1] if v else '?'})" for k, v in drop.items())) if drop else ""
    if uploaded < 1:
        return False, f"secemb: no user's upload was aggregated (of {users})" + tail
    return True, f"secemb: the aggregate covers {uploaded} of {users} users" + tail


def report_table(summary: Mapping[str, Any]) -> str:
    """Every stage of a round summary, one row each: stage (with its step),
    attempt, nodes, wall seconds, the server's compute seconds, MB down
    and up (what the server measured; ``secea-fast flower sim/local`` print
    the same columns but attempt and nodes), and a total row."""
    rows = [("stage", "attempt", "nodes", "wall-s", "server-s", "MB down", "MB up")]
    tot = [0.0, 0.0, 0, 0]
    for s in summary["stages"]:
        name = str(s.get("stage")) + (f" {s['step']}" if s.get("step") is not None else "")
        rows.append((name, str(s.get("attempt", "")), str(s.get("nodes", "")), f"{s['wall']:.3f}",
                     f"{s['server_seconds']:.3f}", f"{s['bytes_down'] / 1e6:.2f}", f"{s['bytes_up'] / 1e6:.2f}"))
        for i, k in enumerate(("wall", "server_seconds", "bytes_down", "bytes_up")):
            tot[i] += s[k]
    rows.append(("total", "", "", f"{tot[0]:.3f}", f"{tot[1]:.3f}", f"{tot[2] / 1e6:.2f}", f"{tot[3] / 1e6:.2f}"))
    w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(r))
                     for r in rows)


def report_main(argv: Sequence[str]) -> int:
    """``secea-fast flower report``: the exit status (0 PASS, 1 FAIL, 2 no summary)."""
    p = argparse.ArgumentParser(prog="secea-fast flower report",
                                description="The stage table and PASS/FAIL of a round from the summary.json "
                                            "its ServerApp wrote in out-dir.")
    p.add_argument("out_dir", metavar="OUT_DIR", help="the run config's out-dir")
    p.add_argument("--json", metavar="FILE", help="also write the summary with the verdict as JSON")
    args = p.parse_args(list(argv))
    try:
        summary = read_summary(args.out_dir)
    except ValueError as exc:
        p.error(str(exc))
    ok, why = round_verdict(summary)
    print(report_table(summary))
    total_b = sum(s["bytes_down"] + s["bytes_up"] for s in summary["stages"])
    print(f"{'PASS' if ok else 'FAIL'}: {why}; round {float(summary.get('wall_seconds', 0.0)):.2f} s, "
          f"{len(summary['stages'])} stages, {total_b / 1e6:.1f} MB through the server")
    if args.json:
        try:
            Path(args.json).write_text(json.dumps(dict(summary, verified=ok, verdict=why), indent=1))
        except OSError as exc:
            print(f"--json: could not write {args.json}: {exc}")
    return 0 if ok else 1
