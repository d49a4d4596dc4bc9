"""``python -m sevro_core`` runs the ``sevro`` CLI."""

from sevro_core.entry import main

main()
