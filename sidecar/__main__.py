"""`python -m sidecar`: the same dispatch as the `sidecar` launcher."""
import sys

if len(sys.argv) > 1 and sys.argv[1] == "emit":
    from sidecar.emit import main as emit_main

    sys.exit(emit_main())
from sidecar.cli.main import main

sys.exit(main())
