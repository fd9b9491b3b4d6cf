"""``python -m contextwright.cli``."""

from contextwright.cli import main

main()
