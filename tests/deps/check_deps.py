#!/usr/bin/python3
"""Dependency guard (DESIGN.md §2): includes and library links point down the pipeline.

Rules:
  * models/ includes only models/ and sim/common/, and its libraries link no sim/ library
    but tessera_common.
  * each sim/ stage includes only the stages before it (STAGES below).
Edges that break a rule today are listed in allowed_edges.txt. That list may only shrink:
an edge found in the code and not listed fails, and so does a listed edge the code no
longer has (delete the line when you remove the edge).

Usage: check_deps.py SOURCE_DIR
"""
import pathlib
import re
import sys

# What each sim/ stage may include, besides itself and sim/common. Upstream stages only:
# config+workload -> graph -> precision -> compiler -> engine -> report; functional mode is
# a side branch after precision; cli (and the run pipeline) wire everything; sweep spawns
# runs, so it knows configs and graphs but not how a run is computed.
MODELS = {"models"}  # any models/ area
STAGES = {
    "sim/common": set(),
    "sim/config": MODELS,  # aggregates the models' parameters
    "sim/graph": set(),
    "sim/precision": {"sim/config", "sim/graph"},
    "sim/functional": {"sim/config", "sim/graph", "sim/precision"} | MODELS,
    "sim/compiler": {"sim/config", "sim/graph", "sim/precision"} | MODELS,
    "sim/engine": {"sim/config", "sim/compiler"} | MODELS,
    # energy, power and area from counts and the config's coefficients: no SystemC stage. A
    # vector function's energy class is its op's (the op registry, sim/graph/ops): upstream.
    "sim/energy": {"sim/config", "sim/graph"} | MODELS,
    "sim/report": {"sim/config", "sim/graph", "sim/precision", "sim/compiler", "sim/engine", "sim/functional",
                   "sim/energy"} | MODELS,
    "sim/sweep": {"sim/config", "sim/graph"},
    "sim/run": {"sim/config", "sim/graph", "sim/precision", "sim/functional", "sim/compiler", "sim/engine",
                "sim/energy", "sim/report"} | MODELS,
    # serving: a queueing simulation in plain C++ whose service times come from `tessera run`
    # children started through the sweep's runner; it never includes a SystemC stage.
    # LLM serving targets (sim/serve/llm) cost GPUs with the baseline model and TP collectives on the
    # chip-link model: plain C++ models, no SystemC.
    "sim/serve": {"sim/config", "sim/graph", "sim/sweep"} | MODELS,
    "sim/cli": {"sim/config", "sim/graph", "sim/precision", "sim/functional", "sim/compiler", "sim/engine",
                "sim/energy", "sim/report", "sim/run", "sim/sweep", "sim/serve"} | MODELS,
}
# Libraries of sim/ stages that models/ must not link (tessera_common is allowed).
SIM_LIBRARIES = {"tessera_config", "tessera_graph", "tessera_precision", "tessera_functional", "tessera_compiler",
                 "tessera_engine", "tessera_energy", "tessera_report", "tessera_sweep", "tessera_run", "tessera_serve"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"((?:sim|models)/[^"]+)"', re.M)
LINK = re.compile(r"target_link_libraries\s*\(([^)]*)\)", re.S)


def area(path: str) -> str:
    """sim/graph/ops/x.h -> sim/graph; models/units/units.h -> models."""
    parts = path.split("/")
    return "models" if parts[0] == "models" else "/".join(parts[:2])


def violations(root: pathlib.Path):
    found, problems = set(), []
    for top in ("sim", "models"):
        for f in sorted((root / top).rglob("*")):
            if f.suffix not in (".h", ".cpp") or not f.is_file():
                continue
            rel = f.relative_to(root).as_posix()
            src = area(rel)
            allowed = {"models", "sim/common"} if src == "models" else STAGES.get(src)
            if allowed is None:
                problems.append(f"{rel}: stage '{src}' is not in check_deps.py's STAGES; add it with what it may include")
                continue
            for inc in INCLUDE.findall(f.read_text(encoding="utf-8", errors="replace")):
                dst = area(inc)
                if dst == src or dst == "sim/common" or dst in allowed:
                    continue
                found.add(f"{rel} -> {inc}")
        for f in sorted((root / "models").rglob("CMakeLists.txt")):
            rel = f.relative_to(root).as_posix()
            for args in LINK.findall(f.read_text(encoding="utf-8")):
                for lib in args.split():
                    if lib in SIM_LIBRARIES:
                        found.add(f"{rel} -> {lib}")
    return found, problems


def main() -> int:
    root = pathlib.Path(sys.argv[1]).resolve()
    listed_file = pathlib.Path(__file__).with_name("allowed_edges.txt")
    listed = {l.strip() for l in listed_file.read_text(encoding="utf-8").splitlines()
              if l.strip() and not l.lstrip().startswith("#")}
    found, problems = violations(root)
    for edge in sorted(found - listed):
        problems.append(f"{edge}: against the dependency direction (DESIGN.md §2); not in tests/deps/allowed_edges.txt")
    for edge in sorted(listed - found):
        problems.append(f"{edge}: listed in tests/deps/allowed_edges.txt but gone from the code; delete the line")
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"dependency guard: ok ({len(found)} allow-listed edges left)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
