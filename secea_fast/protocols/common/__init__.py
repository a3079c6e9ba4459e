"""What every protocol shares: the versioned wire format (:mod:`.wire`),
input checks and entity ids (:mod:`.inputs`), the round result and
block driver (:mod:`.rounds`), and the option handling of the
``secea-fast run`` jobs (:mod:`.jobs`).  Nothing here knows a protocol."""
