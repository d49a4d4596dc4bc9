"""``sevro view``: a verified run as one self-contained, escaped, offline HTML page."""
