"""The in-memory transport that :func:`~.round.run_round` drives the SecEmb
sessions over, and a fault-injecting wrapper around it.

Every hop of a round (user <-> server 0, server 0 <-> server 1; server 0
relays what users and server 1 exchange) is an :class:`Envelope` posted to
the transport and handed over by :meth:`Loopback.deliver`.  Faults are not
flags in the protocol: :class:`Faults` wraps any transport and drops,
corrupts (one flipped bit), delays (to the next delivery), replays
(delivers twice, or injects recorded envelopes) or reorders what passes,
as a network or an active server 0 could.  The sessions must refuse every
such message or make its sender a dropout.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

__all__ = ["Envelope", "Loopback", "Faults"]


@dataclass(frozen=True)
class Envelope:
    """One message on one hop: ``stage`` (the hop's name), ``sender``,
    ``receiver``, ``about`` (the user a relayed message concerns; the sender
    for a user's own messages) and its byte ``parts``."""
    stage: str
    sender: str
    receiver: str
    about: str
    parts: tuple[bytes, ...]


class Loopback:
    """Queues posted envelopes and delivers them in order; ``log`` keeps
    everything delivered (the whole traffic, for tests and replays)."""

    def __init__(self) -> None:
        self.queue: list[Envelope] = []
        self.log: list[Envelope] = []

    def post(self, env: Envelope) -> None:
        self.queue.append(env)

    def deliver(self) -> list[Envelope]:
        out, self.queue = self.queue, []
        self.log.extend(out)
        return out


def _match(rules: Iterable[tuple[str, str | None]], env: Envelope) -> bool:
    return any(stage == env.stage and who in (None, env.sender, env.about) for stage, who in rules)


class Faults:
    """A transport wrapper.  Each rule is (stage, party or None for every
    party), matching an envelope of that stage sent by or about that party:
    ``drop``, ``corrupt`` (flip one bit of the last part), ``delay``
    (deliver with the next batch instead), ``replay`` (deliver twice);
    ``inject``: stage -> envelopes delivered again with that stage's batch
    (replays from another round); ``reorder``: deliver every batch in
    reverse order."""

    def __init__(self, inner: Loopback, *, drop: Iterable[tuple[str, str | None]] = (),
                 corrupt: Iterable[tuple[str, str | None]] = (), delay: Iterable[tuple[str, str | None]] = (),
                 replay: Iterable[tuple[str, str | None]] = (), inject: dict[str, list[Envelope]] | None = None,
                 reorder: bool = False) -> None:
        self.inner = inner
        self.drop, self.corrupt, self.delay, self.replay = list(drop), list(corrupt), list(delay), list(replay)
        self.inject = dict(inject or {})
        self.reorder = reorder
        self.held: list[Envelope] = []

    @property
    def log(self) -> list[Envelope]:
        return self.inner.log

    def post(self, env: Envelope) -> None:
        self.inner.post(env)

    def deliver(self) -> list[Envelope]:
        batch, self.held = self.held, []
        for env in self.inner.deliver():
            if _match(self.drop, env):
                continue
            if _match(self.delay, env):
                self.held.append(env)
                continue
            if _match(self.corrupt, env):
                last = bytearray(env.parts[-1])
                last[len(last) // 2] ^= 0x10
                env = replace(env, parts=env.parts[:-1] + (bytes(last),))
            batch.append(env)
            if _match(self.replay, env):
                batch.append(env)
        if batch:
            batch += self.inject.pop(batch[0].stage, [])
        return batch[::-1] if self.reorder else batch
