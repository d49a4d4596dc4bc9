"""``python -m sevro_core`` runs the ``sevro`` CLI."""

from sevro_core.cli import main

main()
