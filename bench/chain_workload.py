#!/usr/bin/python3
"""Writes a workload of N relu (or, with --op fc, 16-unit fc) layers in a chain on a
16-element input (the D6 scaling case of docs/reliability.md) to stdout or to the file
named by -o.

  /usr/bin/python3 bench/chain_workload.py 5000 -o /tmp/chain5000.yaml
  /usr/bin/python3 bench/chain_workload.py 5000 --op fc -o /tmp/fc5000.yaml
  /usr/bin/time -f '%M KB %e s' build/tessera compile -a configs/tpu-v1.yaml -w /tmp/chain5000.yaml -o /tmp/chain.txt
"""
import argparse
import sys


def chain_yaml(layers: int, op: str = "relu") -> str:
    lines = [f"name: {'chain' if op == 'relu' else op + '_chain'}{layers}", "batch: 1", "dtype: int8", "inputs:", "  - {name: x, shape: [16]}", "layers:"]
    prev = "x"
    for i in range(layers):
        if op == "fc":
            lines.append(f"  - {{name: f{i}, op: fc, units: 16, activation: relu, input: {prev}}}")
            prev = f"f{i}"
        else:
            lines.append(f"  - {{name: r{i}, op: relu, input: {prev}}}")
            prev = f"r{i}"
    lines.append(f"outputs: [{prev}]")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("layers", type=int, help="number of relu layers (at least 1)")
    parser.add_argument("--op", choices=("relu", "fc"), default="relu",
                        help="layer kind: relu (vector unit only) or fc (matrix unit, then activate)")
    parser.add_argument("-o", "--out", help="output file (default: stdout)")
    args = parser.parse_args()
    if args.layers < 1:
        parser.error("layers must be at least 1")
    text = chain_yaml(args.layers, args.op)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
