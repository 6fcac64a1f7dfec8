"""The chained model library: an audio front end and a classifier generated as two model libraries
(`NAME_fe`, `NAME_net`, templates/model.*.j2) in one folder, sharing one copy of the runtime, and the glue
`NAME.c`/`NAME.h` (templates/chain.*.j2) giving the pair the one-model API the benchmark firmware and a user's
application call: raw audio in, the classifier's scores out (edgec/quant/chained.py is its NumPy twin)."""
from __future__ import annotations

import hashlib
from pathlib import Path

from edgec import __version__
from edgec.codegen import cmodel
from edgec.ir import Graph
from edgec.plan.planner import Plan
from edgec.quant.artifact import graph_hash
from edgec.quant.chained import Chain, table
from edgec.templating import c_bytes, environment


def chain_hash(frontend: Graph, classifier: Graph, chain: Chain) -> str:
    """The chained model's hash: both graphs' and the chain's shape (the firmware says it in its hello)."""
    text = f"{graph_hash(frontend)} {graph_hash(classifier)} {chain}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def generate(frontend: tuple[Graph, Plan], classifier: tuple[Graph, Plan], chain: Chain, out_dir: Path,
             name: str) -> list[Path]:
    """Write the chained library into out_dir; returns the files written."""
    out_dir = Path(out_dir)
    written = cmodel.generate(*frontend, out_dir, f"{name}_fe")
    written += [p for p in cmodel.generate(*classifier, out_dir, f"{name}_net") if p not in written]
    ctx = dict(name=name, NAME=name.upper(), FE=f"{name}_fe".upper(), NET=f"{name}_net".upper(),
               version=__version__, samples=chain.samples, window=chain.window, hop=chain.hop, frames=chain.frames,
               features=chain.features, model_hash=chain_hash(frontend[0], classifier[0], chain),
               table=c_bytes(table(frontend[0], classifier[0], chain)))
    env = environment()
    for template, filename in (("chain.h.j2", f"{name}.h"), ("chain.c.j2", f"{name}.c")):
        path = out_dir / filename
        path.write_text(env.get_template(template).render(**ctx))
        written.append(path)
    return written
