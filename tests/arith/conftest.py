"""Make the shared helpers (arith_helpers.py) importable whatever pytest's
import mode resolves this directory to."""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
