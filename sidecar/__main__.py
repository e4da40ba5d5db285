"""`python -m sidecar`: the same dispatch as the `sidecar` launcher (bin/sidecar)."""
import sys

from sidecar import launch

launch(sys.argv)
