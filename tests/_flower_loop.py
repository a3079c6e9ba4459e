"""A loopback in place of Flower's transport for the stage runners of
secea_fast.flower: each node's handler is called in this process with the
(cfg, blobs) that Flower would carry, round-tripped through Flower's own
records.  It records what passes (the relay's whole view) and can make a
node stop answering from a given stage on."""
import time

from secea_fast.flower.records import StageResult, pack, unpack


class Loopback:
    """``handlers[node](cfg, blobs, state) -> (reply_cfg, reply_blobs,
    new_state, result)``; ``die[node] = (stage, step)`` makes the node fail
    from that stage on (``step`` None: any step)."""

    def __init__(self, handlers, die=None, catch=False):
        self.handlers = dict(handlers)
        self.catch = catch      # a handler's ValueError is an error reply, as on Flower
        self.state = {}
        self.results = {}
        self.die = dict(die or {})
        self.dead = set()
        self.log = []
        self.errors = []        # (node, stage, error) of the handlers' refusals
        self.view = []          # (direction, node, cfg, blobs): everything the relay sees

    @property
    def nodes(self):
        return list(self.handlers)

    def __call__(self, outbox, work=None):
        res = StageResult()
        t0 = time.perf_counter()
        if work is not None:
            work()
        for node, (cfg, blobs) in outbox.items():
            cfg, blobs = unpack(pack(cfg, blobs))
            self.view.append(("down", node, cfg, blobs))
            res.bytes_down += sum(map(len, blobs))
            when = self.die.get(node)
            if node in self.dead or (when and when[0] == cfg["stage"]
                                     and when[1] in (None, cfg.get("step"))):
                self.dead.add(node)
                res.failed[node] = "killed"
                continue
            try:
                rcfg, out, self.state[node], result = self.handlers[node](cfg, blobs, self.state.get(node))
            except ValueError as exc:
                if not self.catch:
                    raise
                res.failed[node] = f"error reply: {exc}"
                self.errors.append((node, cfg.get("stage"), str(exc)))
                continue
            self.log.append((node, cfg["stage"], cfg.get("step"), cfg.get("psu"), cfg["attempt"]
                             if "attempt" in cfg else 0))
            if result is not None:
                self.results[node] = result
            rcfg, out = unpack(pack(rcfg, out))
            self.view.append(("up", node, rcfg, out))
            res.bytes_up += sum(map(len, out))
            res.replies[node] = (rcfg, out)
        res.wall = time.perf_counter() - t0
        return res
