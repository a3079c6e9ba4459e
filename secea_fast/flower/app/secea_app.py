"""The Flower App of secea_fast's deployment demo: one SecEA or SecEmb round
(run config ``protocol``) on the built-in demo data, every party a Flower
node.  The code lives in ``secea_fast.flower.demo``; every node needs
``secea_fast[flower]`` installed."""
from secea_fast.flower.demo import make_example_apps

_apps = make_example_apps()
# one name per assignment: Flower checks the components statically
server_app = _apps[0]
client_app = _apps[1]
