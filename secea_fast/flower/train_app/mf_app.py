"""The Flower App of secea_fast's federated recommendation example: run
config ``setting`` (cross-silo / cross-device) and ``aggregation`` (secea /
plain) choose the run.  The code lives in ``secea_fast.flower.train``; every
node needs ``secea_fast[flower]`` installed."""
from secea_fast.flower.train import make_train_apps

_apps = make_train_apps()
# one name per assignment: Flower checks the components statically
server_app = _apps[0]
client_app = _apps[1]
