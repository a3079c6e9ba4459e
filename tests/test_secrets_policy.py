"""One rule for every class holding a secret (``secea_fast._secrets``).

The classes are found, not listed: every module of the package is imported
and every class it defines is read (its attribute names, from its source)
and, for the classes a factory here builds, inspected (the values its
instances hold).  A class holds a secret if an attribute's name says so
(seed, secret, private key, key pair, path finals...) or an instance holds a
private-key object (X25519, Ed25519, Paillier factors) or another secret
holder; each such class must be a ``SecretHolder`` (and so in ``REGISTRY``)
or be audited below as not holding one, with the reason.  Then, for every
registered class: ``pickle.dumps``, ``copy.copy`` and ``copy.deepcopy``
raise TypeError, and inside the executor's transfer exactly the attributes
``TRANSFER`` declares cross (a class without an entry is refused there
too) and no private key does.  Controls: test-only classes that hold a
secret without the mixin are caught by both finders.
"""
import ast
import copy
import functools
import importlib
import inspect
import pickle
import pkgutil
import re

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

import secea_fast
from secea_fast import dpf, paillier, prg
from secea_fast._secrets import REGISTRY, TRANSFER, SecretHolder
from secea_fast.executor import Executor, party_transfer
from secea_fast.paillier._core import PrivateContext
from secea_fast import workloads
from secea_fast.protocols import osfl, secea, secea_phe, secemb
from secea_fast.protocols.common.roster import Identity, Roster, RosterEntry
from secea_fast.protocols.secea import session as secea_session
from secea_fast.protocols.secemb import session as secemb_session

# an attribute whose name says it holds a secret
SECRET_NAME = re.compile(r"seed|secret|private|(^|_)sk(_|$)|keypair|finals|(^|_)key$|_ctx$|identity",
                         re.I)
# values that are a secret wherever they sit
RAW_SECRETS = (X25519PrivateKey, Ed25519PrivateKey, PrivateContext)

# classes whose attribute names match but that hold no secret of their own (audited)
NOT_SECRETS = {
    "secea_fast.flower.admission.NodeIdentity":
        "pairs the roster with the node's Identity, which itself refuses pickling and copying",
    "secea_fast.flower.localfed.LocalFederation": "identity_files are paths to the nodes' files",
    "secea_fast.flower.secemb.SecEmbStageRunner": "server1_key is server 1's public X25519 key",
    "secea_fast.studies.graph.DeepWalkTask": "seed: the study's public RNG seed",
    "secea_fast.studies.kg.TransETask": "seed: the study's public RNG seed",
    "secea_fast.studies.kge.KGETask": "seed: the study's public RNG seed",
    "secea_fast.studies.lightgcn.LightGCNTask": "seed: the study's public RNG seed",
    "secea_fast.studies.tabular.PCATask": "seed: the study's public RNG seed",
    "secea_fast.studies.rectasks.SiloTask": "seed: the study's public RNG seed",
    "secea_fast.studies.autoencoder.AutoencoderTask": "seed: the study's public RNG seed",
    "secea_fast.studies.ldp.LDPAvg": "seed: the simulation's public seed of the local-DP noise",
}


def _qual(cls) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


# ------------------------------------------------------------------ the finders
# the top-level modules of the optional extras (pyproject.toml): a package module that needs
# one that is not installed is not read (test_every_module_is_read skips and names it)
EXTRAS = {"flwr", "galois", "numba", "ray", "matplotlib", "scipy", "psutil"}
UNREAD: dict = {}                      # module -> the missing extra's module


def _missing_extra(exc: BaseException):
    while exc is not None:
        if isinstance(exc, ModuleNotFoundError) and (exc.name or "").partition(".")[0] in EXTRAS:
            return exc.name
        exc = exc.__cause__ or exc.__context__
    return None


def package_classes() -> list[type]:
    """Every class defined in a module of the package (``__main__`` aside:
    importing it runs the command line)."""
    out = []
    for info in pkgutil.walk_packages(secea_fast.__path__, "secea_fast."):
        if info.name.endswith("__main__"):
            continue
        try:
            mod = importlib.import_module(info.name)
        except ImportError as exc:
            if _missing_extra(exc) is None:
                raise
            UNREAD[info.name] = _missing_extra(exc)
            continue
        for obj in vars(mod).values():
            if inspect.isclass(obj) and obj.__module__ == mod.__name__:
                out.append(obj)
    return sorted(set(out), key=_qual)


@functools.lru_cache(maxsize=None)
def _class_nodes(path: str) -> dict:
    """qualname -> ClassDef of every class in a source file (parsed once)."""
    out = {}

    def visit(body, prefix):
        for node in body:
            if isinstance(node, ast.ClassDef):
                out[prefix + node.name] = node
                visit(node.body, prefix + node.name + ".")
    with open(path) as f:
        visit(ast.parse(f.read()).body, "")
    return out


def attribute_names(cls) -> set[str]:
    """The attributes a class's own source assigns (``x.name = ...`` in its
    methods, ``__slots__``, class-level annotations such as dataclass
    fields)."""
    try:
        node = _class_nodes(inspect.getsourcefile(cls))[cls.__qualname__]
    except (OSError, TypeError, KeyError):
        return set()
    names = set()
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            names.add(stmt.target.id)
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__slots__"
                                                for t in stmt.targets):
            names.update(e.value for e in ast.walk(stmt.value)
                         if isinstance(e, ast.Constant) and isinstance(e.value, str))
    for sub in ast.walk(node):
        targets = sub.targets if isinstance(sub, ast.Assign) else \
            [sub.target] if isinstance(sub, (ast.AnnAssign, ast.AugAssign)) else []
        for t in targets:
            for e in ast.walk(t):
                if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name):
                    names.add(e.attr)
    return names


def secret_names(cls) -> list[str]:
    return sorted(n for n in attribute_names(cls) if SECRET_NAME.search(n) and not n.startswith("__"))


def _fields(obj):
    for name in getattr(obj, "__dict__", {}):
        yield name, obj.__dict__[name]
    for klass in type(obj).__mro__:
        for name in klass.__dict__.get("__slots__", ()):
            if hasattr(obj, name) and not name.startswith("__"):
                yield name, getattr(obj, name)


def _secret_values(value, depth=0):
    if isinstance(value, RAW_SECRETS) or isinstance(value, SecretHolder):
        yield type(value)
    elif depth < 3 and isinstance(value, (dict, list, tuple, set, frozenset)):
        items = value.values() if isinstance(value, dict) else value
        for i, x in enumerate(items):
            if i >= 64:
                break
            yield from _secret_values(x, depth + 1)


def held_secrets(obj) -> dict[str, list[type]]:
    """attribute -> the secret types it holds (directly or in a container)."""
    out = {}
    for name, value in _fields(obj):
        found = list(_secret_values(value))
        if found:
            out[name] = found
    return out


def unprotected(classes, instances=()) -> set[str]:
    """Classes holding a secret (by name or by value) that are not secret
    holders and not audited."""
    bad = {_qual(c) for c in classes if secret_names(c) and not issubclass(c, SecretHolder)}
    bad |= {_qual(type(o)) for o in instances if held_secrets(o) and not isinstance(o, SecretHolder)}
    return bad - set(NOT_SECRETS)


# ------------------------------------------------------------------ small factories
PHE = secea_phe.PHEParams(secea.SecEAParams(N=3, d=2), key_bits=512, insecure_keys=True)
SECEA = PHE.base
SECEMB = secemb.SecEmbParams(m=16, d=2, m_prime=2, n_users=2)
OSFL = osfl.OSFLParams(osfl.Assignment.cyclic(4, 2, 3), 1, 1, s=2, c=1,
                       p=2**31 - 1)


def _secea_clients(cls=secea.Client, params=SECEA):
    cs = [cls(n, params, [f"e{n}", "x"]) for n in range(3)]
    for c in cs:
        c.set_peer_keys([x.public_key for x in cs])
    if cls is secea_phe.Client:
        for c in cs:
            c.set_paillier_keys([x.paillier_public_key for x in cs])
    return cs


def _user():
    u = secemb.User(SECEMB, [1, 5])
    u.retrieval_request()
    return u


def _phe_server():
    s = secea_phe.Server(PHE)
    s.set_paillier_keys([c.paillier_public_key for c in _secea_clients(secea_phe.Client, PHE)])
    return s


FACTORIES = {
    "secea_fast.prg.Prg": lambda: prg.Prg(bytes(16), "test"),
    "secea_fast.prg.X25519KeyPair": prg.X25519KeyPair,
    "secea_fast.paillier._keys.PrivateKey": lambda: paillier.keygen(256, insecure=True)[1],
    "secea_fast.dpf.path.PathSecret": lambda: dpf.PathSecret(8, bytes(range(32))),
    "secea_fast.dpf.path.PathSecretBatch": lambda: dpf.PathSecretBatch(8, np.ones((3, 32), np.uint8)),
    "secea_fast.protocols.common.roster.Identity": lambda: Identity("client-0"),
    "secea_fast.protocols.secea.parties.Client": lambda: _secea_clients()[0],
    "secea_fast.protocols.secea.parties.Server": lambda: secea.Server(SECEA),
    "secea_fast.protocols.secea_phe.parties.Client": lambda: _secea_clients(secea_phe.Client, PHE)[0],
    "secea_fast.protocols.secea_phe.parties.Server": _phe_server,
    "secea_fast.protocols.secea_phe.layer.PaillierLayer":
        lambda: secea_phe.PaillierLayer(512, insecure_keys=True, keypair=paillier.keygen(512, insecure=True)),
    "secea_fast.protocols.secemb.parties.User": _user,
    "secea_fast.protocols.secemb.parties.Server":
        lambda: secemb.Server(1, SECEMB, np.zeros((16, 2), np.uint64)),
    "secea_fast.protocols.osfl.parties.Client":
        lambda: osfl.Client(0, OSFL, np.zeros((2, 2, 1), np.int64), shared_seed=bytes(16),
                            session=b"s"),
    "secea_fast.protocols.osfl.parties.Federator": lambda: osfl.Federator(OSFL, 0),
    "secea_fast.protocols.osfl.approaches.SchemeClient": lambda: _scheme_client(),
    "secea_fast.protocols.osfl.session.ClientSession":
        lambda: osfl.ClientSession(_scheme_client(), round_id=b"r" * 16),
    "secea_fast.protocols.osfl.session._Session":
        lambda: osfl.FederatorSession(osfl.Approach2(5, 1, 4, 1, 1, 1, K=1, p=101).federator(0),
                                      round_id=b"r" * 16),
    "secea_fast.protocols.osfl.session.FederatorSession":
        lambda: osfl.FederatorSession(osfl.Approach2(5, 1, 4, 1, 1, 1, K=1, p=101).federator(0),
                                      round_id=b"r" * 16),
    "secea_fast.protocols.secea.session.ClientSession":
        lambda: secea_session.ClientSession(SECEA_ROSTER[0], SECEA_ROSTER[1]["client-0"], {"e0": [0.5, 0.5]}),
    "secea_fast.protocols.secemb.session.UserSession":
        lambda: secemb_session.UserSession(SECEMB_ROSTER[0], SECEMB_ROSTER[1]["user-0"], run=1),
    "secea_fast.protocols.secemb.session.Server1Session":
        lambda: secemb_session.Server1Session(SECEMB_ROSTER[0], SECEMB_ROSTER[1]["server1"], run=1),
}
SECEA_ROSTER = Roster.make([(f"client-{i}", "client") for i in range(3)])
SECEMB_ROSTER = Roster.make([("server1", "server1"), ("user-0", "user"), ("user-1", "user")])


def _scheme_client():
    a2 = osfl.Approach2(5, 1, 4, 1, 1, 1, K=1, p=101)
    return a2.client(0, {t: np.zeros((4, 1), np.int64) for t in a2.objectives(0)})


def _public_objects():
    """Objects of classes that hold no secret: what parties send, public keys, parameters."""
    pk, _ = paillier.keygen(256, insecure=True)
    u = secemb.User(SECEMB, [1, 5])
    r0, _ = u.retrieval_request()
    ident = Identity("server")
    return [pk, r0, r0.keys, SECEA, PHE, SECEMB, OSFL,
            secea.Message("psu", 1, secea.Message.SERVER, 0, 0, np.zeros((1, 6), np.uint64)),
            osfl.Federator(OSFL, 0).queries()[0],
            Roster([RosterEntry("server", "server", ident.public_bytes)])]


PACKAGE = package_classes()
HOLDERS = sorted((c for c in REGISTRY if c.__module__.startswith("secea_fast.")), key=_qual)


# ------------------------------------------------------------------ the rule
def test_every_class_holding_a_secret_is_a_secret_holder():
    instances = [FACTORIES[_qual(c)]() for c in HOLDERS] + _public_objects()
    assert unprotected(PACKAGE, instances) == set()
    # the audit list names real classes the finder flags (no stale entries)
    flagged = {_qual(c) for c in PACKAGE if secret_names(c) and not issubclass(c, SecretHolder)}
    audited = {n for n in NOT_SECRETS if not any(n.startswith(m + ".") for m in UNREAD)}
    assert audited <= flagged, sorted(audited - flagged)
    # the parties and secret types this rule was written for are all found
    expected = {"Prg", "X25519KeyPair", "PrivateKey", "PathSecret", "PathSecretBatch", "Identity",
                "secea.parties.Client", "secea.parties.Server", "secea_phe.parties.Client",
                "secea_phe.parties.Server", "secemb.parties.User", "secemb.parties.Server",
                "osfl.parties.Client", "osfl.parties.Federator"}
    names = {_qual(c) for c in HOLDERS}
    assert all(any(n.endswith("." + e) for n in names) for e in expected)


def test_every_module_is_read():
    if UNREAD:
        pytest.skip("not read, an optional extra is missing: "
                    + ", ".join(f"{m} ({x})" for m, x in sorted(UNREAD.items())))


def test_every_secret_holder_has_a_factory_here():
    """A new secret holder gets the checks below (add its factory)."""
    assert {_qual(c) for c in HOLDERS} == set(FACTORIES)


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_not_pickled_not_copied(name):
    obj = FACTORIES[name]()
    assert isinstance(obj, SecretHolder)
    for f in (pickle.dumps, copy.copy, copy.deepcopy):
        with pytest.raises(TypeError, match="holds a secret"):
            f(obj)
    with pytest.raises(TypeError, match="holds a secret"):
        obj.__reduce__()


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_only_declared_attributes_cross_to_workers(name):
    obj = FACTORIES[name]()
    if name not in TRANSFER:
        with party_transfer(), pytest.raises(TypeError, match="declares nothing"):
            pickle.dumps(obj)
        return
    with party_transfer():
        twin = pickle.loads(pickle.dumps(obj))
    keep = set(TRANSFER[name])
    assert set(vars(twin)) == set(vars(obj))
    for attr, value in vars(twin).items():
        if attr in keep:
            assert value is not None or vars(obj)[attr] is None, attr
        else:
            assert value is None, f"{name}.{attr} crossed without being declared"
    # no long-term private key crosses: no X25519 / Ed25519 / Paillier key
    assert held_secrets(twin) == {}, held_secrets(twin)
    with pytest.raises(TypeError):          # and the guard is back after the block
        pickle.dumps(obj)


def test_declarations_name_real_attributes():
    """Each TRANSFER entry names a registered class and attributes its
    instances have (a renamed attribute would otherwise stop crossing)."""
    for name, attrs in TRANSFER.items():
        assert name in FACTORIES, name
        obj = FACTORIES[name]()
        assert set(attrs) <= set(vars(obj)), (name, set(attrs) - set(vars(obj)))


# ------------------------------------------------------------------ controls: the finders have power
class _LeakySeed:
    """Holds a seed without the mixin: the name finder catches it."""

    def __init__(self):
        self._mask_seed = bytes(32)


class _QuietKey:
    """Holds an X25519 private key under a bland name: the value finder
    catches it."""

    def __init__(self):
        self._k = X25519PrivateKey.generate()


class _HidesASecretHolder:
    def __init__(self):
        self.state = {"paths": dpf.PathSecret(8, bytes(32))}


class _Declared(SecretHolder):
    def __init__(self):
        self._mask_seed = bytes(32)


def test_control_finders_catch_a_secret_without_the_mixin():
    assert unprotected([_LeakySeed]) == {_qual(_LeakySeed)}
    assert unprotected([], [_QuietKey()]) == {_qual(_QuietKey)}
    assert unprotected([_QuietKey]) == set()            # the name alone does not say it
    assert unprotected([], [_HidesASecretHolder()]) == {_qual(_HidesASecretHolder)}
    assert pickle.loads(pickle.dumps(_LeakySeed()))._mask_seed == bytes(32)   # what the rule stops
    # with the mixin: not flagged, not pickled, and not transferred without a declaration
    assert unprotected([_Declared], [_Declared()]) == set()
    with pytest.raises(TypeError, match="holds a secret"):
        pickle.dumps(_Declared())
    with party_transfer(), pytest.raises(TypeError, match="declares nothing"):
        pickle.dumps(_Declared())


# ------------------------------------------------------------------ SecEA-PHE: no key regenerated, none shipped
def test_phe_import_state_keeps_the_paillier_key():
    """Restoring a SecEA-PHE client gives it back its own Paillier key (it
    used to get a fresh one, silently: responses encrypted to the old key
    could no longer be decrypted)."""
    cs = _secea_clients(secea_phe.Client, PHE)
    for c in (secea_phe.Client(0, PHE, ["e0", "x"]), cs[0]):
        st = c.export_state()
        again = secea_phe.Client.import_state(PHE, ["e0", "x"], st)
        assert again.paillier_public_key == c.paillier_public_key and again.can_decrypt
        assert again.public_key == c.public_key and again.export_state() == st
    pk = cs[0].paillier_public_key
    assert again._sk.decrypt(pk.encrypt([123])) == [123]
    # state without a Paillier key (a SecEA client's) is refused, not completed with a new key
    plain = secea.Client(0, SECEA, ["e0", "x"]).export_state()
    with pytest.raises(ValueError, match="SecEA-PHE client state"):
        secea_phe.Client.import_state(PHE, ["e0", "x"], plain)
    with pytest.raises(ValueError):
        secea_phe.Client.import_state(PHE, ["e0", "x"], st[:-5])
    with pytest.raises(ValueError, match="different entity set"):
        secea_phe.Client.import_state(PHE, ["e9", "x"], st)
    with pytest.raises(TypeError, match="PHEParams"):
        secea_phe.Client.import_state(SECEA, ["e0", "x"], st)


class _SerialisingExecutor(Executor):
    """Runs shards inline on a copy of the state made as a serialising
    executor (Ray) makes it: pickled inside the transfer."""

    name = "serialising"

    def _run(self, fn, jobs, state, collect):
        with party_transfer():
            copy_ = pickle.loads(pickle.dumps(state))
        for c in copy_.get("clients", []) if isinstance(copy_, dict) else []:
            assert not getattr(c, "can_decrypt", False)
        for job in jobs:
            collect(fn(copy_, job))


def test_phe_round_decrypts_in_the_caller_when_workers_have_no_key():
    local = workloads.workload("tiny", N=3, d=2, seed=1)
    local = [dict(list(x.items())[:8]) for x in local]
    keys = [paillier.keygen(512, insecure=True) for _ in range(3)]
    ref = secea_phe.run_round(local, key_bits=512, insecure_keys=True, keys=keys, verify=True)
    res = secea_phe.run_round(local, key_bits=512, insecure_keys=True, keys=keys, verify=True,
                              executor=_SerialisingExecutor())
    for a, b in zip(ref.numerators, res.numerators):
        assert np.array_equal(a, b)
    assert res.seconds["decrypt"] > 0 and res.seconds["decode"] > 0
    assert res.ciphertexts == ref.ciphertexts
