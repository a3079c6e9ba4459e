"""What every protocol shares and users see: the versioned wire format
(:mod:`.wire`), the roster of long-term identities (:mod:`.roster`), the
round result and the progress hook of a round (:mod:`.rounds`).  Nothing
here knows a protocol; the helpers the rounds share (input checks, the
block driver) are the private modules ``protocols._inputs`` and
``protocols._blocks``."""
