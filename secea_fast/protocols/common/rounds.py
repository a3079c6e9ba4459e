"""The shape every protocol's round has: ``run_round(...)`` returns a
:class:`RoundResult` (per-phase CPU and wall seconds, bytes, whether the
output was verified against plaintext).  A progress display is the
caller's: a round takes a factory ``progress(total, label)`` returning a
:class:`Meter` (the command line passes its bar), so no protocol imports a
driver.  Rounds whose work splits into independent blocks run them through
the private ``protocols._blocks.run_blocks``."""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable
from typing import ClassVar, Generic, Protocol, TypeVar

__all__ = ["RoundResult", "Meter", "ProgressFactory"]

ParamsT = TypeVar("ParamsT")


@dataclass
class RoundResult(Generic[ParamsT]):
    """One round of a protocol, every party simulated.  Subclasses add the
    protocol's outputs (all with defaults) and name its ``PHASES``.

    ``seconds``: phase -> CPU seconds (user + sys) summed over the parties:
    each party's work is timed with ``time.process_time`` in the process
    that ran it (this one, or an executor's worker) and the deltas are
    added, so the sum is what the operating system accounts to the round's
    processes for those phases (tested against ``getrusage``); time spent
    waiting (for workers, I/O) is not in it.  Printed as "core-s".
    ``wall``: phase -> wall-clock seconds of this run;
    ``bytes``: phase -> bytes the parties send in that phase (the
    protocol's own messages, as serialized); ``verified``: True when the
    round compared its output with the plaintext computation (it raises
    AssertionError on a difference), None when it was not asked to;
    ``params``: the protocol's parameters (the type argument)."""
    params: ParamsT
    seconds: dict
    wall: dict
    bytes: dict
    verified: bool | None = None
    processes: int = 1

    PROTOCOL: ClassVar[str] = ""
    PHASES: ClassVar[tuple] = ()
    BYTES_OF: ClassVar[dict] = {}      # phase -> its key in ``bytes`` when they differ

    def table(self) -> str:
        """Per-phase core seconds, wall seconds and protocol MB as text."""
        phases = list(self.PHASES) + [p for p in self.seconds if p not in self.PHASES]
        rows = [("phase", "core-s", "wall-s", "protocol MB")]
        for ph in phases:
            rows.append((ph, f"{self.seconds.get(ph, 0.0):.3f}", f"{self.wall.get(ph, 0.0):.3f}",
                         f"{self.bytes.get(self.BYTES_OF.get(ph, ph), 0) / 1e6:.2f}"))
        w = [max(len(r[i]) for r in rows) for i in range(4)]
        return "\n".join("  ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i])
                                   for i, c in enumerate(r)) for r in rows)

    def summary(self) -> dict:
        """The protocol-independent part as JSON-serializable values."""
        return {"protocol": self.PROTOCOL, "processes": int(self.processes),
                "verified": self.verified,
                "core_seconds": {k: float(v) for k, v in self.seconds.items()},
                "wall_seconds": {k: float(v) for k, v in self.wall.items()},
                "bytes": {k: int(v) for k, v in self.bytes.items()}}


class Meter(Protocol):
    """What a round reports its progress to: ``step()`` after each block,
    ``close()`` once at the end (also when the work ended early)."""

    def step(self, k: int = 1) -> None:
        """Count ``k`` more blocks done."""

    def close(self) -> None:
        """The work is over."""


# progress(total, label) -> the Meter of ``total`` blocks under ``label``
ProgressFactory = Callable[[int, str], Meter]
