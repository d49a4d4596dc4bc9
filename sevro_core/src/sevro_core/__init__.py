"""sevro core: evaluate agent skills by running real agent CLIs on fresh fixtures."""

__version__ = "0.1.0"
