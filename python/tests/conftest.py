"""pytest setup for the tessera package's tests: the package is found without installation
(python/ on sys.path, as PYTHONPATH=python does), and the executable is $TESSERA_BIN or this
checkout's build/tessera."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
