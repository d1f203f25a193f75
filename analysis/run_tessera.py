#!/usr/bin/python3
"""Running the tessera executable and the plot scripts from the table scripts.

Split from style.py (issue 32 item 6), which keeps the figures' look.
"""
import os
import subprocess
import sys

from report_io import InputError


def run_checked(cmd, binary):
    """Runs a tessera command line; a failure is an input error naming the command and its last line."""
    try:
        done = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise InputError(f"{binary}: cannot run: {e.strerror}") from e
    if done.returncode != 0:
        msg = (done.stderr or done.stdout).strip().splitlines()
        raise InputError(f"{' '.join(cmd)}: exit {done.returncode}: {msg[-1] if msg else ''}")
    return done


def run_plots(calls):
    """Runs each (plot module, argv) through its main() with its stdout silenced, and names
    on stderr the figure it drew (the table scripts' --figures)."""
    with open(os.devnull, "w") as devnull:
        for module, argv in calls:
            saved, sys.stdout = sys.stdout, devnull
            try:
                module.main(argv)
            finally:
                sys.stdout = saved
            print(f"figures: {module.__name__} -> {argv[-1]}.pdf/.png", file=sys.stderr)
