"""The error every protocol session raises for a message it refuses."""
from __future__ import annotations

__all__ = ["ProtocolError"]


class ProtocolError(ValueError):
    """A message that does not parse, verify or fit the stage: unparsable,
    unauthenticated, of another round or stage, replayed or out of order.
    The message names what was wrong; the caller drops that message's
    sender, never the round."""
