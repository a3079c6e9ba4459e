"""What every protocol shares: the versioned wire format (:mod:`.wire`),
input checks and entity ids (:mod:`.inputs`), the roster of long-term
identities (:mod:`.roster`), and the round result and block driver
(:mod:`.rounds`).  Nothing here knows a protocol."""
