"""The installed packages, for what needs them: the launcher may start Python without `site`
(a hot command's start is a third faster), and every part that reaches beyond the standard
library (orjson, typer, redis-py) calls `full_start` first. Here, on the ground floor, so the
views and the commands call it without importing the package's entry."""

import sys


def full_start() -> None:
    """The packages a start with `site` finds (the installed ones, their .pth files)."""
    if sys.flags.no_site and "site" not in sys.modules:
        import site

        site.main()
