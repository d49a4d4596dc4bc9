"""Judges: what the run's model judges are asked and how their replies count. The blinded
pairwise comparator of an experiment's paired trials lives here (``comparator``), with the
bounded subjects it is shown (``subjects``)."""
